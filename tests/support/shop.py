"""A small shop suite with a SQLite playground, as one file of documents: a `refunder` agent
with a command tool, its Eval whose playground is seeded from `shop/seed.sql`, and fixtures
given as text. Its checkout is loaded straight from the working tree, for tests of what the
plan phase reads of a definition (no run, no preflight)."""

from __future__ import annotations

from evalward.definitions.loader import load_resources
from evalward.plan.plan import Checkout
from evalward.rundata.sides import Side
from support.documents import documents
from support.gitrepo import GitRepo

SEED = """\
CREATE TABLE orders (id TEXT PRIMARY KEY, amount REAL);
CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id TEXT, amount REAL);
INSERT INTO orders VALUES ('A-1', 25);
"""

TOOL = "import sys\nprint(sys.stdin.read())\n"


def refunder(watch: str = "watch: [tools/*.py]") -> str:
    """The agent, running `tools/refund.py` as a command tool; `watch` its `spec` line."""
    return f"""\
apiVersion: evalward.dev/v1
kind: Agent
metadata: {{ name: refunder }}
spec:
  models: [openai/gpt-test]
  system: Refund what the customer asks for.
  {watch}
  tools:
    - name: create_refund
      description: Refund an order.
      command: [python3, tools/refund.py]
"""


def refunds_eval(fixtures: str, playground: str = "sqlite: { seed: shop/seed.sql }") -> str:
    """The Eval over `fixtures` (a flow sequence's items), with its playground's parts."""
    return f"""\
apiVersion: evalward.dev/v1
kind: Eval
metadata: {{ name: refunds }}
spec:
  targetAgent: refunder
  fixtures: [{fixtures}]
  playground:
    name: shop
    {playground}
"""


def refund_fixture(name: str, *assertions: str, playground: str = "") -> str:
    """A fixture of the refunder, with `assertions` (each an item's text) and its own
    `playground` (a `spec` line) when given."""
    items = "".join(f"    - {assertion}\n" for assertion in assertions)
    own = f"  {playground}\n" if playground else ""
    return f"""\
apiVersion: evalward.dev/v1
kind: EvalFixture
metadata: {{ name: {name} }}
spec:
  targetAgent: refunder
  input: {{ type: prompt, payload: {{ prompt: "Refund order A-1" }} }}
{own}  assertions:
{items}"""


def shop(repo: GitRepo, *docs: str, files: dict[str, str] | None = None) -> Checkout:
    """`docs` as `shop.yaml`, with the seed, the tool, a note beside it and `files` (by path),
    committed; the head's checkout of the working tree."""
    repo.commit(
        "shop",
        {
            "shop.yaml": documents(*docs),
            "shop/seed.sql": SEED,
            "tools/refund.py": TOOL,
            "tools/notes.txt": "not code\n",
            **(files or {}),
        },
    )
    return Checkout(Side.head, repo.path, load_resources(repo.path), sha=repo.head())
