"""The tools a declarative agent calls: evalward's own (mocked, shadowed, commands) and an
MCP server's, reached through the SDK over bounded transports."""
