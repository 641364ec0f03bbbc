"""The refund desk's tools, as a team writes them against its own database: `lookup` and
`refund`, the call's arguments as JSON on stdin. The database is DATABASE_URL's; when a CRM
is given (EVALWARD_SERVICE_URL, or CRM_URL in production) a refund is recorded there too.

    echo '{"order_id": "A-1042"}' | DATABASE_URL=sqlite:///shop.db python3 shop.py lookup
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import urllib.request


def database() -> sqlite3.Connection:
    url = os.environ["DATABASE_URL"]
    if not url.startswith("sqlite:///"):
        sys.exit(f"DATABASE_URL must be a sqlite:/// URL, not {url!r}")
    return sqlite3.connect(url.removeprefix("sqlite:///"))


def lookup(args: dict[str, str]) -> dict[str, object]:
    row = (
        database()
        .execute("SELECT id, amount, status FROM orders WHERE id = ?", (args["order_id"],))
        .fetchone()
    )
    if row is None:
        return {"error": f"no order {args['order_id']}"}
    return {"order_id": row[0], "amount": row[1], "status": row[2]}


def refund(args: dict[str, str]) -> dict[str, object]:
    db = database()
    order = db.execute("SELECT amount FROM orders WHERE id = ?", (args["order_id"],)).fetchone()
    if order is None:
        return {"error": f"no order {args['order_id']}"}
    cursor = db.execute(
        "INSERT INTO refunds (order_id, amount, reason) VALUES (?, ?, ?)",
        (args["order_id"], order[0], args["reason"]),
    )
    db.execute("UPDATE orders SET status = 'refund_requested' WHERE id = ?", (args["order_id"],))
    db.commit()
    crm = os.environ.get("EVALWARD_SERVICE_URL") or os.environ.get("CRM_URL")
    if crm:
        if not crm.startswith(("http://", "https://")):
            sys.exit(f"the CRM's address must be an http(s) URL, not {crm!r}")
        refunded = {"order_id": args["order_id"], "amount": order[0], "reason": args["reason"]}
        request = urllib.request.Request(  # noqa: S310 (checked above)
            crm + "/refunds",
            data=json.dumps(refunded).encode(),
            headers={"content-type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=10).read()  # noqa: S310
    return {"refund_id": cursor.lastrowid, "order_id": args["order_id"], "amount": order[0]}


if __name__ == "__main__":
    arguments = json.load(sys.stdin)
    print(json.dumps({"lookup": lookup, "refund": refund}[sys.argv[1]](arguments)))
