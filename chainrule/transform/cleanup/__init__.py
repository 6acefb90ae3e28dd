"""chainrule.transform.cleanup."""
