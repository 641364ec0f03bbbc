"""What a pairwise judge said, as results.json and the reports keep it: each pair's two orders
with the steps they cite, each fixture's counts and verdict, the pooled verdict, the length
bias, and why it blocks. Every count is of pairs: head preferred + base preferred + ties +
unavailable = the pairs judged, per fixture and over the Eval."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalward.rundata.record_model import RecordModel

PAIR_FIXTURE_TEST = "per-fixture preference test"
PAIR_POOLED_TEST = "pooled preference test"
WORSE = "worse"
"""Settled: the base is preferred in at least 0.5 + margin of the decided pairs. Blocks."""
NOT_WORSE = "not worse"
"""Settled: the head is not worse by the margin."""
LEANING_WORSE = "leaning worse"
OPEN = "open"
NO_PAIRS = "no pairs"
SETTLED_PREFERENCES = (WORSE, NOT_WORSE)

Preference = Literal["head", "base", "tie", "unavailable"]


class CitedStep(RecordModel):
    """A step of one run that an order's answer relies on, checked against that run."""

    side: str
    step: int
    quote: str = ""
    supported: bool = True
    unsupported_reason: str = ""


class OrderRecord(RecordModel):
    """One order of a pair: which side was shown as A, what the judge answered, and what
    that answer counts as."""

    shown_first: Literal["base", "head"]
    answer: Literal["", "A", "B", "tie"] = ""
    """"": no usable answer (see `error`)."""
    preferred: Preference
    reason: str = ""
    evidence: list[CitedStep] = Field(default_factory=list)
    unsupported: str = ""
    """Why a preference counts as a tie: it cites no supported step of a run."""
    error: str = ""
    reply: str = ""
    """The judge's unusable last reply (capped), when it gave no usable answer."""
    outage: bool = False


class PairRecord(RecordModel):
    """One fixture's base and head runs of one rep, judged in both orders."""

    fixture: str
    rep: int
    preferred: Preference
    orders: list[OrderRecord] = Field(default_factory=list)
    head_chars: int = 0
    base_chars: int = 0
    """How long each run's own words are, in characters, in the steps the judge read (its
    final output under `view: final`; `pairwise_judge.read_chars`): what the length bias is
    measured on."""
    length_tie: bool = False
    """A preference for the much longer run, counted as a tie (`lengthControlled`)."""
    model: str = ""
    head_final: str = ""
    base_final: str = ""
    """The final outputs the judge compared (capped), shown side by side in report.html;
    empty for a private fixture."""
    private: bool = False
    """A held-out fixture: its outputs and the judge's quotes are kept out of the reports."""
    identical: bool = False
    """The two runs would show the judge the same text (final output and steps): a tie,
    decided without asking it (`orders` is empty)."""

    @property
    def both_orders(self) -> bool:
        """Both orders were asked: a run asks the swap only to confirm a preference."""
        return len(self.orders) == 2

    @property
    def consistent(self) -> bool:
        """Both orders gave the same side (or both a tie)."""
        said = [o.preferred for o in self.orders]
        return len(said) == 2 and said[0] == said[1] and said[0] != "unavailable"

    @property
    def inconsistent(self) -> bool:
        """Both orders answered, and differently: what position sway shows as."""
        said = {o.preferred for o in self.orders}
        return self.both_orders and "unavailable" not in said and len(said) == 2

    @property
    def outage(self) -> bool:
        return any(o.outage for o in self.orders)


class PairCounts(RecordModel):
    """Pairs by what they came to; they add up to `pairs`."""

    head: int = 0
    base: int = 0
    ties: int = 0
    inconsistent: int = 0
    """Of the ties, those whose two orders disagreed (a tie the first order settled alone is
    not one)."""
    unavailable: int = 0
    pairs: int = 0

    @classmethod
    def of(cls, pairs: list[PairRecord]) -> PairCounts:
        said = [p.preferred for p in pairs]
        return cls(
            head=said.count("head"),
            base=said.count("base"),
            ties=said.count("tie"),
            inconsistent=sum(
                p.preferred == "tie" and p.inconsistent and not p.length_tie for p in pairs
            ),
            unavailable=said.count("unavailable"),
            pairs=len(pairs),
        )

    @property
    def judged(self) -> int:
        return self.pairs - self.unavailable

    def text(self) -> str:
        """ "head preferred 1 · base preferred 6 · ties 1 (1 inconsistent) · of 8 pairs"."""
        ties = f"ties {self.ties}" + (
            f" ({self.inconsistent} inconsistent)" if self.inconsistent else ""
        )
        lost = f" · unavailable {self.unavailable}" if self.unavailable else ""
        return (
            f"head preferred {self.head} · base preferred {self.base} · {ties}{lost} · "
            f"of {self.pairs} pairs, each judged in both orders"
        )


class PreferenceVerdict(RecordModel):
    fixture: str
    verdict: str
    """worse, not worse (settled); leaning worse, open, no pairs (not settled)."""
    counts: PairCounts
    p_bound: float
    """Ville's bound: the chance of base preferences this many from a head that is not worse."""
    blocks: bool = False


class LengthBucket(RecordModel):
    """Decided pairs grouped by how the head's final output compares in length with the
    base's, and how often the head was preferred in each."""

    bucket: Literal["head shorter", "about as long", "head longer"]
    decided: int
    head_wins: int


class PairwiseRecord(RecordModel):
    """An Eval's pairwise judge: its tests' verdicts, its pairs, and whether it may decide."""

    model: str
    margin: float
    alpha: float
    """The share of `falseBlockRate` the preference tests spend (three quarters of it under
    adaptive reps, the whole of it under fixed reps)."""
    beta: float
    fixture_alpha: float
    """The line of each fixture that leans worse: its share of alpha, split over them."""
    pooled_alpha: float
    fixtures: list[PreferenceVerdict] = Field(default_factory=list)
    pooled: str = NO_PAIRS
    pooled_counts: PairCounts = Field(default_factory=PairCounts)
    pooled_p_bound: float = 1.0
    blocks: bool = False
    why: list[str] = Field(default_factory=list)
    inconclusive_reason: str = ""
    """Why the judge cannot decide (uncalibrated, below its calibration's floors, or shown
    inconsistent across orders in this run): its Eval is inconclusive, never passing, unless
    its evidence of a worse head is significant anyway (`blocks`)."""
    withholds: bool = False
    """The judge alone withholds its Eval's verdict (it cannot decide, or gave no answer where
    its test was open): the Eval's own rules settled its fixtures, whose outcomes stand and are
    counted, but the Eval has no verdict."""
    left_out_reason: str = ""
    """Why the judge is left out of the gate: its calibration has too few pairs to tell, at
    the confidence its floor is read at, whether it agrees with people. It then decides
    nothing, and the rest of its Eval does."""
    agreement: float | None = None
    """The judge's Cohen's κ on its calibration's pairs, when it has one."""
    calibration_consistency: float | None = None
    """The share of the calibration's pairs it judged alike in both orders."""
    run_consistency: float | None = None
    """The share of this run's judged pairs whose two orders agreed."""
    length_controlled: bool = False
    length_bias: list[LengthBucket] = Field(default_factory=list)
    unavailable_reason: str = ""
    """Why the judge gives no verdict: pairs it could not judge and a test left open."""
    outage: bool = False
    pairs: list[PairRecord] = Field(default_factory=list)

    def of(self, fixture: str) -> PreferenceVerdict | None:
        return next((f for f in self.fixtures if f.fixture == fixture), None)

    def pairs_of(self, fixture: str) -> list[PairRecord]:
        return [p for p in self.pairs if p.fixture == fixture]

    def length_line(self) -> str:
        """ "head win rate by length: head shorter 2/5 · about as long 3/6 · head longer 4/4"."""
        parts = [f"{b.bucket} {b.head_wins}/{b.decided}" for b in self.length_bias if b.decided]
        return "head win rate by length: " + (" · ".join(parts) or "no decided pair")

    def state(self) -> str:
        """The judge's word in a table cell: worse, unavailable, inconclusive, or the pooled
        verdict."""
        if self.blocks:
            return "worse"
        if self.unavailable_reason:
            return "unavailable"
        if self.inconclusive_reason:
            return "inconclusive"
        if self.left_out_reason:
            return "left out"
        return self.pooled


class PairAgreement(RecordModel):
    """A pairwise judge replayed on a JudgeCalibration's labelled pairs."""

    model: str
    kappa: float | None
    """Cohen's κ against the people's preferences (A, B, tie); None when undefined."""
    consistency: float | None
    """The share of the pairs it answered whose two orders agreed."""
    scored: int
    errors: int
    unavailable: int = 0
    agreed: int = 0
    note: str = ""
    chance: float | None = None
    """The agreement κ expects by chance, from the judge's and the people's shares of A, B and
    tie: what its confidence bounds are read against (`calibration_bounds`)."""
    human_chance: float | None = None
    """The chance agreement of a judge that agreed on every pair: what the pairs a calibration
    needs are counted with (`pairs_needed`)."""
