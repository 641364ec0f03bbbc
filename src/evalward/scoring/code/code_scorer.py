"""Run a code scorer (resources/checks/code_scorer.py): as a program from the checkout is run.

In the action the scorer runs as the side's agent user (`Sandbox`), with an environment
built from scratch that holds no secret (`process.limited_env`), in a working folder of its
own, bounded in time (`timeoutSeconds`, then its process group is killed), in memory
(`memoryMb`), in CPU time and in what it may write and answer. On the command line it runs as
the developer, with the same limits and environment. Its text is the one loaded with its
fixture (the gate's commit), never read from the checkout at run time. A scorer that names an
`environment` runs with its packages (scoring/code/scorer_environments.py).

What it answers is read as scoring/code/code_verdicts.py says; a crash, a hang or too much output
makes the assertion `error` with the reason, never a pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import tempfile
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

from evalward.errors import AgentRunError, ScorerEnvironmentError, ScorerFailed
from evalward.resources.checks.code_scorer import CodeAssertion, CodeLanguage, ScorerProtocol
from evalward.resources.models import EvalFixtureSpec
from evalward.rundata.trace import StepType, Trace
from evalward.runtime.agents.inputs import input_messages, input_text
from evalward.runtime.agents.process import DEFAULT_KILL_GRACE, kill_group, limited_env, spawn, tail
from evalward.runtime.isolation.sandbox import Sandbox
from evalward.scoring.code.code_harness import CONFINE, JAVASCRIPT, LIMITS, PYTHON
from evalward.scoring.code.code_verdicts import (
    ScorerCase,
    error_verdict,
    script_stdin,
    script_verdict,
    verdict,
)
from evalward.scoring.code.scorer_environments import ScorerEnvironments
from evalward.scoring.judges.panel import JudgeOutcome
from evalward.text import jsontext
from evalward.text.cuts import cap_chars

MAX_ANSWER_BYTES = 1024 * 1024
"""The most a scorer may write on its stdout (its answer); more is an error."""
MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest file a scorer may write (RLIMIT_FSIZE)."""
HEAP_SHARE = 0.75
"""Of `memoryMb`, what node's JavaScript heap may take (the rest: buffers, code)."""


@dataclass
class CodeScorers:
    """Runs the code scorers of one side's runs (`sandbox`: that side's, or None)."""

    env: Mapping[str, str]
    sandbox: Sandbox | None = None
    kill_grace: float = DEFAULT_KILL_GRACE
    environments: InitVar[ScorerEnvironments | None] = None
    """Where scorers' `environment`s come from (None: the sandbox's, with no checkout)."""
    _folder: Path | None = field(default=None, init=False)
    _environments: ScorerEnvironments = field(init=False)

    def __post_init__(self, environments: ScorerEnvironments | None) -> None:
        self._environments = environments or ScorerEnvironments(self.env, self.sandbox)

    async def score(self, assertion: CodeAssertion, case: ScorerCase) -> JudgeOutcome:
        script = assertion.protocol is ScorerProtocol.script
        stdin = script_stdin(case) if script else None
        return await self.call(assertion, (case.output, _context(assertion, case)), stdin)

    async def value(self, code: CodeAssertion, arguments: tuple[Any, Mapping[str, Any]]) -> Any:
        """What a function answers to `arguments`, as a value (an output transform's), read
        from the harness's own channel only; ScorerFailed says why there is none."""
        if code.code is None:
            raise ScorerFailed(f"{code.path!r} was not loaded with its fixture")
        try:
            return await self._run(code, code.code, arguments, None)
        except _Failed as exc:
            raise ScorerFailed(str(exc) + self._environments.note(code, str(exc))) from None

    async def call(
        self, assertion: CodeAssertion, arguments: tuple[Any, Mapping[str, Any]], stdin: Any = None
    ) -> JudgeOutcome:
        """What the scorer answers to `arguments` (a code assertion's `(output, context)`, a
        scoring function's `(namedScores, context)`) or, a `script`, to `stdin`; an `error`
        that says why when it gives no answer."""
        code = assertion.code
        if code is None:
            return error_verdict(f"the scorer {assertion.path!r} was not loaded with its fixture")
        try:
            answer = await self._run(assertion, code, arguments, stdin)
        except _Failed as exc:
            return error_verdict(str(exc) + self._environments.note(assertion, str(exc)))
        if stdin is not None:
            return script_verdict(assertion, answer)
        return verdict(assertion, answer)

    def _cwd(self) -> Path:
        """An empty folder to run in: nothing of a checkout is at hand to import."""
        if self._folder is None:
            parent = self.sandbox.root if self.sandbox is not None else None
            self._folder = Path(tempfile.mkdtemp(prefix="scorer-", dir=parent))
            self._folder.chmod(0o755)
        return self._folder

    def close(self) -> None:
        self._environments.close()
        if self._folder is not None and self.sandbox is None:
            with contextlib.suppress(OSError):
                self._folder.rmdir()
        self._folder = None

    async def _run(
        self,
        assertion: CodeAssertion,
        code: str,
        arguments: tuple[Any, Mapping[str, Any]],
        stdin: Any,
    ) -> Any:
        """The scorer's answer to `arguments` (`(output, context)`), or to `stdin` (a
        `script`)."""
        try:
            sandbox, added = await self._environments.setting(assertion)
        except ScorerEnvironmentError as exc:
            raise _Failed(str(exc)) from None
        memory = assertion.memory_mb * 1024 * 1024
        cpu = math.ceil(assertion.timeout_seconds) + 1
        limits = [memory, cpu, MAX_FILE_BYTES]
        request = {
            "source": code,
            "inline": assertion.source is not None,
            "filename": assertion.origin[0],
            "line": assertion.origin[1],  # an error is told where the code was written
            "function": assertion.function if assertion.file else "",
            "output": arguments[0],
            "context": arguments[1],
            "limits": limits,
            "language": assertion.lang.value,
        }
        script = stdin is not None
        if script:
            request |= {"stdin": stdin, "args": assertion.args, "confine": CONFINE}
        if script or assertion.lang is CodeLanguage.python:
            argv = ["python3", "-I", "-c", PYTHON]
        else:
            heap = f"--max-old-space-size={max(16, int(assertion.memory_mb * HEAP_SHARE))}"
            argv = ["python3", "-I", "-c", LIMITS, *map(str, limits), "node", heap, "-e"]
            argv.append(JAVASCRIPT)
        env = limited_env(self.env, (), added, sandbox=sandbox)
        try:
            process = await spawn(argv, cwd=self._cwd(), env=env, sandbox=sandbox)
        except AgentRunError as exc:
            raise _Failed(f"the scorer could not start: {exc}") from None
        try:
            async with asyncio.timeout(assertion.timeout_seconds):
                out, err = await _exchange(process, json.dumps(request).encode())
        except TimeoutError:
            raise _Failed(
                f"the scorer did not finish within {assertion.timeout_seconds:g} s "
                "(timeoutSeconds); it was stopped"
            ) from None
        finally:
            left = await kill_group(process, self.kill_grace, sandbox=sandbox)
        if left:
            raise _Failed(f"the scorer ran, but {left}")
        return _answer(out, err, process.returncode)


class _Failed(Exception):
    """Why a scorer gave no answer."""


async def _exchange(process: asyncio.subprocess.Process, request: bytes) -> tuple[bytes, bytes]:
    """Send the request; read the answer (at most MAX_ANSWER_BYTES) and stderr's tail."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(request)
        await process.stdin.drain()
        process.stdin.close()

    async def answer() -> bytes:
        assert process.stdout is not None
        kept = bytearray()
        while chunk := await process.stdout.read(65536):
            kept.extend(chunk)
            if len(kept) > MAX_ANSWER_BYTES:
                raise _Failed(
                    f"the scorer wrote more than {MAX_ANSWER_BYTES // 1024} KiB on its stdout"
                )
        return bytes(kept)

    async def errors() -> bytes:
        assert process.stderr is not None
        kept = bytearray()
        while chunk := await process.stderr.read(65536):
            kept.extend(chunk)
            del kept[: max(0, len(kept) - 8192)]
        return bytes(kept)

    stderr = asyncio.ensure_future(errors())
    try:
        out = await answer()
    except _Failed:
        stderr.cancel()
        raise
    await process.wait()
    return out, await stderr


def _answer(out: bytes, err: bytes, code: int | None) -> Any:
    """The harness's one answer: its whole stdout, one JSON line (whatever the scorer itself
    prints goes to stderr; anything more on stdout is an error, never read as the answer)."""
    lines = out.decode("utf-8", errors="replace").strip().splitlines()
    why = tail(err, 600).strip()
    if not lines:
        if code is not None and code < 0:
            died = f"the scorer was killed by signal {-code}"
            hint = " (over its memoryMb or CPU time?)" if -code in (6, 9, 24) else ""
            raise _Failed(died + hint + (f": {why}" if why else ""))
        ended = f"the scorer ended (exit code {code}) without an answer"
        raise _Failed(ended + (f": {why}" if why else ""))
    if len(lines) > 1:
        raise _Failed(
            "its stdout holds more than its answer: a scorer logs on stderr (print, "
            "console.log and process.stdout go there), never on the descriptor 1 itself"
        )
    try:
        message = jsontext.loads(lines[0], unique_keys=True)
    except ValueError:
        raise _Failed("the scorer's answer is not JSON") from None
    if not isinstance(message, dict) or not isinstance(message.get("ok"), bool):
        raise _Failed("the scorer's answer is not the harness's")
    if not message["ok"]:
        raise _Failed(f"the scorer failed: {cap_chars(str(message.get('error')), 1000)}")
    return message.get("value")


def _context(assertion: CodeAssertion, case: ScorerCase) -> dict[str, Any]:
    """promptfoo's `context` (prompt, vars, test, config) and evalward's own keys."""
    return {
        "prompt": case.input,
        "input": case.input,
        "vars": dict(case.vars),
        "expected": case.expected,
        "test": {"vars": dict(case.vars), "expected": case.expected},
        "config": assertion.config,
        "trace": dict(case.trace),
    }


def scorer_case(spec: EvalFixtureSpec, trace: Trace, output: Any = None) -> ScorerCase:
    """What a fixture's scorers get about one of its runs (`output`: what a transform made of
    its final message, when one did)."""
    if spec.input is not None:
        said, payload = input_text(input_messages(spec.input)), spec.input.payload
    else:  # a conversation: what the user said, turn by turn
        said = "\n".join(s.content for s in trace.steps if s.type is StepType.input)
        payload = {}
    return ScorerCase(
        output=trace.final_output if output is None else output,
        input=said,
        expected=spec.reference,
        vars={**payload, **spec.vars},
        trace=trace.model_dump(mode="json", exclude_none=True),
    )
