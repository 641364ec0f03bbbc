"""Which hunk of a pull request caused a regression, found by running variants of the head
with hunks taken back to the base, never by reading the diff."""
