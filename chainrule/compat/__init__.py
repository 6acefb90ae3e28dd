"""chainrule.compat."""
