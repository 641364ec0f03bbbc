"""What the process's entry point owns and lends to the command it runs: the environment the
process started with, the secrets everything printed is redacted of, and the garbage
collector's start-up pause.

The collector is off until the command has built what lives as long as the run (the suite,
or the shard results): objects every collection in between would rescan (about 80 ms before
the first model call in bench/p1_overhead.py). Only the process's own entry point pauses: a
command run in a long-lived process (the tests) never freezes what it built.

The command tells the host the variables the providers read keys from (`note_key_envs`), so
that the top-level error handler, which runs after the command unwound, still redacts them.
A host made lends its redactor to every cut of a text evalward makes from then on
(`text/cuts.py`): the secrets are hidden before the cut, from the first one, whatever
command runs. The redactor is made on the first text that needs it, and again once more
keys are noted.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from evalward.security import Redactor
from evalward.text.cuts import hide_before_cuts

YOUNG_COLLECTION_EVERY = 10_000
"""Objects made (net) between two collections of the youngest generation once the run is
under way, instead of 700: a run makes and drops hundreds of objects a fixture, and the
results it keeps are walked by every young collection until they are old, so at 700 the
collector took 45 ms of the 1,000-fixture run's CPU (bench/speed.py), at 10,000 about 15 ms;
what waits for it is at most those 10,000 objects' garbage (peak RSS unchanged)."""


@dataclass
class Host:
    env: dict[str, str]
    """The environment the process started with: every command reads this copy."""
    key_envs: set[str] = field(default_factory=set)
    _paused: bool = False
    _redact: Redactor | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        hide_before_cuts(self.hidden)

    @classmethod
    def of_process(cls, env: Mapping[str, str] | None = None) -> Host:
        return cls(dict(os.environ if env is None else env))

    def pause_collector(self) -> None:
        """Called once, first thing in the process."""
        self._paused = gc.isenabled()
        gc.disable()

    def started(self) -> None:
        """Start-up is over: the first time, what was built so far is frozen out of the
        collector's sight (`gc.freeze`), and the collector is back on, its youngest generation
        collected less often (`YOUNG_COLLECTION_EVERY`). A command that builds nothing to
        keep calls it first thing."""
        if self._paused:
            self._paused = False
            gc.freeze()
            _, middle, old = gc.get_threshold()
            gc.set_threshold(YOUNG_COLLECTION_EVERY, middle, old)
            gc.enable()
            gc.callbacks.append(_freeze_survivors)

    def note_key_envs(self, names: Iterable[str]) -> None:
        """The variables the providers read keys from: secrets whatever their names."""
        self.key_envs.update(names)
        self._redact = None

    def redactor(self) -> Redactor:
        """Every secret of the environment, and the keys noted so far."""
        if self._redact is None:
            self._redact = Redactor.from_env(self.env, self.key_envs)
        return self._redact

    def hidden(self, text: str) -> str:
        """`text` with every secret hidden (`redactor`): what a cut is lent."""
        return self.redactor()(text)


def _freeze_survivors(phase: str, info: Mapping[str, int]) -> None:
    """After a full collection, what survived it is what the run holds until its files are
    written (its results, chiefly): frozen too, so that the next full collection walks only
    what was made since, and the collector's work grows with the runs, not with their
    square (10,000 results: 7 full collections, 0.8 s, each walking every result held)."""
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()
