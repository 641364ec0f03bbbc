"""An agent's run: its resolved definition and inputs, the runner that turns one fixture input
into one Trace, a process started in the sandbox, and the conversations held turn by turn
(the kinds of agent, one module each, in `kinds/`)."""
