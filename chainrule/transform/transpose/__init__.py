"""chainrule.transform.transpose.transpose."""
