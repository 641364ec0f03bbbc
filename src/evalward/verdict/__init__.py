"""The verdict phase: base against head (`compare.py`, `stats.py`), the sequential and
preference tests (`sequential.py`, `adaptive.py`, `preference.py`, `pairwise_verdict.py`),
each Eval's verdict (`settle.py`) and the gate's decision with why it blocks (`gate.py`,
`blocked.py`)."""
