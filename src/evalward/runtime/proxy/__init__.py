"""The model proxy: agents' own model calls served with evalward's keys, metered, cached and
read into the run's trace (`wire/`: the APIs it speaks); calls past it stopped and named."""
