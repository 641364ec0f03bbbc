"""evalward: a CI gate for AI agents."""

__version__ = "0.1.0"
