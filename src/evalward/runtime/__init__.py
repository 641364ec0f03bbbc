"""Agent runners: each turns one fixture input into one Trace."""
