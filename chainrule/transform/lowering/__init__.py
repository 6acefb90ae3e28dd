"""chainrule.transform.lowering."""
