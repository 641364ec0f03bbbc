"""Attribution's trials, run as the head runs: each variant of the head the search asks about
(`attribution/`) is a real commit, checked out and run through the same phases as the head
(`pipeline.evaluate_change`: plan, execute, score), for one Eval's regressing fixtures on the
head's side (or the one cheapest to run, where running them all would not fit the budget:
`witnesses`), with the Eval's own reps and tests. A signal stops the search whole, wherever
it is (`attribute_verdict`), not one variant's runs.

A variant's verdict is the Eval's own per fixture (its `minRepPassRate`, its sequential
tests), read as every report reads the head's (`record.summary.facts_of`): the regression is
there while a fixture that regressed fails, gone when they all pass; a drop only the Eval's
pooled sequential test saw is there while that test over the variant's runs of the fixtures
that drove it settles broken (`_read_pooled`). A variant that cannot be
run (its plan or its runs stopped by an error), or whose fixtures neither pass nor fail (a
provider down, a test that did not settle), is said so and counts as not built: the search
never guesses from it, and an outage is never the proof that a set of hunks causes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from evalward.attribution.found import Finding, Regression, RunAttribution
from evalward.attribution.hunks import Hunk, split_change
from evalward.attribution.search import (
    Attributed,
    FixtureScore,
    NotAttributable,
    Trial,
    Tried,
    Unaffordable,
    attribute,
)
from evalward.attribution.variants import NotBuildable, build_variant, with_only
from evalward.errors import (
    ConfigError,
    EvalwardError,
    printable,
    refusal_message,
    refused_write,
)
from evalward.files.committed import EVALWARDS_OWN
from evalward.flows import pipeline
from evalward.flows.interrupt import until_signalled
from evalward.flows.session import RunVerdict, stopped_by
from evalward.plan.plan import Plan, PlannedRun
from evalward.plan.prepare import config_at
from evalward.plan.request import RunRequest
from evalward.plan.run_setup import Revisions, RunSetup, compose
from evalward.record.evaluation import Evaluation
from evalward.record.schema import SpentInfo
from evalward.record.summary import FixtureFacts, facts_of
from evalward.resources import ResourceSet
from evalward.resources.reading.repo_config import AttributionMode
from evalward.rundata.pairwise_record import PAIR_POOLED_TEST, WORSE, PairwiseRecord
from evalward.rundata.results import EvalResult, FixtureResult
from evalward.rundata.sequential_record import (
    BLOCKING_VERDICTS,
    POOLED_TEST,
    WORKING_VERDICTS,
    SequentialRecord,
)
from evalward.rundata.sides import Side
from evalward.rundata.spending import Budget, Spent
from evalward.text.counts import first_few
from evalward.text.cuts import cap_chars
from evalward.verdict.adaptive import SequentialVerdict
from evalward.verdict.compare import Change, EvalComparison
from evalward.verdict.gate import GateResult


def regressions_of(evaluation: Evaluation) -> list[Regression]:
    """Every Eval of the run with fixtures that regressed, in the comparisons' order, or else
    whose pass rate dropped over the fixtures that drove its pooled sequential test; after
    each, its fixtures that pass yet its pairwise judge's per-fixture tests find worse. An
    Eval in none of those whose pairwise judge's pooled test finds the head worse is one over
    the fixtures whose pairs the base won more of."""
    found = []
    for comparison in evaluation.comparisons:
        fixtures = tuple(f.fixture for f in comparison.fixtures if f.change is Change.regression)
        sequential, record = comparison.head.sequential, comparison.head.pairwise
        agent = comparison.head.agent
        if fixtures:
            found.append(Regression(comparison.name, agent, fixtures))
        elif sequential is not None and _pooled_drop(sequential) and sequential.drivers:
            drivers = tuple(sequential.drivers)
            found.append(Regression(comparison.name, agent, drivers, pooled=True))
        worse = tuple(
            v.fixture
            for v in (record.fixtures if record is not None else ())
            if v.blocks and v.fixture not in fixtures
        )
        if worse:
            found.append(Regression(comparison.name, agent, worse, in_pairs=True))
        elif record is not None and record.blocks and record.pooled == WORSE:
            drivers = tuple(v.fixture for v in record.fixtures if v.counts.base > v.counts.head)
            if drivers and not any(r.eval == comparison.name for r in found):
                found.append(
                    Regression(comparison.name, agent, drivers, in_pairs=True, pooled=True)
                )
    return found


def _pooled_drop(sequential: SequentialRecord) -> bool:
    """The Eval's pooled sequential test settled its pass rate lower than the base's."""
    return sequential.pooled == SequentialVerdict.regression


def untraced_of(
    evaluation: Evaluation, regressions: list[Regression]
) -> tuple[tuple[str, str], ...]:
    """(Eval, why) for each Eval whose pooled test found a drop and that `regressions_of`
    found none in: no fixture drove it (none failed a head rep, or lost more pairs than it
    won), so there is none for a variant to run."""
    traced = {r.eval for r in regressions}
    said = []
    for comparison in evaluation.comparisons:
        if comparison.name in traced:
            continue
        sequential, pairwise = comparison.head.sequential, comparison.head.pairwise
        if sequential is not None and _pooled_drop(sequential):
            why = f"its pass rate dropped over its fixtures ({POOLED_TEST})"
            said.append((comparison.name, why))
        if pairwise is not None and pairwise.blocks and pairwise.pooled == WORSE:
            why = f"its pairwise judge prefers the base over its fixtures ({PAIR_POOLED_TEST})"
            said.append((comparison.name, why))
    return tuple(said)


def run_calls(evaluation: Evaluation, spent: SpentInfo | None) -> int:
    """The model calls the run's results took, as if none had been reused: what the run
    `spent`, and what each result it read from the result cache made when it ran, its
    agent's, simulated user's and judges' (`result_calls`), but for the judge calls a
    deferred judge made of it in this run, which `spent` holds already. A rerun that reads
    every run from the cache gets the budget the first run had, and reads its variants'
    runs from the cache too."""
    made = sum(
        result_calls(evaluation, r) - r.judge_calls_now for r in evaluation.fixtures if r.cached
    )
    return (spent.model_calls if spent is not None else 0) + made


def result_calls(evaluation: Evaluation, result: FixtureResult) -> int:
    """The model calls one run made, its agent's, its simulated user's and its judges'."""
    trace = evaluation.trace_of(result)
    return trace.model_calls + trace.user_calls + result.judge_calls


@dataclass(frozen=True)
class GateCalls:
    """The model calls each of the gate's runs of a regression's fixtures made (agents',
    simulated users' and judges'), by fixture and side, read from their traces once: what a
    variant's runs of some of them are expected to make (`need`), and the least such a
    trial counts for (`least`), however often the search asks."""

    made: Mapping[tuple[str, str], tuple[int, ...]]
    in_pairs: bool = False
    """A regression found in pairs: a variant's runs are judged in pairs with the base's,
    which run again unless the result cache holds them (`base_cached`)."""
    base_cached: bool = False

    @classmethod
    def of(cls, evaluation: Evaluation, regression: Regression, cached: bool) -> GateCalls:
        made: dict[tuple[str, str], list[int]] = {}
        for result in evaluation.fixtures:
            if result.eval == regression.eval and result.fixture in regression.fixtures:
                calls = result_calls(evaluation, result)
                made.setdefault((result.fixture, result.side), []).append(calls)
        made_calls = {key: tuple(calls) for key, calls in made.items()}
        return cls(made_calls, regression.in_pairs, cached)

    def need(self, fixtures: tuple[str, ...]) -> int:
        """What the gate's runs of `fixtures` made, on the side that made more: about what a
        variant's runs of them make, whichever of the two it behaves like. Judged in pairs,
        what a variant that answers like the base makes: a run of each (and the base's
        again, where the result cache does not hold it) and a pair's first order, which a
        tie settles. One that answers like the head runs until its preference test settles,
        many times that (eight runs and their pairs at `evalward init`'s reps), and is held
        to what is left (`Ceiling`): expected at the head's cost, the proof's two variants
        would seldom fit the default budget, though the one like the base costs two calls."""
        if self.in_pairs:
            return self.least(fixtures) * (1 if self.base_cached else 2) + len(fixtures)
        return max(
            sum(sum(self.made.get((fixture, side.value), ())) for fixture in fixtures)
            for side in (Side.head, Side.base)
        )

    def least(self, fixtures: tuple[str, ...]) -> int:
        """What one run of each of `fixtures` made on the base, the fewest any of the gate's
        base runs of it made: the least a variant that runs them like the base costs. Under
        adaptive reps such a variant stops at fewer reps than the head's failing runs took,
        so one run, not all of them, is what a trial counts for at least
        (`CallBudget.count`). The base's runs, not the head's: a pull request whose head
        makes no call must not make its variants count for nothing (a fixture the base did
        not run counts the head's fewest)."""
        base, head = Side.base.value, Side.head.value
        return sum(
            min(self.made.get((fixture, base)) or self.made.get((fixture, head)) or (0,))
            for fixture in fixtures
        )


@dataclass
class CallBudget:
    """What attribution may still spend: `total` less what the providers counted since it
    began (`spent_since`), or less what its trials count for where that is more (`counted`:
    each trial at least a run of each of its fixtures, `count`). A variant starts only while
    what is left covers what the gate's own runs of its fixtures made (`stop`), or the result
    cache holds every run of it (it then counts for nothing); its calls are held to what is
    left, whatever it does (`Ceiling`). `short` once a variant's runs
    did not fit: the next would not either, so the search stops there, saying so."""

    total: int
    spent: Spent
    """The providers' tally, which keeps counting."""
    fraction: float
    """The base branch's `attribution.budget`, whose share of the run's calls `total` is."""
    short: bool = False
    max_cost_usd: float | None = None
    """The job's `max-cost-usd` (None: none, or a mock script answers every call): what the
    whole job's calls have cost (`spent`) is held to it, variants' too, so none starts once
    it is reached, and each call of one is held to what is left as the gate's are."""
    short_of_dollars: bool = False
    """A variant's call did not fit in what `max_cost_usd` left: the next would not either."""
    minutes: float | None = None
    """The base branch's `attribution.maxMinutes` (None: no bound): from `began`, no variant
    starts, and one running is stopped (`variant_trial`)."""
    out_of_time: bool = False
    """A variant's runs were stopped at `minutes`."""
    counted: int = 0
    """The calls the trials so far count for: each what it made, or what a run of each of
    its fixtures made on the base where it made fewer. A variant that makes no call (it
    gives up at once, or waits out its timeout) is a trial all the same: without it the
    search would run to its cap of trials, each as long as the pull request makes it."""
    before: Spent = field(init=False)
    """The tally as attribution began."""
    began: float = field(init=False)
    """When attribution began (`time.monotonic`)."""

    def __post_init__(self) -> None:
        self.before = self.spent.plus(Spent())
        self.began = time.monotonic()

    def seconds_left(self) -> float | None:
        """What is left of `minutes` (None: no bound); at most 0 once it has passed."""
        if self.minutes is None:
            return None
        return self.began + self.minutes * 60 - time.monotonic()

    def spent_since(self) -> Spent:
        return self.spent.since(self.before)

    def left(self) -> int:
        return self.total - max(self.spent_since().calls, self.counted)

    def count(self, before: int, least: int) -> None:
        """Count a trial that began when `before` calls were spent, for what it made and at
        least `least` (a run of each of its fixtures, `GateCalls.least`; one call at least)."""
        made = self.spent_since().calls - before
        self.counted = max(self.counted, before) + max(made, least, 1)

    def stop(self, need: int = 1) -> str:
        """Why no more variant may run ("": one may), when one needs about `need` calls, and
        where the budget is set."""
        dollars, cost = self.max_cost_usd, self.spent.cost_usd
        if dollars is not None and (self.short_of_dollars or cost >= dollars):
            said = (
                f"which reaches the ${dollars:.4f} it may spend"
                if cost >= dollars
                else f"of the ${dollars:.4f} it may spend, and what is left did not hold a "
                "variant's runs"
            )
            return (
                f"attribution stopped at the job's max-cost-usd: its model calls, the gate's "
                f"own and attribution's, have cost ${cost:.4f}, {said} (max-cost-usd raises it)"
            )
        seconds = self.seconds_left()
        if self.out_of_time or (seconds is not None and seconds <= 0):
            return (
                f"attribution stopped at its time bound of {self.minutes:g} minutes "
                "(attribution.maxMinutes in the base branch's evalward.yaml raises it)"
            )
        stopped = f"attribution stopped at its budget of {self.total} model calls"
        left = self.left()
        if left >= max(need, 1) and not self.short:
            return ""
        if left > 0 and self.short:
            stopped += f": a variant's runs needed more than the {left} left"
        elif left > 0:
            stopped += (
                f": a variant's runs need about {need} (what the gate's runs of its fixtures "
                f"made), more than the {left} left"
            )
        spent = self.spent_since().calls
        if self.counted > spent:
            stopped += (
                f", its variants counted for {self.counted} though they made {spent} (each "
                "counts for at least what a run of each of its fixtures made on the base)"
            )
        return (
            f"{stopped} ({self.fraction:g} × the run's own: attribution.budget in the base "
            "branch's evalward.yaml raises it)"
        )


MAX_TRIALS = 24
"""Trials per regression at most, whatever the budget: one-hunk-out over a dozen hunks and
ddmin's rounds over what is left."""


async def attribute_run(request: RunRequest, verdict: RunVerdict) -> RunAttribution | None:
    """Attribution of the run's regressions, as the base branch's `evalward.yaml` asks
    (`attribution`: off, on-block, always; a budget in model calls as a fraction of the
    run's own). None where it does not run: no base, the run stopped or was cancelled, no
    fixture regressed, or (on-block) the gate did not block. It never changes the decision.
    An error in the search ends it there (`unfinished`), with what it found before."""
    setup, outcome = request.setup, verdict.outcome
    if setup.revisions.base is None or outcome.failure is not None or outcome.cancelled:
        return None
    base_commit = setup.git.resolve(setup.revisions.base)
    settings = config_at(setup.git, base_commit).attribution
    blocked = verdict.decision.result is GateResult.failed
    if settings.mode is AttributionMode.off or (
        settings.mode is AttributionMode.on_block and not blocked
    ):
        return None
    regressions = regressions_of(outcome.evaluation)
    untraced = untraced_of(outcome.evaluation, regressions)
    if not regressions and not untraced:
        return None
    calls = run_calls(outcome.evaluation, outcome.spent)
    dollars = setup.options.budget.max_cost_usd if setup.providers.override is None else None
    budget = CallBudget(
        int(settings.budget * calls),
        setup.providers.spent,
        settings.budget,
        max_cost_usd=dollars,
        minutes=settings.max_minutes,
    )
    if not regressions:  # nothing a variant could run: why, and no commit made
        return RunAttribution(settings.mode.value, (), Spent(), budget.total, untraced)
    found: list[Finding] = []
    unfinished = ""
    try:
        await _trace(request, outcome.evaluation, base_commit, regressions, budget, found)
    except Exception as exc:  # what it found before stands, and what it spent is counted
        unfinished = unfinished_by(exc)
    return RunAttribution(
        settings.mode.value,
        tuple(found),
        budget.spent_since(),
        budget.total,
        untraced,
        unfinished,
    )


async def _trace(
    request: RunRequest,
    evaluation: Evaluation,
    base_commit: str,
    regressions: list[Regression],
    budget: CallBudget,
    found: list[Finding],
) -> None:
    """Each of `regressions` traced in turn, its finding added to `found` as it is made."""
    setup = request.setup
    head, unbuildable = head_commit(request)
    # every variant is compared with the base this resolved, which git is not asked again
    revisions = dataclasses.replace(setup.revisions, base=base_commit)
    request = dataclasses.replace(request, setup=dataclasses.replace(setup, revisions=revisions))
    causes: dict[str, frozenset[Hunk]] = {}  # per agent, its last regression's cause
    for regression in regressions:
        why = unbuildable or ignored_beside(setup.revisions, evaluation, regression.agent)
        if why:
            found.append(Finding(regression, NotAttributable(why, ())))
            continue
        finding = await attribute_regression(
            request,
            evaluation,
            regression,
            head=head,
            max_trials=MAX_TRIALS,
            budget=budget,
            likely=causes.get(regression.agent, frozenset()),
        )
        if finding.attributed is not None:
            causes[regression.agent] = finding.attributed.culprit
        found.append(finding)


def unfinished_by(exc: Exception) -> str:
    """Why attribution did not finish, in one line of at most 300 characters: an error of
    evalward's (git's refusal, in git's words) or the machine's as it says itself, any other
    as the bug it is. It may hold paths and git's stderr: each report redacts and escapes it
    as it does every text from outside, and a cut hides secrets first (`cap_chars`)."""
    if isinstance(exc, OSError) and refused_write(exc):
        said = refusal_message(exc)
    elif isinstance(exc, EvalwardError | OSError):
        said = str(exc)
    else:
        said = f"an internal error, a bug ({type(exc).__name__}: {exc})"
    return cap_chars(" ".join(said.split()), 300)


async def attribute_verdict(
    request: RunRequest, verdict: RunVerdict, warn: Callable[[str], None]
) -> str:
    """Attribution of the verdict's regressions (`attribute_run`), kept in its Evaluation for
    every report; what a front end says of it in its log ("" where it did not run). An
    error in it is a warning (`warn`) and every report's line where its findings would be
    (`RunAttribution.unfinished`), and the decision stands.

    SIGTERM or SIGINT while it runs stops it whole, wherever it is (a variant's runs, the
    building of the next), as it stops the run (`until_signalled`): the run's progress is
    marked cancelled, so the front end writes what the run decided and exits 130. A run
    cancelled before it decided runs none, and says nothing of it."""
    if request.progress.cancelled:
        return ""
    try:
        found = await until_signalled(attribute_run(request, verdict), request.progress)
    except Exception as exc:  # before it knew its mode and budget
        found = RunAttribution("", (), Spent(), 0, unfinished=unfinished_by(exc))
    verdict.evaluation.attribution = found
    if found is None:
        return "attribution stopped: the job was cancelled" if request.progress.cancelled else ""
    if found.unfinished:
        warn(f"attribution did not finish: {found.unfinished}")
        return ""
    if not found.found:
        return "attribution: nothing to trace: " + "; ".join(
            f"{name}: {why}, in no one fixture" for name, why in found.untraced
        )
    proven = sum(1 for f in found.found if f.attributed is not None)
    return (
        f"attribution: {proven} of {len(found.found)} regressions traced to their hunks, "
        f"{found.spent_calls} model calls"
    )


def head_commit(request: RunRequest) -> tuple[str, str]:
    """The commit whose variants attribution builds, or why there is none ("" and why): the
    run's head; a head that is the working tree is HEAD, or a commit of its tracked files as
    they are (`Git.working_tree_commit`: nothing of the checkout changes). A file git does
    not track (and does not ignore) as the run began (`Revisions.untracked`) the head's
    runs may have read, and no commit holds it; its name is anyone's bytes, said as
    `printable` says a name."""
    git, revisions = request.setup.git, request.setup.revisions
    if revisions.head is not None:
        return git.resolve(revisions.head), ""
    listed = git.untracked() if revisions.untracked is None else revisions.untracked
    untracked = [p for p in listed if p.split("/")[0] != EVALWARDS_OWN]
    if untracked:
        return "", (
            f"the working tree has files git does not track ({_first_paths(untracked)}), "
            "which no commit of it holds, and the variants attribution runs are commits: add "
            "them (or move them out of the repository) and run again to trace the regression "
            "to its hunk"
        )
    return git.working_tree_commit(git.resolve("HEAD")), ""


def ignored_beside(revisions: Revisions, evaluation: Evaluation, agent: str) -> str:
    """Why a regression of `agent` cannot be traced from a working tree whose files git
    ignores a program of it may read (`AgentFiles.programs_may_read`; "" when it can): the
    gate's runs read them, and the variants (commits) do not hold them, so a trial would
    differ from the run in more than its hunks, and a regression one of them causes (a local
    setting beside the code) would be laid on a hunk. A head that is a commit has none."""
    files = evaluation.agent_files.get(agent)
    if revisions.head is not None or not revisions.ignored or files is None:
        return ""
    listed = [p for p in revisions.ignored if p.split("/")[0] != EVALWARDS_OWN]
    near = files.programs_may_read(listed)
    if not near:
        return ""
    narrow = (
        "; or name what its programs read in its `watch`" if files.programs == "everything" else ""
    )
    return (
        f"the working tree has files git ignores among agent {agent}'s ({_first_paths(near)}), "
        "which its programs may read and no commit holds, and the variants attribution runs "
        "are commits: trace the change in a clean clone, or move them out of the repository "
        f"and run again{narrow}"
    )


def _first_paths(paths: list[str]) -> str:
    """The first three of `paths` and how many more: a name is anyone's bytes, said as
    `printable` says it."""
    return first_few([printable(path) for path in paths[:3]], 3, total=len(paths))


async def attribute_regression(
    request: RunRequest,
    evaluation: Evaluation,
    regression: Regression,
    *,
    max_trials: int,
    head: str,
    budget: CallBudget | None = None,
    likely: frozenset[Hunk] = frozenset(),
) -> Finding:
    """The hunks of the change to `regression.agent` proven to cause `regression`, searched
    with at most `max_trials` trials (`attribution.search.attribute`), each trial the
    regressing fixtures (or the one `witnesses` picks) run on one variant of the head, while
    `budget` affords one, `likely` (another regression's cause) tried first. The agent's
    files are the ones the run (`evaluation`) loaded at the head; `head` the commit the
    variants are made from (the run's head, `head_commit`)."""
    git, revisions = request.setup.git, request.setup.revisions
    assert revisions.base is not None, "a regression is measured against a base"
    base = git.merge_base(git.resolve(revisions.base), head)
    files = evaluation.agent_files.get(regression.agent)
    hunks: tuple[Hunk, ...] = split_change(git, base, head, files) if files is not None else ()
    cache = request.setup.options.cache
    cached = cache is not None and cache.reads

    calls = GateCalls.of(evaluation, regression, cached)
    left = budget.left() if budget is not None else None
    # a pooled drop is in the fixtures together, not in any one of them: it runs them all
    chosen = (
        ()
        if regression.pooled
        else witnesses(regression.fixtures, len(hunks), left, calls.need, cached, max_trials)
    )
    ran = dataclasses.replace(regression, fixtures=chosen) if chosen else regression
    gate = _comparison(evaluation, regression.eval)

    async def tried(
        build: Callable[[], str | NotBuildable], target: Regression, *, is_head: bool
    ) -> Trial:
        if is_head and gate is not None:
            # the variant is the head itself (nothing taken back: a change of one hunk's
            # proof that it brings the regression back): the gate's own runs of it say so,
            # read as a variant's are, and cost nothing
            return dataclasses.replace(_read(target, gate), gate_runs=True)
        # short of budget, a variant runs only where the result cache holds every run of
        # it: the base's agent again, or a variant an earlier run of the same head ran
        stopped = budget.stop(calls.need(target.fixtures)) if budget is not None else ""
        if stopped and not cached:
            raise Unaffordable(stopped)  # no cache serves it: not even built
        variant = build()
        if isinstance(variant, NotBuildable):
            return Trial(False, not_built=variant.reason, unloadable=True)
        before = budget.spent_since().calls if budget is not None else 0
        trial = await variant_trial(request, target, variant, budget, cached_only=bool(stopped))
        if trial is None:
            raise Unaffordable(stopped)
        if budget is not None and not trial.cached:
            budget.count(before, calls.least(target.fixtures))
        return trial.trial

    async def regresses(reverted: frozenset[Hunk], target: Regression = ran) -> Trial:
        assert files is not None
        return await tried(
            lambda: build_variant(git, base, head, files, reverted), target, is_head=not reverted
        )

    async def reproduces(applied: frozenset[Hunk], target: Regression = ran) -> Trial:
        assert files is not None
        return await tried(
            lambda: with_only(git, base, head, files, hunks, applied),
            target,
            is_head=applied >= frozenset(hunks),
        )

    found = await attribute(
        hunks,
        regresses,
        reproduces,
        max_trials=max_trials,
        likely=likely,
        applied_first=regression.in_pairs or _settled_in_rounds(evaluation, regression),
    )
    if not chosen or not isinstance(found, Attributed):
        return Finding(regression, found, chosen, hunks)
    others = tuple(f for f in regression.fixtures if f not in chosen)
    rest = dataclasses.replace(regression, fixtures=others)
    over_cap = len(found.attempts) + 2 > max_trials
    if over_cap or (budget is not None and budget.left() < 2 * calls.need(others)):
        return Finding(regression, found, chosen, hunks)  # both proofs on the others would not fit
    widened, whole = await widen(found, lambda c: regresses(c, rest), lambda c: reproduces(c, rest))
    return Finding(regression, widened, () if whole else chosen, hunks)


async def widen(
    found: Attributed,
    regresses: Callable[[frozenset[Hunk]], Awaitable[Trial]],
    reproduces: Callable[[frozenset[Hunk]], Awaitable[Trial]],
) -> tuple[Attributed, bool]:
    """A cause proven on the witness, tried on the other regressed fixtures with what the
    budget has left: the head without it (`regresses`, run on them) and the base with only
    it (`reproduces`), each with the hunks its proof held beside it. Proven both ways there
    too, it is the cause of them all (True: its two proofs' scores hold every fixture);
    else the witness's proof stands alone, the trials that ran beside it. One the budget
    does not afford is not run."""
    extra: list[Tried] = []
    taken_back, applied = found.removed.hunks, found.reproduced.hunks  # what each proof held
    try:
        removed = await regresses(taken_back)
        extra.append(Tried("reverted", taken_back, removed))
        if not removed.not_built and not removed.regressed:
            reproduced = await reproduces(applied)
            extra.append(Tried("applied", applied, reproduced))
    except Unaffordable:
        pass
    attempts = found.attempts + tuple(extra)
    proven = len(extra) == 2 and extra[1].trial.regressed and not extra[1].trial.not_built
    if not proven:
        return dataclasses.replace(found, attempts=attempts), False
    both = [(found.removed, extra[0]), (found.reproduced, extra[1])]
    removed_all, reproduced_all = (
        dataclasses.replace(
            mine,
            trial=dataclasses.replace(mine.trial, scores=mine.trial.scores + theirs.trial.scores),
        )
        for mine, theirs in both
    )
    return Attributed(found.culprit, removed_all, reproduced_all, attempts), True


def witnesses(
    fixtures: tuple[str, ...],
    hunks: int,
    left: int | None,
    cost: Callable[[tuple[str, ...]], int],
    cached: bool,
    max_trials: int,
) -> tuple[str, ...]:
    """The regressed fixture every variant runs where running all `fixtures` would not fit
    the budget (`left` calls, None for no budget); () to run them all. All fit while `left`
    covers a variant of them (`cost`: what the gate's runs of some fixtures made) for each
    of the `hunks` and the proof (one hunk at a time's most; a change of one hunk's proof
    that brings it back is the head, which the gate's own runs answer), or where the change
    is one hunk whose variant the result cache holds (`cached`: the base's runs). Else one
    fixture is run: the one whose gate runs made the fewest calls (the first of those, in
    the Eval's order). A cause proven on it is proven (both ways) for it alone, then tried
    on the others where the budget has room (`widen`), and the finding says which it ran:
    on the refund-desk example, where every fixture regresses, the default budget fits no
    variant of all three, and the whole search on one."""
    if left is None or len(fixtures) == 1 or (hunks == 1 and cached):
        return ()
    if left >= cost(fixtures) * min(hunks + 1 if hunks > 1 else 1, max_trials):
        return ()
    return (min(fixtures, key=lambda fixture: cost((fixture,))),)


@dataclass(frozen=True)
class VariantRun:
    """A variant's trial, and whether the result cache held every run of it (none made a
    model call: it costs the budget nothing)."""

    trial: Trial
    cached: bool = False


async def variant_trial(
    request: RunRequest,
    regression: Regression,
    commit: str,
    budget: CallBudget | None = None,
    *,
    cached_only: bool = False,
) -> VariantRun | None:
    """The regressing fixtures of `regression` run on the head's side at `commit`, as the
    head's were: whether each passes by its Eval's rule, and how many of its runs did. With
    `budget`, every call of the variant's runs (its agent's, its simulated users', its
    judges', its programs' through the model proxy) is held to what is left (`Ceiling`): a
    variant a refused call cut short is not built (a run stopped by the budget says nothing
    of the agent), and the budget is `short`. `cached_only` (the budget is spent): None
    unless the result cache holds every run of it, no call allowed."""
    setup = request.setup

    def head_runs(plan: Plan, resources: Mapping[Side, ResourceSet]) -> Plan:
        ours = [f for f in plan.adaptive.get(regression.eval, ()) if f in regression.fixtures]
        adaptive = {regression.eval: ours} if regression.eval in plan.adaptive else {}
        runs = [run for run in plan.runs if _asked(run, regression)]
        return dataclasses.replace(plan.with_runs(runs), adaptive=adaptive)

    variant = dataclasses.replace(
        setup,
        revisions=Revisions(base=setup.revisions.base, head=commit),
        select=lambda name: name == regression.eval,
        shape=compose(setup.shape, head_runs),
        # no estimate decides what a variant runs: its runs are the regressing fixtures, all
        # of them, and the ceiling holds what they spend. A pairwise judge is asked of a
        # regression it found, its pairs made with the base's runs (the gate's, where the
        # result cache holds them); of any other it decides the Eval, not the fixtures whose
        # verdicts are all a trial reads: it is asked no pair. The job's max-cost-usd holds
        # what its calls cost, as it holds the gate's (`Allowance.spent_out`): a run it
        # leaves out or refuses makes the variant decide nothing, never regress
        options=dataclasses.replace(
            setup.options,
            run_all=True,
            budget=Budget(max_cost_usd=setup.options.budget.max_cost_usd),
            judge_pairs=regression.in_pairs,
            judge_head_after_pairs=regression.in_pairs,
        ),
        started=None,
        sandbox_setup=None,  # readied once, for the run: the variants run in it as the head
    )
    ceiling = setup.providers.ceiling
    limit = 0 if cached_only else budget.left() if budget is not None else None
    held = ceiling.held_to(limit) if limit is not None else contextlib.nullcontext(None)
    # attribution's time bound stops its runs where they are (a cached variant's make none)
    seconds = budget.seconds_left() if budget is not None and not cached_only else None
    with held as holding:
        with contextlib.suppress(TimeoutError):  # the bound's: `_variant_evaluation` raises none
            async with asyncio.timeout(seconds) as bound:
                ran = await _variant_evaluation(variant, cached_only)
        if bound.expired() and budget is not None:
            budget.out_of_time = True
            return VariantRun(
                Trial(False, not_built="attribution's time bound ran out during its runs")
            )
        if not isinstance(ran, Evaluation):
            return ran
        evaluation = ran
        cut = holding is not None and holding.refused > 0
        made = holding.admitted if holding is not None else None
    if cached_only and cut:
        return None
    if budget is not None and cut:
        budget.short = True
        return VariantRun(Trial(False, not_built="the budget ran out during its runs"))
    if any(r.budget_refused for r in evaluation.fixtures):
        # a run the job's max-cost-usd stopped says nothing of the agent
        if budget is not None:
            budget.short_of_dollars = True
        return VariantRun(Trial(False, not_built="the job's max-cost-usd ran out during its runs"))
    cached = made == 0 and all(r.cached for r in evaluation.fixtures)
    comparison = _comparison(evaluation, regression.eval)
    if comparison is None:
        return VariantRun(Trial(False, not_built=f"{regression.eval} did not run on it"), cached)
    return VariantRun(_read(regression, comparison), cached)


async def _variant_evaluation(
    variant: RunSetup, cached_only: bool
) -> Evaluation | VariantRun | None:
    """The variant's runs evaluated; None where `cached_only` and the cache lacks one; why
    it was not built where its runs stopped. A signal cancels the whole search
    (`attribute_verdict`), not one variant."""
    try:
        return await pipeline.evaluate_change(variant, cached_only=cached_only)
    except pipeline.NotCached:
        return None
    except Exception as exc:
        why = f"its runs stopped: {stopped_by(exc)}"
        return VariantRun(Trial(False, not_built=why, unloadable=isinstance(exc, ConfigError)))


def _read(regression: Regression, comparison: EvalComparison) -> Trial:
    """What a variant's runs say of the regression, from its Eval's head result and
    comparison: there while a fixture that regressed fails (or, found in pairs, its
    preference test finds it worse), gone when they all pass (and none is worse), else
    nothing (`not_built` says why)."""
    result = comparison.head
    record = result.pairwise if regression.in_pairs else None
    scores = tuple(
        _pair_score(record, fixture)
        if regression.in_pairs
        else FixtureScore(
            fixture,
            sum(1 for f in result.fixtures if f.fixture == fixture and f.passed),
            sum(1 for f in result.fixtures if f.fixture == fixture),
        )
        for fixture in regression.fixtures
    )
    facts = {fixture.fixture: facts for fixture, _, facts in facts_of(comparison)}
    worse = record is not None and (
        record.pooled == WORSE
        if regression.pooled
        else any(
            (verdict := record.of(f)) is not None and verdict.verdict == WORSE
            for f in regression.fixtures
        )
    )
    if worse or any(facts[f].failing for f in regression.fixtures if f in facts):
        return Trial(True, scores)
    if regression.pooled and not regression.in_pairs:
        return _read_pooled(result, regression, facts, scores)
    for fixture in regression.fixtures:
        if fixture not in facts or not facts[fixture].passing:
            why = _undecided(result, facts.get(fixture))
            return Trial(False, scores, not_built=f"its runs of {fixture} decided nothing: {why}")
    why = _undecided_pairs(record) if regression.in_pairs else ""
    if why:
        return Trial(False, scores, not_built=f"its pairs decided nothing: {why}")
    return Trial(False, scores)


def _read_pooled(
    result: EvalResult,
    regression: Regression,
    facts: Mapping[str, FixtureFacts],
    scores: tuple[FixtureScore, ...],
) -> Trial:
    """A pooled drop on a variant, none of whose fixtures fails, read as the gate reads the
    head's: there while the pooled test over its runs of them settles broken; gone when each
    of them passes by its own test and the pooled test settles working or ends leaning
    working (nothing failed, it asks no more); else nothing: a test that did not settle, an
    outage or the Eval's own undecided judge proves neither."""
    sequential = result.sequential
    pooled = sequential.pooled if sequential is not None else ""
    if pooled in BLOCKING_VERDICTS:
        return Trial(True, scores)
    for fixture in regression.fixtures:
        mine = facts.get(fixture)
        if (
            mine is None
            or not mine.passing
            or result.incomplete_reason
            or result.inconclusive_reason
        ):
            why = _undecided(result, mine)
            return Trial(False, scores, not_built=f"its runs of {fixture} decided nothing: {why}")
    if pooled in WORKING_VERDICTS or pooled == SequentialVerdict.not_settled:
        return Trial(False, scores)
    return Trial(
        False, scores, not_built=f"its runs decided nothing: its {POOLED_TEST} ended {pooled}"
    )


def _pair_score(record: PairwiseRecord | None, fixture: str) -> FixtureScore:
    """A fixture's pairs on a variant: those the base did not win, of those judged."""
    verdict = record.of(fixture) if record is not None else None
    if verdict is None:
        return FixtureScore(fixture, 0, 0, pairs=True)
    counts = verdict.counts
    return FixtureScore(fixture, counts.head + counts.ties, counts.pairs - counts.unavailable, True)


def _undecided_pairs(record: PairwiseRecord | None) -> str:
    """Why a variant's pairs say nothing ("" where they say it is not worse): none was
    judged, or its judge gives no verdict here (it could not be calibrated, could not
    answer, or was swayed by position), as the gate's reading of the head's would say."""
    if record is None:
        return "no pair of its runs was judged"
    reason = record.unavailable_reason or record.inconclusive_reason or record.left_out_reason
    return cap_chars(printable(reason), 300) if reason else ""


def _undecided(result: EvalResult, facts: FixtureFacts | None) -> str:
    """Why a fixture of a variant neither passes nor fails, as the gate reads a head's: a
    trial that says nothing of the regression, as one that did not build (an outage, or a
    test that did not settle, is never the proof that a set of hunks causes it)."""
    if facts is None:
        return "it did not run"
    if facts.unavailable:
        return "a model provider was down"
    reason = result.incomplete_reason or result.inconclusive_reason
    return cap_chars(printable(reason), 300) if reason else "its test did not settle"


def _settled_in_rounds(evaluation: Evaluation, regression: Regression) -> bool:
    """Whether the regression's Eval has adaptive reps: a fixture that fails runs until its
    test settles broken (three runs, at init's rates, where the base passes at its first),
    so a variant that regresses costs a few times one that does not."""
    comparison = _comparison(evaluation, regression.eval)
    return comparison is not None and comparison.head.sequential is not None


def _comparison(evaluation: Evaluation, name: str) -> EvalComparison | None:
    """The Eval's head result, with its base's where the base ran it."""
    return next((c for c in evaluation.comparisons if c.name == name), None)


def _asked(run: PlannedRun, regression: Regression) -> bool:
    """A run of the regression's fixtures on the head's side (and the base's, for the pairs of
    a regression found in pairs)."""
    side = run.side is Side.head or (regression.in_pairs and run.side is Side.base)
    return side and run.eval == regression.eval and run.fixture in regression.fixtures
