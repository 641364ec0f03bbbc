"""An agent's packages: the environment installed once per definition, its inputs and
limits, the installers' watch, and the seal that makes it read-only."""
