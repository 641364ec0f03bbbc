"""Code scorers and output transforms: run as a program from the checkout is, with their own
packages, and what their answer means."""
