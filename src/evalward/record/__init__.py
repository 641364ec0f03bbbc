"""The run record: what a run of evalward leaves for machines — results.json, and the part
each shard job leaves for `merge` — as one versioned schema (`schema`), with one writer
(`write`, streaming: 20,000 traces never exist whole in memory) and one reader (`read`).

Everything that reads a run back (`evalward diff`, `evalward merge`, the action's merge
step, a later step of the workflow through its schema, docs/results.schema.json) reads it
through these models, so a field cannot be written and then dropped on the way back in.
"""
