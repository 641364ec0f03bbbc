"""The kinds of agent runtime: one module each, the protocol they share (base.py), and the
registry that finds an agent's (registry.py)."""
