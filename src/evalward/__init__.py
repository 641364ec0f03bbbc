"""evalward: a CI gate for AI agents.

docs/architecture.md maps each stage of the pipeline to its module, states the layers and
the import rule, and follows one fixture from its YAML to the pull-request comment. Where the
code cites "seed 001" to "seed 004", it means the source documents listed there (Verial's
benchmark runs, an article on agent evals, Pai's Eval resources, AgentV's eval files).
"""

__version__ = "0.1.0"
