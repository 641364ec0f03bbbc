"""A run's lifecycle, the same for both front doors: the session, the pipeline that wires the
stages, executing a plan, interrupts, the run's set-up, and shards (running a part, signing
it, merging the parts)."""
