"""The plan phase: from a request (`run_setup.py`: the repository, revisions, providers and
options a front end decided once) to the runs a change needs — the agents a change touches
(`changes.py`, `fingerprint.py`, `reach.py`), each side's definitions (`prepare.py`), the
(Eval, fixture, rep, side) runs and their playgrounds (`plan.py`, `playgrounds.py`), what
they cost and what a budget keeps (`estimate.py`), what the result cache already answers
(`result_cache.py`), what is refused before a model call (`preflight/`), and the prepared
run every later step reads (`run_context.py`)."""
