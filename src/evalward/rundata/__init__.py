"""A run's data, below every stage: the trace of an agent's run, fixture and Eval results, the
spool that keeps traces on disk, what a run spent, the two sides a change is measured on,
and the cache vocabulary."""
