"""Running agents, one subsystem a package: `agents/` turns one fixture input into one
Trace (a kind of agent a module, `agents/kinds/`); `isolation/` keeps each run's programs in
their sandbox and the two sides apart; `proxy/` serves the agents' own model calls with
evalward's keys; `tools/` the tools and MCP servers a declarative agent calls;
`telemetry/` reads what an agent reports (its events, OpenTelemetry spans, SDK messages);
`environments/` installs and seals an agent's packages; `playground/` the world a run acts
on."""
