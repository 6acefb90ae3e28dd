"""chainrule.backend.array_api."""
