"""A run's lifecycle, the same for both front doors: the session that runs the phases
(plan/, execute/, verdict/) for a request and keeps what finished, the pipeline that wires
them, interrupts, and shards (running a part, signing it, merging the parts)."""
