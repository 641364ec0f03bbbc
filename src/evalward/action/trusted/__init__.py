"""What the action may trust before anything runs: what in the checkout the pull request
cannot have written, and which result and response caches may be read (the workspace's, or
the artifact a push run on the base branch uploaded)."""
