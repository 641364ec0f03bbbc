"""What the definitions and the repository beside them make impossible, refused before a
run's first model call and by `evalward validate`: unknown providers, unshadowed tools,
programs on no PATH, seeds and scorers that do not load, state paths no seed has."""
