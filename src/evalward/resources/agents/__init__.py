"""The Agent kind: a declarative agent's models, prompt and tools, its MCP servers, and a
bring-your-own agent's `runtime`."""
