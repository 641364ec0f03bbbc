"""Read a playground's state, as evalward and never as the agent: each part reads its own
(bounded, links never followed, queries read-only on a copy evalward controls), then the
whole is held to STATE_CHARS characters and the snapshot files state criteria compare with
are read from the gate's side.

The agent had the run to shape its playground; whatever it left there is data, never a path
evalward follows or a statement it runs for the agent. Whatever cannot be read is a
PlaygroundError naming the playground: the run's error, never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalward.errors import PlaygroundError, YamlSyntaxError
from evalward.rundata.playground_state import PlaygroundState, SnapshotMissing, json_size
from evalward.runtime.playground.base import STATE_CHARS, LivePlayground, seed_text
from evalward.text import jsontext


async def capture(
    live: LivePlayground,
    queries: Iterable[str] = (),
    snapshots: Iterable[str] = (),
) -> PlaygroundState:
    """The playground's state now, and the answers to `queries` and the `snapshots` files
    (of the gate's side) that state criteria need."""
    state = PlaygroundState(live.name)
    asked = list(queries)
    for part in live.parts:
        await part.capture(live, state, asked)
    # one part is held to its own bound as it is read (a reply's or a folder's bytes, a
    # database's characters); only parts together need the whole written out to be counted
    if len(state.document) > 1 and json_size(state.document) > STATE_CHARS:
        raise live.error(f"its state is larger than {STATE_CHARS:,} characters")
    for path in snapshots:
        state.snapshots[path] = _snapshot(live, path)
    return state


def _snapshot(live: LivePlayground, path: str) -> Any:
    """A snapshot file of the side's commit as data, or why it is none. The commit is the pull
    request's on its head: a file made to nest past what a parser or the comparison recurses
    through, or whose aliases expand without end, is refused as one that does not load
    (`MAX_DEPTH` levels, as a resource's YAML; `sqlite_seed.parse_yaml`'s shape check)."""
    # lazy: PyYAML costs about 10 ms of start-up, and only a YAML snapshot needs it
    import yaml

    # lazy: they import PyYAML
    from evalward.resources.reading.yamlsource import MAX_DEPTH
    from evalward.runtime.playground.sqlite_seed import parse_yaml

    try:
        text = seed_text(live, path)  # the gate's commit's, through the door
        if path.endswith(".json"):
            # a key given twice, as its YAML is: json.loads kept the last, silently
            return jsontext.loads(text, max_depth=MAX_DEPTH, finite=False, unique_keys=True)
        return parse_yaml(text)
    except PlaygroundError as exc:
        return SnapshotMissing(str(exc))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError, YamlSyntaxError) as exc:
        return SnapshotMissing(f"the snapshot {path!r} does not load: {exc}")
