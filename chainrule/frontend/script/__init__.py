"""chainrule.frontend.script.functions."""
