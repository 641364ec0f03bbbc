"""AgentV eval files (seed 004 and the `agentv` npm package) read as EvalFixtures."""
