# One entry point for set-up, the demo and the checks. Targets create the virtualenv on
# first use, so each of them works on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test test-frameworks test-promptfoo test-real-model lint lock

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

## Run the bundled example with the mock provider and print the PR comment it would post.
demo: $(VENV)/.installed
	$(BIN)/evalward run . --mock-script examples/mock-replies.yaml

## Lint, format check, type check and the whole test suite.
test: $(VENV)/.installed
	@# The HTML report test drives headless Chromium; install Debian's if we can (root + apt).
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
	  || echo "note: no chromium; the HTML report browser test will be skipped"
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n auto

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

## Re-pin the action image's dependencies and build backend, with the hash of every file
## PyPI has for each pin (`pip install --require-hashes`). Keeps the current pins; bump them
## with `make lock UPGRADE=--upgrade`. The backend's pin is pyproject's [build-system] one.
lock:
	rm -rf /tmp/evalward-lock && $(PYTHON) -m venv /tmp/evalward-lock
	/tmp/evalward-lock/bin/pip install --quiet uv
	sed -n 's/^requires = \["\(hatchling==[0-9.]*\)"\]$$/\1/p' pyproject.toml \
	  | /tmp/evalward-lock/bin/uv pip compile pyproject.toml - --generate-hashes --quiet \
	    --python-version 3.12 --python-platform linux --custom-compile-command 'make lock' \
	    --output-file requirements.lock $(UPGRADE)
