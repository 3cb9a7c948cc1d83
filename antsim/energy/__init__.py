"""energy stage."""
