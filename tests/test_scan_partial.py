"""Partial searches stay linear: runtime/scan.search_partial and the ``_ANY`` patterns.

The regex module's partial search of a pattern it tries at every start (a lookbehind, a
whitespace run or a class first: compiler/regexinfo.skips_ahead is false) looks for the
pattern's required literal again from each start to the end of the text: quadratic in the
text searched, which the counts of tests/test_linear_work.py cannot see (they count the
characters handed to the regex module, not its own work). Streamed, hyperclovax-seed-think-14b
took 1.7 s at 32,000 spaces before a tool call and 27 s at 128,000 (16x for 4x); every
family's first tool sample is checked here. No time is measured: the first test checks that
no such partial search spans a long text, the second that search_partial gives exactly what
the regex module's partial search gives.
"""

from __future__ import annotations

import random

import pytest

import respc
from respc.compiler.regexinfo import skips_ahead
from respc.runtime import scan as _scan
from test_linear_work import FAMILIES, Work, _first_tool_case, _pure, _stream_work  # (the same samples)

RUN = 2 * _scan.LONG_PARTIAL  # spaces at a boundary: a released hold rescans them in one search
CASES = 120  # random texts per pattern
ANYWHERE = "|(?!)"  # what an _ANY pattern adds to its pattern (see scan.search_partial)


def _module(name: str):
    compiled = respc.load(name)
    return compiled, __import__(compiled.Parser.__module__, fromlist=["_"])


class Watched:
    """Stands in for one compiled pattern of a generated module, noting its partial searches."""

    def __init__(self, rx, name: str, seen: list) -> None:
        self._rx = rx
        self._name = name
        self._seen = seen
        self._quadratic = not skips_ahead(rx.pattern) and not rx.pattern.endswith(ANYWHERE)

    def __getattr__(self, name):
        return getattr(self._rx, name)

    def search(self, buf, pos=0, endpos=None, **kw):
        if kw.get("partial") and self._quadratic and len(buf) - pos > _scan.LONG_PARTIAL:
            self._seen.append((self._name, len(buf) - pos))
        return self._rx.search(buf, pos, len(buf) if endpos is None else endpos, **kw)


def _boundaries(compiled, case: dict, tools) -> list[int]:
    out = case["output"]
    parser = compiled.parser(prefix=case["prefix"], tools=tools, spans=True)
    base = len(compiled.Parser.cut_prefix(case["prefix"])) if case["prefix"] else 0
    events = list(parser.initial_events) + parser.feed(out) + parser.finalize()[1]
    found = set()
    for event in events:
        if isinstance(event, dict) and event["type"] in ("region_open", "region_close"):
            for k in (event["start"] - base, event["end"] - base):
                if 0 <= k <= len(out):
                    found.add(k)
    return sorted(found)


@pytest.mark.parametrize("name", FAMILIES)
def test_no_partial_search_reads_a_long_text_from_every_start(monkeypatch, name):
    """A run of spaces at every delimiter boundary of the family's first tool sample, streamed
    in 64-character chunks (the run is held, then rescanned once a character ends it) and fed
    whole in one chunk (a long chunk of text): no partial search of a pattern tried at every
    start spans more than LONG_PARTIAL characters (scan.search_partial takes it in two steps)."""
    _pure()
    compiled, module = _module(name)
    seen: list = []
    for key, value in list(vars(module).items()):
        if key.startswith("_RE_") and hasattr(value, "search"):
            monkeypatch.setattr(module, key, Watched(value, key, seen))
    data, case = _first_tool_case(name)
    tools = data.get("tools")
    out = case["output"]
    for at in _boundaries(compiled, case, tools):
        text = out[:at] + " " * RUN + out[at:]
        for size in (64, len(text)):
            _stream_work(compiled, Work(), case, tools, text, size)
            assert not seen, (
                f"{name}: a partial search of {seen[0][0]} over {seen[0][1]} characters (quadratic in the regex "
                f"module), {RUN} spaces at {at} ({out[max(0, at - 12) : at]!r} | {out[at : at + 12]!r}), "
                f"{size}-character chunks"
            )


def _pairs() -> list[tuple[str, str, object, object]]:
    """(family, name, pattern, its _ANY pattern) of every bundled module."""
    found = []
    for name in FAMILIES:
        _, module = _module(name)
        for key, value in vars(module).items():
            if key.startswith("_RE_") and "_ANY" in key:
                original = getattr(module, key.replace("_ANY", ""))
                found.append((name, key, original, value))
    return found


def _pieces(pattern: str) -> list[str]:
    """Literal bits of ``pattern`` (its escapes undone, roughly) to build texts from."""
    text = pattern.replace("\\s", " ").replace("\\n", "\n")
    bits = [bit for bit in text.replace("\\", "").replace("(?:", "(").split("(") if bit]
    return [bit[:12] for bit in bits] + [" ", "  ", "\n", "x", "}", "{", '"', ",", "ab"]


def _held(match, text: str):
    """``match``, or None for an empty partial match at the end of the text: it holds nothing,
    as no match does (the regex module reports one there for some patterns whose
    partial search from an earlier start finds nothing: ``(?<=\\})\\s*\\}\\s*`` in ``'x *'``)."""
    if match is not None and match.partial and match.start() == len(text):
        return None
    return match


def test_search_partial_is_the_partial_search(monkeypatch):
    """scan.search_partial(rx, rx_ANY, text, pos) is rx.search(text, pos, partial=True): the
    same span, the same partial flag and the same groups, for every bundled pattern that has
    an _ANY variant, on random texts made of its pieces (the two-step path forced: a
    LONG_PARTIAL of 0)."""
    monkeypatch.setattr(_scan, "LONG_PARTIAL", 0)
    pairs = _pairs()
    assert pairs, "no _ANY pattern in the bundled modules"
    rng = random.Random("search-partial")
    for family, key, rx, anywhere in pairs:
        assert anywhere.pattern == rx.pattern + ANYWHERE and anywhere.flags == rx.flags, (family, key)
        pieces = _pieces(rx.pattern)
        for case in range(CASES):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
            pos = rng.randint(0, len(text))
            want = _held(rx.search(text, pos, partial=True), text)
            got = _held(_scan.search_partial(rx, anywhere, text, pos), text)
            shown = f"{family} {key} case {case}: {text!r} from {pos}"
            if want is None:
                assert got is None, shown
                continue
            assert got is not None, shown
            assert (got.span(), got.partial, got.groupdict()) == (want.span(), want.partial, want.groupdict()), shown
