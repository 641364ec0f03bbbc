"""Playgrounds at run time: one module per kind of part (`files.py`, `sqlite.py`,
`service.py`), what they all answer (`base.py`), the registry of them, and a run in its
playground (`provision.py`, `state.py`, `run.py`)."""
