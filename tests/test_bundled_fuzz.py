"""Seeded fuzz of the bundled templates (their generated modules, compiled by
``pip install .``) against the reference, on mutations of the realistic sample replies.

The differential suite draws random templates, which compile at run time; this drives the
four bundled parsers, whole and streamed, over the sample replies cut short, with
delimiters broken, doubled or dropped, whitespace and JSON/XML bodies edited. Every case
compares the message (or the error class), and the streamed cases every event.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent / "differential"
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import harness  # noqa: E402
from transformers.utils import chat_parsing  # noqa: E402  (the behavioural reference)

import respc  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "bench" / "samples"
NAMES = ["smollm3", "qwen3", "gpt_oss", "cohere"]
#: pieces that edits insert: the templates' markers and their fragments, JSON and XML bits
PIECES = [
    "<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>", "<|endoftext|>", "<function=f>",
    "<parameter=x>", "</parameter>", "</function>", "<|channel|>", "analysis", "final", "commentary",
    " to=functions.f", "<|message|>", "<|end|>", "<|call|>", "<|return|>", "<|start|>assistant",
    "<|constrain|>json", "<|START_THINKING|>", "<|END_THINKING|>", "<|START_ACTION|>", "<|END_ACTION|>",
    "<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|", "|>", "<", ">", "{", "}", "[", "]", '"', ",", ":", "\n",
    " ", "\t", "  \n ", "null", "1e400", "12345678901234567890123", "NaN", "é", "\u2028", "\\u00e9",
]


def _sample(name: str) -> tuple[str, str, list]:
    return (
        (SAMPLES / f"{name}.txt").read_text(encoding="utf-8"),
        (SAMPLES / f"{name}.prefix.txt").read_text(encoding="utf-8"),
        json.loads((SAMPLES / f"{name}.tools.json").read_text(encoding="utf-8")),
    )


def _mutate(rng: random.Random, text: str) -> str:
    roll = rng.random()
    if roll < 0.15:
        return text[: rng.randint(0, len(text))]  # cut short
    chars = text
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(chars))
        kind = rng.random()
        if kind < 0.45:
            chars = chars[:at] + rng.choice(PIECES) + chars[at:]
        elif kind < 0.75:
            chars = chars[:at] + chars[at + rng.randint(1, 12) :]
        else:  # drop or double a stretch around a marker
            mark = chars.find("<", at)
            if mark >= 0:
                end = chars.find(">", mark)
                end = mark + 1 if end < 0 else end + 1
                chars = chars[:mark] + (chars[mark:end] * 2 if rng.random() < 0.5 else "") + chars[end:]
    return chars


def _chunks(rng: random.Random, text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        k = rng.choice([1, 2, 3, 4, 4, 4, 7, 16])
        out.append(text[i : i + k])
        i += k
    return out


@pytest.mark.parametrize("name", NAMES)
def test_bundled_parsers_match_the_reference_on_mutated_replies(name):
    template = respc.load(name).template
    text, prefix, tools = _sample(name)
    rng = random.Random(f"bundled-{name}")
    failures = []
    for case in range(160):
        mutated = _mutate(rng, text)
        case_tools = tools if rng.random() < 0.7 else None
        case_prefix = prefix if rng.random() < 0.8 else ""
        ref = harness.run_oneshot(
            lambda: chat_parsing.parse_response(mutated, template, prefix=case_prefix, tools=case_tools), 30
        )
        got = harness.run_oneshot(
            lambda: respc.load(name).parse(mutated, prefix=case_prefix, tools=case_tools), 30
        )
        diff = harness.compare(ref, got, False)
        if diff is None and case % 8 == 0:  # streamed too, every event
            chunks = _chunks(rng, mutated)
            ref = harness.run_stream(
                lambda: chat_parsing.ResponseParser(template, prefix=case_prefix, tools=case_tools), chunks, 60
            )
            got = harness.run_stream(lambda: respc.load(name).parser(prefix=case_prefix, tools=case_tools), chunks, 60)
            diff = harness.compare(ref, got, False)
        if diff is not None:
            failures.append(f"case {case}: {diff}; text={mutated!r}")
            if len(failures) >= 3:
                break
    assert not failures, "\n".join(failures)
