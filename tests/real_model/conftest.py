"""Tests against a real model server, run by `make test-real-model` only: it installs the
server and sets EVALWARD_REAL_MODEL_PYTHON to the Python that can start it."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("EVALWARD_REAL_MODEL_PYTHON") else ["test_*.py"]
