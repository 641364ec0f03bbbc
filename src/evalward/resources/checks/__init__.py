"""What a fixture checks: the assertion types, state criteria, `regex` patterns and code
scorers (their source inline or in a file of the fixture's commit)."""
