"""What keeps a run's programs in their place: the sandbox they start in, the agent users,
the sides kept apart and their turns, the message queues ended with a run, and what agent
users leave in shared folders (the processes it ends are found by `runtime/processes`)."""
