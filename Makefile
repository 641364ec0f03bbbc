# One entry point for set-up, the demo and the checks. Targets create the virtualenv on
# first use, so each of them works on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo bench bench-airline bench-all test test-latest test-frameworks test-promptfoo test-real-model lint lock

# Exactly what requirements-dev.lock names, every file checked against its hash, then the
# project itself without dependencies: a fresh clone tests what everyone else tested. pip
# installs the lock's uv (its hashes checked too), and uv the rest: 12 s where pip took 48 s
# on a fresh clone. Bytecode is compiled at install, in parallel, as pip does: the agent
# users, who may not write into the virtualenv, would otherwise compile an SDK at every start.
# LATEST=1 (make test-latest) resolves the newest versions pyproject.toml allows instead.
$(VENV)/.installed: pyproject.toml requirements-dev.lock
	rm -rf $(VENV) && $(PYTHON) -m venv $(VENV)
ifeq ($(LATEST),1)
	$(BIN)/python -m pip install --quiet --upgrade -e '.[dev]'
else
	awk '/^uv==/{p=1} p{print} p&&!/\\$$/{exit}' requirements-dev.lock > $(VENV)/uv.txt
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(VENV)/uv.txt
	$(BIN)/uv pip install --quiet --python $(BIN)/python --require-hashes --no-deps --compile-bytecode \
	  -r requirements-dev.lock
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .
endif
	touch $@

## Run the bundled example with the mock provider and print the PR comment it would post.
## The virtualenv's Python comes first on PATH: the MCP example's server needs the MCP SDK.
demo: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/evalward run . --mock-script examples/mock-replies.yaml

## The speed table of docs/benchmarks.md (bench/speed.py): the 1,000-fixture run, start-up,
## --help and validate, conversations, SQLite and service playgrounds, with the load noted.
## BEFORE='main=/tmp/evalward-main/src' alternates every run with that checkout's evalward
## (`git archive main src | tar -x -C /tmp/evalward-main`); P1_BASELINE the same for the
## 1,000-fixture run alone (an older release). Takes 10-20 minutes on 2 cores. Then the
## airline example's gates (bench/airline.py, `make bench-airline` alone): tau2-bench's airline
## domain, a correct and a buggy pull request; its first run installs tau2 from PyPI.
BENCH_RUNS ?= 5
bench: $(VENV)/.installed
	$(BIN)/python bench/speed.py --runs $(BENCH_RUNS) $(foreach b,$(P1_BASELINE),--p1-baseline $(b)) \
	  $(foreach b,$(BEFORE),--before $(b))
	$(MAKE) bench-airline

bench-airline: $(VENV)/.installed
	$(BIN)/python bench/airline.py --parallel 2

## Every figure of docs/benchmarks.md (bench/all.py): each section's script in turn, its
## section rewritten with the date, the machine and the load; about an hour on 2 cores. The
## promptfoo sections run when `make test-promptfoo` has installed it; ONLY=scale,comment runs
## those sections only; ALL_FLAGS=--suite adds the whole test suite on a fresh clone.
bench-all: $(VENV)/.installed
	$(BIN)/python bench/all.py --write $(if $(wildcard $(PROMPTFOO)),--promptfoo $(PROMPTFOO)) \
	  $(if $(ONLY),--only $(ONLY)) $(ALL_FLAGS)

## Lint, format check, type check and the whole test suite, over one worker more than the
## cores: the tests wait on the processes they start (a fifth of two cores idle with a worker
## each), which a third fills (docs/benchmarks.md#the-test-suite).
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
test: $(VENV)/.installed
	@# The HTML report test drives headless Chromium; install Debian's if we can (root + apt).
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
	  || echo "note: no chromium; the HTML report browser test will be skipped"
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

## The same checks on the newest versions pyproject.toml allows, in a virtualenv of their own
## made afresh each time: an upstream release that would break a user shows here first.
test-latest:
	rm -rf .venv-latest
	$(MAKE) test VENV=.venv-latest LATEST=1

## Every framework example (examples/frameworks/) through the action's path: each installs its
## framework from PyPI or npm, so it is not part of `make test` (which runs one of them).
test-frameworks: $(VENV)/.installed
	$(BIN)/python -m pytest -q -m frameworks tests/frameworks

## promptfoo itself and `evalward import promptfoo` + `evalward run` on promptfoo's documented
## examples (tests/data/promptfoo), against the same model server: the same verdict on every
## test. promptfoo is pinned and installed from npm (about 1.4 GB) into PROMPTFOO_CACHE on
## first use; it runs offline, as bench/p1_promptfoo.py runs it. Not part of `make test`.
PROMPTFOO_VERSION ?= 0.121.20
PROMPTFOO_CACHE ?= $(HOME)/.cache/evalward-promptfoo
PROMPTFOO := $(PROMPTFOO_CACHE)/node_modules/.bin/promptfoo
test-promptfoo: $(VENV)/.installed
	[ "$$($(PROMPTFOO) --version 2>/dev/null | tail -n 1)" = "$(PROMPTFOO_VERSION)" ] || \
	  npm install --prefix $(PROMPTFOO_CACHE) --no-audit --no-fund promptfoo@$(PROMPTFOO_VERSION)
	EVALWARD_PROMPTFOO=$(PROMPTFOO) $(BIN)/python -m pytest -q -s -m promptfoo tests/promptfoo

## Run an example suite against a real model server: llama-cpp-python serving SmolLM2-135M on
## the CPU, on loopback (docs/providers.md). Not part of `make test`. The first run compiles
## llama-cpp-python (about 9 minutes on 2 cores) and keeps it in REAL_MODEL_CACHE.
REAL_MODEL_CACHE ?= $(HOME)/.cache/evalward-real-model
test-real-model: $(VENV)/.installed
	server_python="$$(PYTHON=$(PYTHON) scripts/real-model/install.sh $(REAL_MODEL_CACHE))" && \
	  EVALWARD_REAL_MODEL_PYTHON="$$server_python" \
	  $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/real_model

lint: $(VENV)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## Re-pin both locks with the hash of every file PyPI has for each pin (`pip install
## --require-hashes`): requirements.lock, what the action image installs (Python 3.12, the
## build backend pinned in pyproject's [build-system]), and requirements-dev.lock, what `make
## test` installs (every Python from 3.11, the dev extra), whose shared pins are the image's.
## Keeps the current pins; `make lock UPGRADE=--upgrade` moves them to the newest allowed.
LOCK_TOOL := /tmp/evalward-lock
lock:
	rm -rf $(LOCK_TOOL) && $(PYTHON) -m venv $(LOCK_TOOL)
	$(LOCK_TOOL)/bin/pip install --quiet "$$(grep -o '^uv==[0-9.]*' requirements.lock)"
	sed -n 's/^requires = \["\(hatchling==[0-9.]*\)"\]$$/\1/p' pyproject.toml > $(LOCK_TOOL)/backend.txt
	$(LOCK_TOOL)/bin/uv pip compile pyproject.toml $(LOCK_TOOL)/backend.txt --generate-hashes \
	  --quiet --python-version 3.12 --python-platform linux --custom-compile-command 'make lock' \
	  --output-file requirements.lock $(UPGRADE)
	$(LOCK_TOOL)/bin/uv pip compile pyproject.toml $(LOCK_TOOL)/backend.txt --extra dev \
	  --universal --python-version 3.11 --generate-hashes --quiet -c requirements.lock \
	  --custom-compile-command 'make lock' --output-file requirements-dev.lock $(UPGRADE)
