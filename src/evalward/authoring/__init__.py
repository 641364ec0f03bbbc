"""What helps a team write its definitions, apart from the gate's path: a recorded trace made
a fixture (`evalward promote`), and the trials `validate --playgrounds` makes of each
playground and code scorer before any run relies on them."""
