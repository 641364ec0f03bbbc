"""Assertions, fixture scores and Eval scores, as seed 003 defines them."""
