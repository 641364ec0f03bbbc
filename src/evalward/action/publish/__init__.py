"""What the action leaves where people look: the files, the job summary and outputs, the
check run's annotations, and findings as review comments on the changed lines."""
