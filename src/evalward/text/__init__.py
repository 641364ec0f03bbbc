"""How evalward writes text and numbers: escaping for markdown and the terminal, compact JSON,
and the digits of every score, threshold and change."""
