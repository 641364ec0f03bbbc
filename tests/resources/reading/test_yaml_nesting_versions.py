"""evalward's own YAML limits speak before any parser's, on the locked PyYAML and the newest.

PyYAML 6.0.4's bundled libyaml stops a deep flow collection with its own nesting error before
emitting a single event; evalward's message (and the place it names) must not change with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from evalward.errors import YamlSyntaxError
from evalward.resources.reading.yamlsource import check_shape

pytestmark = pytest.mark.unit

DOCUMENTS = {
    "flow": "x: " + "[" * 5_000 + "]" * 5_000 + "\n",
    "block": "x:\n  " + "- " * 5_000 + "a\n",
    "flow-in-block": "a:\n  b: " + "{k: " * 3_000 + "v" + "}" * 3_000 + "\n",
}
EXPECTED = {  # the 101st collection's opening: `[` number 100, `-` number 100, `{` number 99
    "flow": (1, 3 + 100),
    "block": (2, 3 + 2 * 99),
    "flow-in-block": (2, 6 + 4 * 98),
}
MESSAGE = "invalid YAML: collections nested more than 100 levels deep; flatten the document"

_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import yaml
from evalward.resources.reading.yamlsource import check_shape
from evalward.errors import YamlSyntaxError
found = {}
for name, text in json.loads(sys.stdin.read()).items():
    try:
        check_shape(text)
    except YamlSyntaxError as exc:
        found[name] = [str(exc), exc.line, exc.column]
print(json.dumps({"version": yaml.__version__, "found": found}))
"""


def _found(text: str) -> tuple[str, int | None, int | None]:
    with pytest.raises(YamlSyntaxError) as raised:
        check_shape(text)
    return str(raised.value), raised.value.line, raised.value.column


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_the_locked_pyyaml_gives_evalward_s_message_at_depth_101(name: str) -> None:
    message, line, column = _found(DOCUMENTS[name])
    assert (message, (line, column)) == (MESSAGE, EXPECTED[name]), yaml.__version__


@pytest.mark.registries
def test_the_newest_pyyaml_gives_the_same_message_at_the_same_place(tmp_path: Path) -> None:
    """The newest PyYAML from PyPI, installed beside the locked one, reads the same texts."""
    target = tmp_path / "newest"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade"]
    subprocess.run(
        [*install, "--target", str(target), "pyyaml>=6.0.4"],
        check=True,
        capture_output=True,
    )
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, str(target)],
        input=json.dumps(DOCUMENTS),
        capture_output=True,
        text=True,
        check=True,
    )
    answer = json.loads(probe.stdout)
    assert tuple(int(x) for x in answer["version"].split(".")[:3]) >= (6, 0, 4)
    assert answer["found"] == {name: [MESSAGE, *EXPECTED[name]] for name in DOCUMENTS}, answer[
        "version"
    ]
