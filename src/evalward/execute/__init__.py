"""The execute phase: the planned runs carried out with bounded concurrency, the base's
first and each side's in its turn (`execute.py`), in rounds while an adaptive Eval's outcome
is open (`rounds.py`), the pairwise judge's pairs between them (`pairs.py`,
`base_judging.py`), each fixture scored as its run ends (`plan_scores.py`)."""
