"""sparsity stage."""
