"""A command agent whose refund tool writes the playground's database as its fixture says:
in WAL mode, closed (`wal`) or left open (`wal-open`), with a journal kept after its commit
(`persist`), or stopped mid-transaction with its pages already written to the file
(`stopped`)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

STOPPED_TOOL = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size = 1")  # every page it writes spills to the file at once
db.execute("BEGIN")
db.execute("INSERT INTO refunds (order_id) VALUES ('A-1')")
db.execute("UPDATE orders SET status = 'lost'")
os._exit(1)  # killed before COMMIT, as a tool past its timeout is
"""

request = json.load(sys.stdin)
fixture = request["fixture"]
database = os.environ["EVALWARD_SQLITE_PATH"]
if fixture == "stopped":
    subprocess.run([sys.executable, "-c", STOPPED_TOOL, database], check=False)
else:
    db = sqlite3.connect(database)
    if fixture.startswith("wal"):
        db.execute("PRAGMA journal_mode = WAL")
    elif fixture == "persist":  # the journal stays, its header zeroed once committed
        db.execute("PRAGMA journal_mode = PERSIST")
    db.execute("INSERT INTO refunds (order_id) VALUES ('A-1')")
    db.commit()
    if fixture == "wal-open":  # ended with its connection open: the log is not checkpointed
        print(json.dumps({"type": "final", "content": "refunded"}), flush=True)
        os._exit(0)
    db.close()
print(json.dumps({"type": "final", "content": "refunded"}))
