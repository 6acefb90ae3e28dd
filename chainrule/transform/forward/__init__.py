"""chainrule.transform.forward."""
