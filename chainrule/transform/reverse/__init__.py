"""chainrule.transform.reverse."""
