"""What a run may spend on models, and what it has: the budget's limits, a plan's estimate,
the allowance the model proxy counts down, the ceiling every provider holds to while
attribution runs, and what the providers actually answered.

Plain records, below both the planning that estimates a plan (`budget`) and the model proxy
that enforces what is left (`runtime.model_proxy`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from evalward.rundata.trace import Usage
from evalward.text.counts import counted

SETTLED_USD = 1e-9
"""Less than any call can hold (2,000 tokens at the cheapest price are $0.0002): what is left
held once every call in flight settled is float rounding, and no call waits for it."""
UNSTATED_OUTPUT_TOKENS = 128_000
"""The most output one reply of a priced model may carry (GPT-5's limit; Claude's is at most
this): what a call that names no output limit is held for, and what a larger limit counts as."""
CALL_TOKENS = 2_000
"""Tokens a provider adds to a call on its own: the system prompt it writes for tools (about
350 for Anthropic's, about 1,200 with its computer-use tool) and each message's markers."""
GRADING = frozenset({"judge", "pairwise"})
"""The purposes of the calls that grade a run, which the plan's estimate counts ahead and
`max-cost-usd` holds, while the runs are under way, at their worst (`Ceiling.budget`)."""


def worst_usage(read_bytes: int, output_limit: int | None) -> Usage:
    """The most a call can use, read from its request before it is sent: every byte it sends
    read as a token (a token covers at least one byte of text, and the JSON around the text is
    longer than the few tokens each message adds), `CALL_TOKENS` more for what the provider
    adds, and its output limit written whole (`UNSTATED_OUTPUT_TOKENS` where it names none,
    and at most that). What `max-cost-usd` holds for a call in flight, whoever makes it."""
    output = min(output_limit or UNSTATED_OUTPUT_TOKENS, UNSTATED_OUTPUT_TOKENS)
    return Usage(input_tokens=read_bytes + CALL_TOKENS, output_tokens=output)


PROXY_CALLS_PER_RUN = 200
"""Model calls one fixture run's programs may make through the model proxy (as many as a
declarative agent's largest `maxTurns`). The judges share the provider's rate limits with
them: a run's share keeps a pull request's agent from spending those limits to starve the
judge that grades it."""


@dataclass(frozen=True)
class Budget:
    """The limits a run is given (`max-model-calls`, `max-cost-usd`); None is no limit."""

    max_model_calls: int | None = None
    max_cost_usd: float | None = None

    @property
    def limited(self) -> bool:
        return self.max_model_calls is not None or self.max_cost_usd is not None


@dataclass
class Allowance:
    """The model calls and dollars left to the calls a plan cannot count ahead: those made
    through the model proxy (each run has its share of them) and the simulated users'
    (estimated at their most, but metered as they are made: what they read grows with
    what the agent says).

    A call is counted when it is let through (so concurrent calls cannot all take the last
    one), and so is its cost at its worst (`worst_usd`, what the model proxy reads from the
    request), held until its reply arrives and settles it at what it cost (`spend`), or is
    given back when no reply came (`release`): calls opened at once, before any reply is
    counted, cannot together spend past the dollars left; a grading call, which the
    estimate counted ahead, holds its worst against the whole budget alone (`hold`). A call
    whose worst fits beside what was spent but not beside what the calls in flight hold
    waits, holding nothing, until they settle enough (their real cost is mostly far below
    their worst, so refusing it would end runs that fit); one that cannot fit even with
    nothing held is refused at once. The sides take turns, so a pull request's calls are
    never in flight beside the base's to keep them waiting. Cached replies cost nothing. A
    call to a model with no price counts against the calls only; the model proxy refuses one
    while dollars are counted. Whatever the budget, one run (one key of the proxy) may make
    at most `per_run` calls.

    Beside what it leaves, the whole `max-cost-usd` holds what the job's calls actually cost
    (`job`): an estimate is a guess, of the base's agent for a pull request's run, and what a
    call costs is what the model says it read, so once the job has spent the budget no agent's
    call is sent, counted by the estimate or not (`spent_out`).
    """

    max_calls: int | None = None
    max_cost_usd: float | None = None
    calls: int = 0
    cost_usd: float = 0.0
    per_run: int = PROXY_CALLS_PER_RUN
    budget_usd: float | None = None
    """The job's whole `max-cost-usd`, which what its calls cost (`job`) is held to."""
    job: Spent | None = field(default=None, repr=False)
    """What every call of the job has cost so far, as the providers answered them (None: not
    held, where a mock script answers every call: its replies are free to the budget)."""
    held_usd: float = 0.0
    """The worst cost of the calls let through whose replies have not arrived yet."""
    _by_run: dict[str, int] = field(default_factory=dict, repr=False)
    _waiting: list[asyncio.Future[None]] = field(default_factory=list, repr=False)

    @property
    def waiting(self) -> int:
        """How many calls wait for the calls in flight to settle before they fit."""
        return len(self._waiting)

    @classmethod
    def left_by(
        cls, budget: Budget, estimate: Estimate | None, job: Spent | None = None
    ) -> Allowance | None:
        """What `budget` leaves after the plan's `estimate` (less its simulated users' share,
        which they draw from the allowance as they speak), and the whole of it that what the
        `job` spends is held to; None for an unlimited budget."""
        if not budget.limited:
            return None
        allowance = cls(
            max_calls=budget.max_model_calls,
            max_cost_usd=budget.max_cost_usd,
            budget_usd=budget.max_cost_usd,
            job=job,
        )
        if estimate is not None:
            allowance.commit(estimate)
        return allowance

    def spent_out(self) -> str | None:
        """Why no call may be sent, however the estimate counted it: what the job's calls have
        cost has reached `max-cost-usd` (a call of unknown cost counts as reaching it, as
        `spend` counts it); None while it has not."""
        job, budget = self.job, self.budget_usd
        if job is None or budget is None or (job.cost_usd < budget and not job.unpriced):
            return None
        unknown = f" and {job.unpriced} of unknown cost" if job.unpriced else ""
        return (
            f"the job's cost budget is spent: its model calls have cost ${job.cost_usd:.4f}"
            f"{unknown}, which reaches the ${budget:.4f} it may spend (max-cost-usd), whatever "
            "the plan's estimate counted for them; raise max-cost-usd, or make the agent's "
            "calls cheaper (a shorter system prompt, shorter tool results)"
        )

    def commit(self, estimate: Estimate) -> None:
        """Take what `estimate`'s calls that are not metered here will spend (a round of
        adaptive reps, once the budget has admitted it)."""
        if self.max_calls is not None:
            self.max_calls = max(self.max_calls - estimate.set_aside_calls, 0)
        counted = estimate.set_aside_cost_usd
        if self.max_cost_usd is not None and counted is not None:
            self.max_cost_usd = max(self.max_cost_usd - counted, 0.0)

    def short_of(self, estimate: Estimate) -> str:
        """The limit `estimate`'s calls that are not metered here would take past what is
        left ("" for none): a round of adaptive reps is set aside from what the calls drawn
        so far left, not from what they spent already, and it fits only where what the job
        has actually spent leaves room for it too."""
        if self.max_calls is not None and self.calls + estimate.set_aside_calls > self.max_calls:
            return "max-model-calls"
        counted = estimate.set_aside_cost_usd
        if self.max_cost_usd is None or counted is None:
            return ""
        if self.cost_usd + counted > self.max_cost_usd:
            return "max-cost-usd"
        job, budget = self.job, self.budget_usd
        spent = job is not None and budget is not None and job.cost_usd + counted > budget
        return "max-cost-usd" if spent else ""

    async def admit(self, run: str | None = "", worst_usd: float = 0.0) -> str | None:
        """Count one call of `run` (any key that tells runs apart; None for a call that is
        no run's own: a simulated user's) and hold `worst_usd`, the most it can cost, until
        its reply settles it, once the calls in flight leave room for it (`_settled`); or say
        why it is refused."""
        while (refusal := self._refusal(run, worst_usd)) is None and self._must_wait(worst_usd):
            await self._settled()
        if refusal is not None:
            return refusal
        self.calls += 1
        self.held_usd += worst_usd
        if run is not None:
            self._by_run[run] = self._by_run.get(run, 0) + 1
        return None

    def _refusal(self, run: str | None, worst_usd: float) -> str | None:
        """Why a call of `run` that may cost `worst_usd` is refused whatever settles: a limit
        spent, or a worst that what is left could not hold with no call in flight."""
        if run is not None and self._by_run.get(run, 0) >= self.per_run:
            return (
                f"this run's share of model calls is spent: a fixture run may make "
                f"{self.per_run} calls through evalward's model proxy, so that no agent can "
                "use up the provider's limits the judge needs"
            )
        if self.max_calls is not None and self.calls >= self.max_calls:
            return (
                f"the job's model-call budget is spent: "
                f"{'1 call was' if self.max_calls == 1 else f'{self.max_calls} calls were'} "
                "left after the plan's estimate to the calls it cannot count ahead, agents' "
                "own and simulated users' (max-model-calls)"
            )
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return (
                f"the job's cost budget is spent: ${self.max_cost_usd:.4f} was left after "
                "the plan's estimate to the calls it cannot count ahead, agents' own and "
                "simulated users' (max-cost-usd)"
            )
        return self.spent_out() or self._cannot_hold(worst_usd)

    @property
    def holds_counted(self) -> bool:
        """Whether a call the plan's estimate counted holds its worst (`hold`): not where the
        job's spending is not held (a mock script's replies are free)."""
        return self.job is not None and self.budget_usd is not None

    async def hold(self, worst_usd: float) -> str | None:
        """Hold `worst_usd` for a call the plan's estimate counted ahead (a judge's), against
        the whole `max-cost-usd` alone, until `release`, once the calls in flight leave room
        for it; or say why it does not fit. Nothing is held where the job's spending is not
        (`holds_counted`)."""
        if not self.holds_counted:
            return None
        while (
            refusal := self.spent_out() or self._cannot_hold(worst_usd, whole=True)
        ) is None and self._must_wait(worst_usd, whole=True):
            await self._settled()
        if refusal is None:
            self.held_usd += worst_usd
        return refusal

    def _left(self, *, whole: bool = False) -> float | None:
        """What the budget leaves beside what was spent, whatever is in flight (None: no
        dollars are counted): of what the plan's estimate left (but where the estimate
        counted the call, `whole`), and of the whole `max-cost-usd` the job is held to."""
        allowed = None if whole else self.max_cost_usd
        left = None if allowed is None else allowed - self.cost_usd
        job, budget = self.job, self.budget_usd
        if job is not None and budget is not None:
            of_budget = budget - job.cost_usd
            left = of_budget if left is None else min(left, of_budget)
        return left

    def _must_wait(self, worst_usd: float, *, whole: bool = False) -> bool:
        """Whether a call that may cost `worst_usd`, which what is left holds, does not fit
        beside what the calls in flight hold at their worst until they settle."""
        left = self._left(whole=whole)
        return left is not None and worst_usd > left - self.held_usd

    def _cannot_hold(self, worst_usd: float, *, whole: bool = False) -> str | None:
        """Why a call that may cost `worst_usd` does not fit beside what was spent, even with
        no call in flight (`_left`)."""
        left = self._left(whole=whole)
        if left is None or worst_usd <= left:
            return None
        return (
            f"the job's cost budget cannot hold this call: at its most it costs "
            f"${worst_usd:.4f} (what its request can make the model read, and the output "
            f"it may write), and ${max(left, 0.0):.4f} of the budget is left beside what was "
            "spent, with no call in flight (max-cost-usd); give the call a smaller output "
            "limit (a declarative agent's maxTokens; a request's max_tokens, "
            "max_completion_tokens, max_output_tokens) or a shorter prompt, or raise "
            "max-cost-usd"
        )

    async def _settled(self) -> None:
        """Wait, holding nothing, until a call in flight settles (`release`): called only
        while one holds something, so one always will (its reply, or its run's end, which
        cuts it)."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._waiting:
                self._waiting.remove(waiter)

    def spend(self, cost_usd: float | None, held_usd: float = 0.0) -> None:
        """Count a reply's cost, in place of the `held_usd` its call held; an unknown one
        (None) spends whatever dollars are left: what cannot be counted must not pass for
        free."""
        self.release(held_usd)
        if cost_usd is None and self.max_cost_usd is not None:
            self.cost_usd = max(self.cost_usd, self.max_cost_usd)
        else:
            self.cost_usd += cost_usd or 0.0

    def release(self, held_usd: float) -> None:
        """Give back what a call held when no reply came to settle it (refused upstream,
        unreached), and wake the calls waiting for room, in the order they came, to look
        again (`_settled`)."""
        held = self.held_usd - held_usd
        self.held_usd = held if held > SETTLED_USD else 0.0
        if held_usd:
            waiting, self._waiting = self._waiting, []
            for waiter in waiting:
                if not waiter.done():
                    waiter.set_result(None)

    def cut(self, held_usd: float, purpose: str = "agent", *, drawn: bool = True) -> None:
        """Count a call cut before its reply came (its run ended) at the `held_usd` it held:
        it was sent, and what it cost is unknown but at most that. It is spent here where it
        drew on what the estimate left (`drawn`), and counted in what the job spent either
        way, so the figure results.json reports is the one `max-cost-usd` counted."""
        if not held_usd:
            return
        if drawn:
            self.spend(held_usd, held_usd)
        else:
            self.release(held_usd)
        if self.job is not None:
            self.job.add(Usage(cost_usd=held_usd), purpose)


@dataclass
class OwnCalls:
    """The calls evalward makes itself for one run: a declarative agent's, or a simulated
    user's. The first `counted` are those the plan's estimate counted for the run
    (`budget_estimate`), already taken from the budget: each holds its worst cost against the
    whole `max-cost-usd` until its reply, as a judge's does (`Allowance.hold`). Each past
    them draws from the `Allowance` and holds its worst there, as a call through the model
    proxy does, so a pull request's `maxTurns` cannot spend past the budget, nor can runs in
    flight at once each start a costly call when little is left (one waits for the others to
    settle, `Allowance.admit`). None is sent once the job
    has spent `max-cost-usd` (`Allowance.spent_out`): a counted call costs what the model
    reads, not what the estimate said. A run's calls are made one at a time: what is held is
    the last call's."""

    allowance: Allowance
    counted: int
    made: int = 0
    purpose: str = "agent"
    """Whose calls these are in what the job spent (`Spent.calls_by`): `agent` or `user`."""
    held_usd: float = 0.0
    """What the call in flight holds of the budget (`worst_usd`, as admitted)."""
    _drawn: bool = False

    async def admit(self, worst_usd: float = 0.0) -> str | None:
        """Count one call about to be sent and hold `worst_usd`, the most it can cost, until
        its reply settles it (nothing where no dollars are counted), once the calls in
        flight leave room for it; or say why it is refused."""
        drawn = self.made >= self.counted
        allowance = self.allowance
        worst_usd = 0.0 if allowance.max_cost_usd is None else worst_usd
        refusal = await (allowance.admit(None, worst_usd) if drawn else allowance.hold(worst_usd))
        if refusal is not None:
            return refusal
        self.made += 1
        held = drawn or allowance.holds_counted
        self.held_usd, self._drawn = worst_usd if held else 0.0, drawn
        return None

    def spend(self, cost_usd: float | None) -> None:
        """The last call's reply: counted at its cost where it drew from the allowance, in
        place of what it held (a counted call's cost is counted in what the job spent)."""
        held, self.held_usd = self.held_usd, 0.0
        if self._drawn:
            self.allowance.spend(cost_usd, held)
        else:
            self.allowance.release(held)

    def release(self) -> None:
        """No reply came for the last call (its provider refused it, or was not reached):
        what it held is given back."""
        self.allowance.release(self.held_usd)
        self.held_usd = 0.0

    def cut(self) -> None:
        """The last call was cut before its reply (the run ended): counted at what it held."""
        self.allowance.cut(self.held_usd, self.purpose, drawn=self._drawn)
        self.held_usd = 0.0

    @contextmanager
    def in_flight(self) -> Iterator[None]:
        """Around a call from its admission to its reply (whose cost `spend` counts): `cut`
        where its run ends with it in flight, given back (`release`) where it ends in an
        error, for no reply will settle what it held and calls waiting for room need it."""
        try:
            yield
        except asyncio.CancelledError:
            self.cut()
            raise
        except Exception:
            self.release()
            raise


@dataclass
class Ceiling:
    """A hard bound on the calls every provider of a run may make, whoever makes them (an
    agent, its simulated user, a judge, a program through the model proxy): attribution's
    budget, which no estimate can hold a variant to, since what a mix of the head's and the
    base's hunks will do is known only once it runs. Each call is counted as it is let
    through, so calls made at once cannot all take the last one; a reply from a cache is no
    call. Unbounded (`limit` None) but while attribution holds it (`held_to`)."""

    limit: int | None = None
    admitted: int = 0
    refused: int = 0
    budget: Allowance | None = None
    """While a plan's runs are under way under `max-cost-usd`: where a grading call (a
    judge's, a pairwise judge's) holds its worst cost until its reply (`Allowance.hold`)."""

    def admit(self) -> str | None:
        """Count one call, or say why it is refused."""
        if self.limit is None:
            return None
        if self.admitted >= self.limit:
            self.refused += 1
            return (
                f"attribution's budget is spent: {self.limit} model calls were left for this "
                "variant, and evalward refuses the calls past them"
            )
        self.admitted += 1
        return None

    @contextmanager
    def grading_within(self, budget: Allowance | None) -> Iterator[None]:
        """Every grading call held to `budget` (None: to nothing) while the block runs."""
        self.budget = budget
        try:
            yield
        finally:
            self.budget = None

    @contextmanager
    def held_to(self, limit: int) -> Iterator[Ceiling]:
        """Every call bounded to `limit` in all while the block runs; the count starts afresh."""
        self.limit, self.admitted, self.refused = limit, 0, 0
        try:
            yield self
        finally:
            self.limit = None


@dataclass(frozen=True)
class Estimate:
    """A plan's expected model calls and cost, before it runs (`budget.estimate_run`)."""

    calls: int
    cost_usd: float | None
    """None when a model in the plan has no price."""
    tokens: int = 0
    """Input and output tokens together."""
    user_calls: int = 0
    """Of `calls`, the simulated users' (at their most): metered as they are made, from the
    `Allowance`, rather than set aside ahead."""
    user_cost_usd: float = 0.0
    """Of `cost_usd`, the simulated users' calls' (priced ones)."""
    agent_calls: int = 0
    """Of `calls`, those evalward makes for a declarative agent: a run may make that many
    before its calls draw from the `Allowance` (`OwnCalls`)."""

    @property
    def set_aside_calls(self) -> int:
        """The calls a budget sets aside ahead: all but the simulated users'."""
        return self.calls - self.user_calls

    @property
    def set_aside_cost_usd(self) -> float | None:
        """What a budget sets aside ahead of `cost_usd` (None: a model has no price)."""
        return None if self.cost_usd is None else self.cost_usd - self.user_cost_usd

    def __add__(self, other: Estimate) -> Estimate:
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else self.cost_usd + other.cost_usd
        )
        return Estimate(
            self.calls + other.calls,
            cost,
            self.tokens + other.tokens,
            self.user_calls + other.user_calls,
            self.user_cost_usd + other.user_cost_usd,
            self.agent_calls + other.agent_calls,
        )


@dataclass
class Spent:
    """The model calls a run made and what they cost, counted as the providers answer them
    (agents, judges and the model proxy alike; a reply from the response cache is no call)."""

    calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    """Calls to a model with no price: their cost is unknown, not zero."""
    calls_by: dict[str, int] = field(default_factory=dict)
    """Calls per purpose: `agent`, `user` (a simulated user), `judge`, `pairwise` (the
    pairwise judge's, its calibration's included)."""
    cost_by: dict[str, float] = field(default_factory=dict)
    """What the priced calls of each purpose cost."""

    def plus(self, other: Spent) -> Spent:
        """Both tallies together (a merge's own calls and its parts')."""
        return Spent(
            self.calls + other.calls,
            self.tokens + other.tokens,
            self.cost_usd + other.cost_usd,
            self.unpriced + other.unpriced,
            _summed(self.calls_by, other.calls_by),
            _summed(self.cost_by, other.cost_by),
        )

    def since(self, earlier: Spent) -> Spent:
        """What was spent after `earlier`, a copy of this tally taken before (`plus(Spent())`):
        attribution's calls apart from the gate's own."""
        return Spent(
            self.calls - earlier.calls,
            self.tokens - earlier.tokens,
            self.cost_usd - earlier.cost_usd,
            self.unpriced - earlier.unpriced,
            {k: v - earlier.calls_by.get(k, 0) for k, v in self.calls_by.items()},
            {k: v - earlier.cost_by.get(k, 0.0) for k, v in self.cost_by.items()},
        )

    def add(self, usage: Usage, purpose: str = "agent") -> None:
        self.calls_by[purpose] = self.calls_by.get(purpose, 0) + 1
        self.cost_by[purpose] = self.cost_by.get(purpose, 0.0) + (usage.cost_usd or 0.0)
        self.calls += 1
        self.tokens += usage.total_tokens
        if usage.cost_usd is None:
            self.unpriced += 1
        else:
            self.cost_usd += usage.cost_usd


def spending_json(estimate: Estimate, spent: Spent) -> dict[str, dict[str, float | int | None]]:
    """The estimate and what was spent, for `evalward run --json`."""
    return {
        "estimate": {
            "calls": estimate.calls,
            "tokens": estimate.tokens,
            "costUsd": None if estimate.cost_usd is None else round(estimate.cost_usd, 8),
        },
        "actual": {
            "calls": spent.calls,
            "tokens": spent.tokens,
            "costUsd": None if spent.unpriced else round(spent.cost_usd, 8),
        },
    }


def cost_text(cost_usd: float | None, unpriced: int, priced_usd: float = 0.0) -> str:
    """ "$0.0291"; "cost unknown (2 calls to a model with no price; $0.0100 priced)"."""
    if cost_usd is not None and not unpriced:
        return f"${cost_usd:.4f}"
    calls = f"{counted(unpriced, 'call')} to a model with no price"
    known = f"; ${priced_usd:.4f} priced" if priced_usd else ""
    return f"cost unknown ({calls}{known})" if unpriced else "cost unknown (a model has no price)"


def spent_text(calls: int, tokens: int, cost: str, split: str = "") -> str:
    """What a run's model calls used, as every surface words it: "21 model calls, 35,255
    tokens incl. judge, $0.0291" (with `split`, the calls by purpose after their count)."""
    made = counted(calls, "model call") + (f" ({split})" if split else "")
    return f"{made}, {tokens:,} tokens incl. judge, {cost}"


PURPOSE_NAMES = {
    "agent": "agent",
    "user": "simulated user",
    "judge": "judge",
    "pairwise": "pairwise judge",
}


def split_text(calls_by: dict[str, int], cost_by: dict[str, float]) -> str:
    """ "agent 6 · $0.0012, simulated user 3 · $0.0004, judge 2 · $0.0009, pairwise judge 28
    · $0.0064": shown when a simulated user or a pairwise judge made calls (otherwise the
    agent's and the judge's are the whole story); every purpose that made calls is named, so
    the parts add up."""
    if not {k for k, n in calls_by.items() if n} - {"agent", "judge"}:
        return ""
    named = [*PURPOSE_NAMES, *sorted(set(calls_by) - set(PURPOSE_NAMES))]
    parts = []
    for purpose in named:
        if calls_by.get(purpose):
            cost = cost_by.get(purpose, 0.0)
            name = PURPOSE_NAMES.get(purpose, purpose)
            parts.append(f"{name} {calls_by[purpose]:,}" + (f" · ${cost:.4f}" if cost else ""))
    return ", ".join(parts)


def _summed(one: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    return {k: one.get(k, 0) + other.get(k, 0) for k in sorted({*one, *other})}


def spending_line(estimate: Estimate, spent: Spent) -> str:
    """After a run: `estimated 23 model calls, ~41,200 tokens, ~$0.0377 (before retries and
    calibration replays); actual 21 model calls, 30,900 tokens incl. judge, $0.0291`."""
    estimated = cost_text(None, 0) if estimate.cost_usd is None else f"~${estimate.cost_usd:.4f}"
    cost = cost_text(None if spent.unpriced else spent.cost_usd, spent.unpriced, spent.cost_usd)
    actual = spent_text(spent.calls, spent.tokens, cost, split_text(spent.calls_by, spent.cost_by))
    return (
        f"estimated {estimate.calls} model calls, ~{estimate.tokens:,} tokens, {estimated} "
        f"(before retries and calibration replays); actual {actual}"
    )
