"""A promptfoo configuration converted into evalward Agents, EvalFixtures and Evals.

promptfoo runs every test against every prompt and every provider and passes when every test
does. Here each provider becomes an Agent (its model and settings), each (prompt, provider)
pair an Eval with a pass threshold of 1, and each test, rendered with its variables into the
prompt, an EvalFixture of that Eval carrying the converted assertions. The conversion is a
snapshot: a prompt edited later is edited in the fixtures. What has no equivalent is refused
with its location; `skip_unsupported` leaves the droppable parts out instead and says which.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalward.errors import ConfigError, Problem, Refused
from evalward.importers.promptfoo import providers as providers_
from evalward.importers.promptfoo import resources as make
from evalward.importers.promptfoo.asserts import Converter
from evalward.importers.promptfoo.code_asserts import rule, transform_of
from evalward.importers.promptfoo.endpoints import Endpoints
from evalward.importers.promptfoo.messages import SentPrompt, sent
from evalward.importers.promptfoo.prompts import Prompt, entries, prompts_of
from evalward.importers.promptfoo.providers import PromptfooProvider
from evalward.importers.promptfoo.source import Files, Node, Source
from evalward.importers.promptfoo.templates import combinations, compose, render_prompt
from evalward.importers.promptfoo.test_cases import Test, merged, test_nodes
from evalward.resources.checks.assertions import DEFAULT_EMBEDDING_MODEL
from evalward.resources.reading.yamlsource import MAX_FILE_BYTES, Document
from evalward.text.counts import counted

TOP_KEYS = {"description", "prompts", "providers", "tests", "defaultTest", "evaluateOptions"}
IGNORED_KEYS = {
    "$schema", "assertionTemplates", "outputPath", "sharing", "tags", "writeLatestResults",
    "metadata", "env", "derivedMetrics", "commandLineOptions",
}  # fmt: skip
"""Keys that change no verdict: left out (`env` on purpose: it may hold secrets)."""
REPORT_ONLY = {"type": "latency"}
"""What a test without assertions gets: it runs and is reported, and never gates."""


@dataclass
class PromptfooConversion:
    """The resources by kind, evalward.yaml's provider settings, and what the user must know."""

    suite: str = ""
    agents: list[make.ResourceDocument] = field(default_factory=list)
    fixtures: list[make.ResourceDocument] = field(default_factory=list)
    evals: list[make.ResourceDocument] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    dropped: list[Problem] = field(default_factory=list)


@dataclass
class _Column:
    prompt: Prompt
    provider: PromptfooProvider
    agent: str
    labels: dict[str, str]
    judged: bool = False


class _Importer:
    def __init__(
        self, files: Files, skip_unsupported: bool, env: Mapping[str, str] | None = None
    ) -> None:
        self.files = files
        self.env = env or {}
        self.endpoints = Endpoints()
        self.skip = skip_unsupported
        self.problems: list[Problem] = []
        self.droppable = False
        """Some refused part could be left out: `--skip-unsupported` would help."""
        self.out = PromptfooConversion()
        self.warnings: list[str] = []
        self.converter = Converter(files, self.warnings, self.embedding_model)
        self.columns: list[_Column] = []
        self.fixture_names: set[str] = set()
        """Every fixture's name so far: each new one is numbered apart from them."""
        self.embedders: list[PromptfooProvider] = []
        """The providers `similar` assertions embed with (the suite calls them too)."""
        self.test_options: dict[str, Node] = {}
        """The options of the test being converted (its grading `provider` map)."""
        self.rendered = 0
        """Characters of every prompt rendered so far: the file of fixtures holds each."""

    def attempt(self, error: Refused) -> None:
        """A refusal: kept as a problem, or, when it may be left out and the user said so,
        left out and listed."""
        # a part every test shares (defaultTest's) is refused once, not once per test
        if self.skip and error.droppable:
            if error.problem not in self.out.dropped:
                self.out.dropped.append(error.problem)
        elif error.problem not in self.problems:
            self.problems.append(error.problem)
            self.droppable |= error.droppable

    def run(self, config: Node, name: str | None) -> PromptfooConversion:
        for key, child in config.items():
            if key not in TOP_KEYS | IGNORED_KEYS:
                self.attempt(child.refuse_key(key, "", TOP_KEYS, droppable=False))
        derived = config.get("derivedMetrics")
        if derived is not None:
            names = [str(m.get("name")) for m in derived.value or [] if isinstance(m, dict)]
            self.warnings.append(
                f"derivedMetrics ({', '.join(names)}) are not computed: each assertion's "
                "`metric` is its `axis`, and the report gives every axis's score"
            )
        description = config.get("description")
        suite = make.slug(name or (str(description.value) if description else "") or "promptfoo")
        self.out.suite = suite
        prompts = self.prompts(config)
        providers = self.providers(config)
        prompt_slugs = make.distinct([p.label for p in prompts])
        provider_slugs = make.distinct([p.label for p in providers])
        for prompt, prompt_slug in zip(prompts, prompt_slugs, strict=True):
            for provider, provider_slug in zip(providers, provider_slugs, strict=True):
                if provider.prompts is None or prompt.label in provider.prompts:
                    labels = make.column_labels(suite, prompt_slug, provider_slug)
                    agent = f"{suite}-{provider_slug}" if provider_slug else suite
                    self.columns.append(_Column(prompt, provider, agent, labels))
        default = config.get("defaultTest")
        if default is not None and isinstance(default.value, str):
            default = self.files.document(default, self.files.path_of(default, default.value))
        options = default.get("options") if default is not None else None
        grading = options.get("provider") if options is not None else None  # defaultTest's
        graders = [grading] if grading is not None else []
        tests = config.get("tests")
        nodes = test_nodes(tests, self.files) if tests else [Node({}, config.source)]
        for index, node in enumerate(nodes):
            try:
                test = merged(node, index, default)
            except Refused as error:
                self.attempt(error)
                continue
            graders += [test.options["provider"]] if "provider" in test.options else []
            self.test(suite, test)
        judge = self.judge([*graders, *self.converter.graders], providers)
        self.resources(judge, config.get("evaluateOptions"))
        self.out.notes += sorted(set(self.warnings))
        if self.problems:
            raise _refusal(self.problems, skippable=self.droppable)
        if not self.out.fixtures:
            raise config.refuse(
                "no test is left to convert: give `tests` with `vars` and `assert`",
                droppable=False,
            )
        return self.out

    def prompts(self, config: Node) -> list[Prompt]:
        node = config.get("prompts")
        if node is None:
            raise config.refuse("a promptfoo config needs `prompts`", droppable=False)
        if node.value in ([], {}):
            self.attempt(
                _empty(
                    node,
                    "a prompt: a text such as 'Answer: {{question}}', or file:// "
                    "naming a file of prompts",
                )
            )
        found: list[Prompt] = []
        for item, label in entries(node):
            try:
                found += prompts_of(item, label, self.files)
            except Refused as error:
                self.attempt(error)
        return found

    def providers(self, config: Node) -> list[PromptfooProvider]:
        node = config.get("providers")
        if node is None:
            raise config.refuse("a promptfoo config needs `providers`", droppable=False)
        # a mapping is one provider's options, but an empty one gives none: said once, as
        # for an empty list, not also as a provider without an `id`
        items = [] if node.value == {} else node.elements()
        if not items:
            self.attempt(_empty(node, "a provider id such as openai:gpt-4.1-mini, or its options"))
        found: list[PromptfooProvider] = []
        for item in items:
            try:
                found += providers_.providers(item, self.files, self.env)
            except Refused as error:
                self.attempt(error)
        self.endpoints.assign(found)
        self.out.notes += [note for provider in found for note in provider.notes]
        return found

    def judge(
        self, graders: list[Node], providers: list[PromptfooProvider]
    ) -> PromptfooProvider | None:
        if not any(column.judged for column in self.columns):
            return None
        chosen: PromptfooProvider | None = None
        for node in graders:
            if not providers_.is_grader(node):
                continue  # an `embedding` provider alone: `similar`'s, not the judge's
            try:
                found = providers_.grader(node, self.files, self.env)
            except Refused as error:
                self.attempt(error)
                continue
            self.endpoints.assign([found])
            if chosen is not None and found.model != chosen.model:
                problem = f"a second grading model, {found.model} after {chosen.model}: an "
                self.attempt(node.refuse(problem + "Eval has one judge", droppable=False))
            chosen = chosen or found
        if chosen is None and providers:
            chosen = providers[0]
            self.out.notes.append(
                f"llm-rubric assertions are judged by {chosen.model}, the suite's first "
                "provider (promptfoo grades with its default grader): set the Evals' "
                "`judge.model` to choose another"
            )
        return chosen

    def embedding_model(self, node: Node | None) -> str:
        """The model id a `similar` embeds with: its own `provider`, else the test's grading
        provider's `embedding`, else promptfoo's default (OpenAI's text-embedding-3-large)."""
        grading = self.test_options.get("provider")
        if node is None and grading is not None and isinstance(grading.value, dict):
            node = grading.get("embedding")
        if node is None:
            return DEFAULT_EMBEDDING_MODEL
        found = providers_.embedder(node, self.files, self.env)
        self.endpoints.assign([found])
        if all(p.model != found.model or p.node is not found.node for p in self.embedders):
            self.embedders.append(found)
        return found.model

    def test(self, suite: str, test: Test) -> None:
        self.test_options = test.options
        variables = test.variables
        try:
            if variables is not None and isinstance(variables.value, str):
                path = self.files.path_of(variables, variables.value)
                variables = self.files.document(variables, path)
            own = dict(variables.items()) if variables is not None else {}
            combos = combinations({**test.defaults, **own}, self.files)
            decided = rule(test.rule, self.files)
            given = test.options.get("transform") or test.options.get("postprocess")
            transform = transform_of(given, self.files) if given is not None else None
        except Refused as error:
            self.attempt(error)
            return
        base = make.slug(test.description) if test.description else f"test-{test.index + 1}"
        source = f"{test.node.source.shown}:{test.node.where()[0]}"
        for number, combo in enumerate(combos):
            values = compose(combo, test.node, self.warnings)
            assertions = self.assertions(test, values)
            if assertions is None:
                continue
            name = base if len(combos) == 1 else f"{base}-{number + 1}"
            description = _described(test, combo, len(combos))
            for column in self.columns:
                prompt, provider = column.prompt, column.provider
                if not _runs(test.only_prompts, prompt.label) or not _runs(
                    test.only_providers, provider.label, provider.model
                ):
                    continue
                try:
                    rendered = self.render(prompt, provider, test, values)
                except Refused as error:
                    self.attempt(error)
                    continue
                fixture = make.numbered(
                    "-".join([suite, name, *make.suffix(column.labels)]), self.fixture_names
                )
                self.fixture_names.add(fixture)
                column.judged |= any(a["type"] == "judge" for a in assertions)
                content = make.FixtureContent(
                    description, rendered, assertions, values, decided, transform
                )
                self.out.fixtures.append(
                    make.fixture(fixture, column.labels, source, column.agent, content)
                )

    def assertions(self, test: Test, values: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The test's assertions converted; None when every one was left out (running it
        would check nothing)."""
        if not test.asserts:
            self.warnings.append(
                "tests without assertions run and are reported but never gate (a reported-only "
                "`latency` assertion)"
            )
            return [dict(REPORT_ONLY)]
        converted: list[dict[str, Any]] = []
        for node in test.asserts:
            try:
                converted += self.converter.convert(node, values)
            except Refused as error:
                self.attempt(error)
        return converted or None

    def render(
        self, prompt: Prompt, provider: PromptfooProvider, test: Test, values: dict[str, Any]
    ) -> SentPrompt:
        """The prompt as promptfoo renders it for `test` and sends it to `provider`."""
        prefix, suffix = test.options.get("prefix"), test.options.get("suffix")
        template = (
            f"{prefix.value if prefix else ''}{prompt.template}{suffix.value if suffix else ''}"
        )
        text = render_prompt(template, values, prompt.node, self.warnings)
        self.rendered += len(text)
        if self.rendered > MAX_FILE_BYTES:  # stopped now: more tests would only add to it
            problem = test.node.problem(
                f"the prompts rendered up to this test come to more than {MAX_FILE_BYTES:,} "
                "characters, more than the file of fixtures the import writes may hold "
                f"({MAX_FILE_BYTES // (1024 * 1024)} MiB), so nothing was written: import the "
                "tests in parts, a config for each part, each with its own --name"
            )
            raise ConfigError(problem.render())
        return sent(text, provider.reads, _named(provider), prompt.node, self.warnings)

    def resources(self, judge: PromptfooProvider | None, options: Node | None) -> None:
        execution = _execution(options) if options is not None else {}
        tested = [
            column
            for column in self.columns
            if any(f["metadata"]["labels"] == column.labels for f in self.out.fixtures)
        ]  # a column left out whole (its provider refused its prompt) makes no Agent
        agents = {column.agent: column.provider for column in tested}
        self.out.agents = [make.agent(name, provider) for name, provider in agents.items()]
        used = list(agents.values())
        for column in tested:
            model = judge.model if judge is not None and column.judged else None
            name = "-".join([self.out.suite, *make.suffix(column.labels)])
            self.out.evals.append(
                make.evaluation(name, column.agent, column.labels, model, execution)
            )
            if model is not None and judge is not None and judge not in used:
                used.append(judge)
        used += [found for found in self.embedders if found not in used]
        settings, conflicts = self.endpoints.settings(used)
        for node in conflicts:
            message = "a second price for the same model at the same server: an evalward "
            self.attempt(node.refuse(message + "run has one price per model", droppable=False))
        self.out.settings = settings


def _execution(options: Node) -> dict[str, Any]:
    """evaluateOptions that have an equivalent: concurrency, repeats, the per-test timeout."""
    execution: dict[str, Any] = {}
    for key, child in options.items():
        value = child.value
        if key == "maxConcurrency" and isinstance(value, int) and value >= 1:
            execution["parallel"] = min(value, 1024)
        elif key == "repeat" and isinstance(value, int) and value > 1:
            execution["repsPerFixture"] = min(value, 1000)
        elif key == "timeoutMs" and isinstance(value, int | float) and value > 0:
            execution["timeoutSeconds"] = value / 1000
    return execution


def _runs(only: list[str] | None, *names: str) -> bool:
    """Whether a test's `providers:` / `prompts:` filter lets one of `names` run it."""
    return only is None or any(
        name == wanted or (wanted.endswith("*") and name.startswith(wanted[:-1]))
        for wanted in only
        for name in names
    )


def _named(provider: PromptfooProvider) -> str:
    """A provider as its config names it: its id, else its label."""
    value = provider.node.value
    given = value.get("id") if isinstance(value, dict) else value
    return f"`{given if isinstance(given, str) else provider.label}`"


def _described(test: Test, combo: dict[str, Any], count: int) -> str:
    if count == 1:
        return test.description
    shown = ", ".join(f"{k}={v}" for k, v in combo.items() if isinstance(v, str))
    return f"{test.description} ({shown})".strip()


def _refusal(problems: list[Problem], *, skippable: bool) -> ConfigError:
    """Every refused part; `--skip-unsupported` is offered only when it would leave some out."""
    count = len(problems)
    lines = "\n".join(f"  {p.render()}" for p in problems)
    fix = "Rewrite them as the messages say"
    if skippable:
        fix += ", or leave them out with --skip-unsupported (each one left out is listed)"
    return ConfigError(
        f"{counted(count, 'part')} of the promptfoo config "
        f"{'have' if count != 1 else 'has'} no evalward equivalent, so nothing was written:\n"
        f"{lines}\n{fix}"
    )


def convert(
    config: Path,
    *,
    root: Path,
    shown_from: Path,
    name: str | None = None,
    skip_unsupported: bool = False,
    env: Mapping[str, str] | None = None,
) -> PromptfooConversion:
    """The conversion of the promptfoo config at `config`, reading files inside `root` only;
    `env` is where promptfoo would find an Azure resource's host and key variable. A
    ConfigError lists every part that has no equivalent (with `skip_unsupported`, every part
    that cannot be left out)."""
    config = config.resolve()
    files = Files(config.parent, root.resolve(), shown_from)
    importer = _Importer(files, skip_unsupported, env)
    start = Node(None, Source(files.shown(config), Document(None, 1)))
    try:
        node = files.document(start, files.path_of(start, str(config)))
        if not isinstance(node.value, dict):
            raise node.refuse("expected a promptfoo config: a mapping with prompts and tests")
        conversion = importer.run(node, name)
    except Refused as error:
        # what was left out is part of why nothing is left
        problems = [*importer.problems, *importer.out.dropped, error.problem]
        raise _refusal(problems, skippable=importer.droppable or error.droppable) from None
    make.check([*conversion.agents, *conversion.fixtures, *conversion.evals])
    return conversion


def _empty(node: Node, one: str) -> Refused:
    """`prompts` or `providers` given as an empty list or mapping (either shape holds them):
    every test runs against each (prompt, provider) pair, so there would be none to run, and
    "no test is left" would blame the tests."""
    kind = "list" if isinstance(node.value, list) else "mapping"
    return node.refuse(
        f"an empty {kind}: each test runs against every prompt and provider, so none would "
        f"run; give at least one, {one}",
        droppable=False,
    )
