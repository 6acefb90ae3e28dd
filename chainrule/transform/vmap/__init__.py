"""chainrule.transform.vmap.vmap."""
