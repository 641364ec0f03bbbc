"""A repository's definitions, read in every format evalward reads (`loader`): its own resource
kinds (`resources/`) and AgentV's eval files (`importers/agentv/convert.py`)."""
