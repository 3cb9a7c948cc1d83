"""dataflow stage."""
