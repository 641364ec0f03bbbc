"""Reading files that an install, a cache restore or an agent may have left: never following a
link, never waiting on a FIFO, never past a size bound; and rewriting a user's file whole or
not at all (`rewrite`)."""
