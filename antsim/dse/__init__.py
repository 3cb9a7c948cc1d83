"""dse stage."""
