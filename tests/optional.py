"""Optional test packages: a test module that needs one skips with a reason without it."""

from __future__ import annotations

import sys

import pytest


#: Why each optional package is needed (all come with the test extra: pip install ".[test]").
_OPTIONAL = {
    "transformers": "the behavioural reference (transformers==5.24.0)",
    "hypothesis": "property-based tests",
    "datasets": "HF datasets columns",
    "ray": "Ray Data",
    "pyarrow": "Arrow columns and Parquet files",
    "openai": "the openai client's own stream accumulator",
    "llguidance": "the matcher that runs compiled.grammar()'s Lark grammars",
    "jsonschema": "validating tool arguments against their schema",
    "tokenizers": "a local tokenizer whose markers are special tokens",
    "vllm": "vLLM's parser layer (tests/test_vllm.py): pip install torch==2.13.0 && pip install --no-deps -r tests/requirements-vllm.txt",
}


def needs(*modules: str) -> None:
    """Skip the calling test module (at its top) or test (in its body) unless every module
    can be imported: without the test extra a test that needs an optional package skips
    with a reason instead of failing at collection."""
    caller = sys._getframe(1).f_globals.get("__name__", "?").rpartition(".")[2]
    for module in modules:
        package = module.split(".")[0]
        why = _OPTIONAL.get(package, "an optional package")
        pytest.importorskip(module, reason=f"{caller} needs {package}, {why}: pip install \".[test]\"")
