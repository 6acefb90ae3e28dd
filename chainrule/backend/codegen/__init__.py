"""chainrule.backend.codegen.generate."""
