"""The GitHub Action: the GITHUB_* environment and INPUT_* settings in; a comment, a check run,
files, outputs and an exit code out. `run.main` builds the real clients; every other function
takes what it talks to as a parameter."""
