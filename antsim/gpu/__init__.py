"""gpu stage."""
