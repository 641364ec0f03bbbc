"""evalward: a CI gate for AI agents.

docs/architecture.md maps each stage of the pipeline to its module, states the layers and
the import rule, and follows one fixture from its YAML to the pull-request comment.

Comments in the code cite four source documents by number, as "seed 00N"; user-facing text
never does, it says what a thing is instead:

- seed 001: Verial's documentation of benchmark runs: criterion scores, task scores, axes
  and verdicts (`scoring/scores.py`);
- seed 002: an article on evaluating agents: experiment history and the deltas between runs
  (`history.py`, `trend.py`);
- seed 003: Pai's `Eval`, `EvalFixture` and `JudgeCalibration` resources (`pai.io/v1`),
  whose field names and meanings evalward keeps (`resources/`, `scoring/`);
- seed 004: the AgentV eval-case file format (`importers/agentv/convert.py`).
"""

__version__ = "0.1.0"
