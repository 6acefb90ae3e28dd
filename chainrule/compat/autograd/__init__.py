"""chainrule.compat.autograd."""
