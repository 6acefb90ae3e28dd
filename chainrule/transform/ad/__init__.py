"""chainrule.transform.ad."""
