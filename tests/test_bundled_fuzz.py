"""Seeded fuzz of every bundled template (its generated module, compiled by ``pip install .``)
against the reference, on mutations of the family's realistic sample replies.

The differential suite draws random templates, which compile at run time; this drives the
bundled parsers, whole and streamed, over each family's sample outputs
(``templates/samples/<name>.json``, with their prefixes and tools) cut short, with the
family's own delimiters (read from its template: literals, fragments of them, the literal runs
of its patterns and what those patterns match in the samples) inserted, doubled or dropped,
and whitespace and JSON/XML bodies edited. Every case compares the message (or the error
class), and the streamed cases every event. A failure prints the family, the case number (the
RNG is seeded by the family's name), the seed sample and the mutated text.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
import regex

_HERE = Path(__file__).resolve().parent / "differential"
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from optional import needs

needs("transformers.utils.chat_parsing")

pytestmark = pytest.mark.slow  # (the quick tier, pytest -m "not slow", leaves this module out)

import harness  # noqa: E402
from transformers.utils import chat_parsing  # noqa: E402  (the behavioural reference)

import respc  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
SAMPLES = TEMPLATES / "samples"
FAMILIES = sorted(p.stem for p in SAMPLES.glob("*.json"))
#: cases per family (every STREAM_EVERY-th one also streamed): the 44 families take about 45 s
#: on a 2-core machine
CASES = 2500
STREAM_EVERY = 4
#: pieces every family's edits insert besides its own delimiters: JSON, XML and call-syntax
#: bits, whitespace, numbers the JSON parsers treat specially, non-ASCII text
GENERIC_PIECES = [
    "<|", "|>", "<", ">", "</", "{", "}", "[", "]", "(", ")", '"', "'", ",", ":", "=", "\n", " ", "\t",
    "  \n ", "\n\n", "null", "true", "1e400", "12345678901234567890123", "NaN", "é", "\u2028", "\\u00e9",
]
_PATTERN_KEYS = ("start_anchor_pattern", "open_pattern", "close_pattern")
_LITERAL_KEYS = ("start_anchor", "open", "close")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_GROUP_START = regex.compile(r"\(\?(?:P<\w+>|P=\w+\)|&\w+\)|R\)|<\w+>|<=|<!|[:=!>|]|[a-zA-Z]+\)|[a-zA-Z-]+:)?")
_QUANTIFIER = regex.compile(r"(?:[?*+]|\{\d*(?:,\d*)?\})[?+]?")


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _literal_runs(pattern: str) -> list[str]:
    """The runs of literal text in a regex (escapes resolved; classes, groups' syntax,
    anchors and quantifiers end a run; a quantified character stays in its run)."""
    runs, cur, i = [], "", 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in _ESCAPES:
                cur += _ESCAPES[nxt]
            elif nxt.isalnum():  # \s \d \w \b \A \Z \G \p{..}, backreferences
                runs.append(cur)
                cur = ""
            else:
                cur += nxt
            i += 2
        elif c == "[":  # a character class: skipped
            runs.append(cur)
            cur = ""
            j = i + 1 + (pattern[i + 1 : i + 2] == "^")
            j += pattern[j : j + 1] == "]"
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
        elif c == "(":
            runs.append(cur)
            cur = ""
            i += len(_GROUP_START.match(pattern, i).group(0)) or 1
        elif (m := _QUANTIFIER.match(pattern, i)) is not None:
            runs.append(cur)
            cur = ""
            i = m.end()
        elif c in ")|.^$":
            runs.append(cur)
            cur = ""
            i += 1
        else:
            cur += c
            i += 1
    runs.append(cur)
    return [run for run in runs if len(run.strip()) >= 2]


def _pieces(template: dict, texts: list[str], end_tokens: list[str]) -> list[str]:
    """The family's delimiters as edits insert them: literals and their two halves, the
    literal runs of patterns (and of content_args patterns, such as XML tag patterns), what
    each delimiter pattern matches in the sample texts, and the family's end-of-turn tokens."""
    literals = _strings(template.get("start_anchor")) + end_tokens
    patterns = _strings(template.get("start_anchor_pattern"))
    for spec in template.get("fields", {}).values():
        for key in _LITERAL_KEYS:
            literals += _strings(spec.get(key))
        for key in _PATTERN_KEYS:
            patterns += _strings(spec.get(key))
        for key, value in (spec.get("content_args") or {}).items():
            if key.endswith("pattern"):
                literals += [run for p in _strings(value) for run in _literal_runs(p)]
            else:
                literals += [s for s in _strings(value) if s.strip()]
    pieces = set(GENERIC_PIECES)
    for literal in literals:
        pieces.add(literal)
        if len(literal) >= 4:  # a marker cut in two: the halves a stream or a cut leaves
            pieces.update((literal[: len(literal) // 2], literal[len(literal) // 2 :]))
    for pattern in patterns:
        pieces.update(_literal_runs(pattern))
        try:
            compiled = regex.compile(pattern)
        except regex.error:  # pragma: no cover - the bundled templates all compile
            continue
        found = set()
        for text in texts:
            for m in compiled.finditer(text):
                if m.group(0) and len(found) < 8:
                    found.add(m.group(0))
        pieces.update(found)
    return sorted(p for p in pieces if p)


def _family(name: str) -> tuple[dict, list[tuple[str, str, str, list | None]], list[str]]:
    template = json.loads((TEMPLATES / f"{name}.json").read_text(encoding="utf-8"))
    samples = json.loads((SAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    seeds = [
        (case["name"], case["output"], case["prefix"], samples.get("tools") if case.get("tools", True) else None)
        for case in samples["cases"]
    ]
    texts = [s[1] for s in seeds] + [s[2] for s in seeds]
    return template, seeds, _pieces(template, texts, _strings(samples.get("end_tokens")))


def _mutate(rng: random.Random, text: str, pieces: list[str]) -> str:
    roll = rng.random()
    if roll < 0.15:
        return text[: rng.randint(0, len(text))]  # cut short
    chars = text
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(chars))
        kind = rng.random()
        if kind < 0.45:
            chars = chars[:at] + rng.choice(pieces) + chars[at:]
        elif kind < 0.7:
            chars = chars[:at] + chars[at + rng.randint(1, 12) :]
        elif kind < 0.85:  # drop or double a delimiter the text holds
            present = [p for p in pieces if len(p) > 1 and p in chars]
            if present:
                piece = rng.choice(present)
                mark = chars.find(piece, at)
                mark = chars.find(piece) if mark < 0 else mark
                end = mark + len(piece)
                chars = chars[:mark] + (piece * 2 if rng.random() < 0.5 else "") + chars[end:]
        else:  # drop or double a stretch around a <...> marker
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


def test_every_bundled_family_is_fuzzed():
    assert FAMILIES == respc.bundled_templates()


@pytest.mark.parametrize("name", FAMILIES)
def test_bundled_parsers_match_the_reference_on_mutated_replies(name):
    template, seeds, pieces = _family(name)
    compiled = respc.load(name)
    rng = random.Random(f"bundled-{name}")
    failures = []
    for case in range(CASES):
        seed_name, text, prefix, tools = rng.choice(seeds)
        mutated = _mutate(rng, text, pieces)
        case_tools = tools if rng.random() < 0.7 else None
        case_prefix = prefix if rng.random() < 0.8 else ""
        ref = harness.run_oneshot(
            lambda: chat_parsing.parse_response(mutated, template, prefix=case_prefix, tools=case_tools), 30
        )
        got = harness.run_oneshot(lambda: compiled.parse(mutated, prefix=case_prefix, tools=case_tools), 30)
        diff = harness.compare(ref, got, False)
        if diff is None and case % STREAM_EVERY == 0:  # streamed too, every event
            chunks = _chunks(rng, mutated)
            ref = harness.run_stream(
                lambda: chat_parsing.ResponseParser(template, prefix=case_prefix, tools=case_tools), chunks, 60
            )
            got = harness.run_stream(lambda: compiled.parser(prefix=case_prefix, tools=case_tools), chunks, 60)
            diff = harness.compare(ref, got, False)
        if diff is not None:
            failures.append(
                f"{name} case {case} (from sample {seed_name!r}, prefix={'sample' if case_prefix else 'none'}, "
                f"tools={'yes' if case_tools else 'no'}): {diff}; text={mutated!r}"
            )
            if len(failures) >= 3:
                break
    assert not failures, "\n".join(failures)
