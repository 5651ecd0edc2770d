"""Streaming parsers pickle and copy mid-stream: the state is data, and a copy made at any
point and fed the same rest gives exactly the events and message of the original (for
checkpoints, and for forked decoding: beam or speculative search forks its parser).

Property: every bundled family, on its sample replies (tests/test_bundled_fuzz.py's,
mutated), with seeded random chunkings and cut points; a failure prints the case.
"""

from __future__ import annotations

import copy
import importlib.util
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

import respc

_FUZZ_PATH = Path(__file__).resolve().parent / "test_bundled_fuzz.py"
_spec = importlib.util.spec_from_file_location("_respc_bundled_fuzz_pickle", _FUZZ_PATH)
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

FORKS = {
    "pickle": lambda p: pickle.loads(pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL)),
    "pickle-0": lambda p: pickle.loads(pickle.dumps(p, protocol=0)),
    "deepcopy": copy.deepcopy,
    "copy": copy.copy,
}


def _rest(parser, chunks: list[str]) -> tuple:
    events = []
    try:
        for chunk in chunks:
            events += parser.feed(chunk)
        message, final = parser.finalize()
    except Exception as error:  # noqa: BLE001 - the same error is part of "the same result"
        return events, type(error).__name__, str(error)
    return events, message, final


@pytest.mark.parametrize("name", fuzz.FAMILIES)
def test_a_copy_made_mid_stream_goes_on_like_the_original(name):
    _, seeds, pieces = fuzz._family(name)
    compiled = respc.load(name)
    rng = random.Random(f"pickle-{name}")
    for case in range(8):
        seed_name, text, prefix, tools = rng.choice(seeds)
        text = fuzz._mutate(rng, text, pieces) if case % 2 else text
        chunks = fuzz._chunks(rng, text)
        cut = rng.randint(0, len(chunks))
        options = {"spans": True, "on_malformed": "event"} if case % 3 == 0 else {}
        original = compiled.parser(prefix=prefix if case % 4 else "", tools=tools, **options)
        try:
            for chunk in chunks[:cut]:
                original.feed(chunk)
        except ValueError:
            continue  # a malformed region raised: nothing to fork
        forks = {how: fork(original) for how, fork in FORKS.items()}
        expected = _rest(original, chunks[cut:])
        for how, forked in forks.items():
            assert type(forked) is type(original)
            got = _rest(forked, chunks[cut:])
            assert got == expected, f"{name} case {case} ({how} after {cut} of {len(chunks)} chunks): {chunks!r}"


def test_copies_are_independent():
    parser = respc.load("qwen3").parser(prefix="")
    parser.feed("<think>abc")
    twin = copy.copy(parser)
    parser.feed(" more</think>A")
    twin.feed("</think>B")
    assert parser.finalize()[0] == {"role": "assistant", "reasoning_content": "abc more", "content": "A"}
    assert twin.finalize()[0] == {"role": "assistant", "reasoning_content": "abc", "content": "B"}


RUNTIME_TEMPLATE = {
    "start_anchor": "<A>",
    "fields": {
        "content": {"content": "text"},
        "calls": {"open": "<c>", "close": "</c>", "content": "json", "repeats": True},
    },
}


#: a new interpreter: unpickles a parser from stdin, feeds it the rest, pickles the result out
_CHILD = """
import pickle, sys
parser, rest = pickle.loads(sys.stdin.buffer.read())
events = []
for chunk in rest:
    events += parser.feed(chunk)
message, final = parser.finalize()
sys.stdout.buffer.write(pickle.dumps((events, message, final)))
"""


@pytest.mark.parametrize("template", ["qwen3", RUNTIME_TEMPLATE], ids=["bundled", "compiled-at-run-time"])
def test_a_pickled_parser_goes_on_in_another_process(template):
    compiled = respc.compile_template(template)
    if template == "qwen3":
        text = '<think>hm</think>Hi <tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'
        rest = [text[11:]]
    else:
        text = 'x<c>{"a": [1, 2]}</c>y<c>{"b"'
        rest = [text[11:], ": 2}</c> z"]
    parser = compiled.parser(prefix="")
    parser.feed(text[:11])
    # (a fresh interpreter, as another machine's would be: nothing of this one is loaded there)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD], input=pickle.dumps((parser, rest)), capture_output=True, timeout=120
    )
    assert child.returncode == 0, child.stderr.decode(errors="replace")
    assert pickle.loads(child.stdout) == _rest(parser, rest)
