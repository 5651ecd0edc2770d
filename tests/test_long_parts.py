"""Linear work in a long variable part of a delimiter, for every bundled family.

A delimiter's match may hold parts of any length: a capture (a tool name, a call id), a
``[^<\\s]+``, ``\\w+`` or ``.*?`` span of an open or close pattern. For every sample of every
family (templates/samples/*.json, so families added later are covered), each such part of
each regex delimiter the whole parse matches is lengthened with a long run of its own last
character (a character the part took, so it takes more of it), and the text is streamed in
small chunks: the work must grow linearly with the run (less than GROWTH times for 4x the
run, counted as tests/test_linear_work.py counts it: characters handed to regex calls, the
pure runtime; quadratic work grows 16x), and the streamed message must equal the whole
parse's. (gpt-oss's tool name written channel first, ``<|channel|>commentary
to=functions.NAME``, was rescanned at every chunk: 20,000 characters in 4-character chunks
took 5 s.)

The parts are found from the pattern itself: every unbounded repeat outside lookarounds
(``X*``, ``X+``, ``X{n,}``, of a character class, an escape, ``.``, a literal character or a
group) is wrapped in a capture group of its own, the wrapped pattern is matched where the
parse matched the delimiter, and each group's span (when it took something) is a part.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import regex

import respc
from test_linear_work import FAMILIES, _growth, _mapped, _outcome, _pure, _stream_work, _verdict, _whole_work, counting, delimiter_sources, streamed_message  # noqa: F401

SAMPLES = Path(__file__).resolve().parent.parent / "templates" / "samples"
RUN = 400  # characters added to a part (and 4x that): above the 256 where held runs become lasting holds
CHUNK = 4  # the stream's chunk size (what a token often is)

#: families still super-linear in a long part, and why (strict: one that becomes linear
#: must leave the list)
KNOWN: dict[str, str] = {}  # (muse-glimmer's doubled tool name: held by regexinfo.run_holds)
#: the same with each part lengthened by its own text (many characters of the part's class):
#: a run of one character class is held by regexinfo.run_splits, or by run_holds (the
#: pattern read way by way: its alternatives, its groups with a run inside, a trailing
#: lookahead as text), where every way takes a character the run cannot give; a complete
#: held match that runs to the end is a tail hold (regexinfo.tail_splits, negative
#: lookaheads in its head checked by _lookahead_probes: gigachat3's content close)
KNOWN_MIXED: dict[str, str] = {
    "mistral-small-3.2": "the call id (?P<id>[^\\[\\{]*) follows the name's lookahead (?=\\[CALL_ID\\]...|\\[ARGS\\]|\\{), "
    "which lets the older [ARGS]-less form in: no run split or run hold for a long id (the name's run is held)",
}


def _parts_pattern(pattern: str) -> tuple[str, list[str]]:
    """``pattern`` with every unbounded repeat outside lookarounds wrapped in a group of its
    own (``(?P<_v0>X+)``), and the names of those groups. The wrapped pattern matches what
    ``pattern`` matches, the same way (a capture group changes no match)."""
    spans = []  # (start, end) of each repeated item with its quantifier
    groups = []  # stack of (start, is a lookaround)
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        start = i
        if c == "\\":
            i += 2
            if pattern[i - 1 : i] in ("p", "P", "N") and pattern[i : i + 1] == "{":
                i = pattern.index("}", i) + 1
            elif pattern[i - 1 : i] == "x":
                i += 2
            elif pattern[i - 1 : i] == "u":
                i += 4
        elif c == "[":
            i += 1
            if pattern[i : i + 1] == "^":
                i += 1
            if pattern[i : i + 1] == "]":
                i += 1
            while pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            i += 1
        elif c == "(":
            flags = regex.match(r"\(\?[a-zA-Z]*\)", pattern[i:])
            if flags:
                i += flags.end()
                continue  # (an inline flag, no group)
            groups.append((i, pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i)))
            i += 1
            continue
        elif c == ")":
            start, _ = groups.pop()
            i += 1
        elif c in "|^$":
            i += 1
            continue
        else:
            i += 1
        quantifier = regex.match(r"(?:\*|\+|\{\d*,\})[?+]?", pattern[i:])
        if quantifier is None:
            bounded = regex.match(r"(?:\?|\{\d*(?:,\d*)?\})[?+]?", pattern[i:])
            i += bounded.end() if bounded else 0
            continue
        i += quantifier.end()
        if not any(look for _, look in groups):
            spans.append((start, i))
    opens: dict[int, list[tuple[int, str]]] = {}
    closes: dict[int, int] = {}
    names = []
    for k, (a, b) in enumerate(spans):
        name = f"_v{k}"
        names.append(name)
        opens.setdefault(a, []).append((b, name))
        closes[b] = closes.get(b, 0) + 1
    out = []
    for k in range(n + 1):
        out.append(")" * closes.get(k, 0))
        for _, name in sorted(opens.get(k, []), reverse=True):  # the outer group first
            out.append(f"(?P<{name}>")
        if k < n:
            out.append(pattern[k])
    return "".join(out), names


def _delimiter_patterns(template: dict) -> dict[tuple[str, str], str]:
    """``(field, "region_open" | "region_close") -> pattern`` of each regex delimiter."""
    found = {}
    for name, spec in template["fields"].items():
        for key, kind in (("open_pattern", "region_open"), ("close_pattern", "region_close")):
            if key in spec:
                found[name, kind] = spec[key]
    return found


def long_parts(name: str) -> list[tuple[dict, dict, str, int, str]]:
    """``(data, case, where, at, part)`` for each variable part of each regex delimiter match
    of each sample of ``name``: the ``part`` ends at ``at`` in the sample's output (see
    :func:`lengthened`), ``where`` says which part it is."""
    compiled = respc.load(name)
    data = json.loads((SAMPLES / f"{name}.json").read_text())
    patterns = _delimiter_patterns(compiled.template)
    wrapped = {key: _parts_pattern(p) for key, p in patterns.items()}
    seen = set()
    out = []
    for case in data["cases"]:
        prefix = case["prefix"]
        base = compiled.Parser.cut_prefix(prefix) if prefix else ""
        full = base + case["output"]
        parser = compiled.parser(prefix=prefix, tools=data.get("tools"), spans=True)
        try:
            events = list(parser.initial_events) + parser.feed(case["output"]) + parser.finalize()[1]
        except (ValueError, TypeError):
            continue
        for event in events:
            if not isinstance(event, dict) or (event.get("field"), event["type"]) not in wrapped or "start" not in event:
                continue
            source, names = wrapped[event["field"], event["type"]]
            original = regex.compile(patterns[event["field"], event["type"]], regex.DOTALL).match(full, event["start"])
            m = regex.compile(source, regex.DOTALL).match(full, event["start"])
            assert (m and m.span()) == (original and original.span()), (name, source)
            if m is None or m.end() != event["end"]:
                continue
            for group in names:
                a, b = m.span(group)
                if b <= a or a < len(base):
                    continue
                c = full[b - 1]
                key = (event["field"], event["type"], group, c, full[a:b])
                if key in seen:
                    continue
                seen.add(key)
                at = b - len(base)
                key = "open_pattern" if event["type"] == "region_open" else "close_pattern"
                where = f"{case['name']}: fields.{event['field']}.{key}, part {full[a:b]!r} ({group})"
                out.append((data, case, where, at, full[a:b]))
    return out


def lengthened(case: dict, at: int, n: int, part: str | None = None) -> str:
    """The sample's output with the part that ends at ``at`` longer by ``n`` characters: its
    last one repeated, or (given the ``part``) its own text repeated."""
    out = case["output"]
    run = out[at - 1] * n if part is None else (part * (n // len(part) + 1))[:n]
    return out[:at] + run + out[at:]


def _what(part: str | None, where: str, case: dict, at: int, run: str) -> str:
    more = f"{case['output'][at - 1]!r} repeated" if part is None else "its own text repeated"
    return f"{where} longer by {run} characters ({more})"


def _linear(counting, name: str, mixed: bool, known: dict[str, str]) -> None:
    compiled, work = counting(name)
    found = []
    for data, case, where, at, part in long_parts(name):
        tools = data.get("tools")
        own = part if mixed else None
        texts = [lengthened(case, at, k * RUN, own) for k in (1, 4)]
        label = _what(own, where, case, at, f"{RUN} and {4 * RUN}")
        stream = [_stream_work(compiled, work, case, tools, t, CHUNK) for t in texts]
        found += _growth(name, f"streamed in {CHUNK}-character chunks, {label}", *stream)
        whole = [_whole_work(compiled, work, case, tools, t) for t in texts]
        found += _growth(name, f"whole, {label}", *whole)
    _verdict(name, found, known)


@pytest.mark.parametrize("name", FAMILIES)
def test_long_parts_are_linear(counting, name):
    """Each part lengthened by a run of its last character (regexinfo.run_splits and
    any_pump's lasting holds keep those linear)."""
    _linear(counting, name, False, KNOWN)


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_long_mixed_parts_are_linear(counting, name):
    """Each part lengthened by its own text repeated (a long tool name of many letters): only
    a run of one character class held by regexinfo.run_splits or run_holds keeps that linear."""
    _linear(counting, name, True, KNOWN_MIXED)


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_long_parts_parse_as_whole(name):
    """The lasting holds that keep long parts linear change nothing: streamed in small
    chunks, each lengthened sample gives the message (or the error) of a whole parse."""
    _pure()
    compiled = respc.load(name)
    for data, case, where, at, part in long_parts(name):
        tools = data.get("tools")
        for own in (None, part):
            text = lengthened(case, at, RUN, own)
            whole = _outcome(lambda: compiled.Parser.parse_whole(case["prefix"], text, tools))
            for size in (CHUNK, 7):
                got = _outcome(lambda: streamed_message(compiled, case, tools, text, size))
                assert got == whole, f"{name}: {_what(own, where, case, at, str(RUN))}, {size}-character chunks"


def test_parts_are_found():
    """The parts scan sees what it must: gpt-oss's tool name in both orders of its header,
    and a repeat in a group, a lazy span and a counted repeat are wrapped."""
    wrapped, names = _parts_pattern(r"a(?:b|c)+x[^<]*?(?=y+)\w{2,}(?P<n>.*?)z{1,3}")
    assert wrapped == r"a(?P<_v0>(?:b|c)+)x(?P<_v1>[^<]*?)(?=y+)(?P<_v2>\w{2,})(?P<n>(?P<_v3>.*?))z{1,3}"
    assert names == ["_v0", "_v1", "_v2", "_v3"]
    parts = [where for _, _, where, _, _ in long_parts("gpt-oss") if "'get_weather'" in where]
    assert any("recipient_in_channel" in w for w in parts) and any("reasoning_tool_call" in w for w in parts), parts


@pytest.mark.parametrize("name", FAMILIES)
def test_pumped_parts_match_alike(name):
    """regexinfo.any_pump's bound: each delimiter of the family with a bound ``K`` matches and
    searches alike, from the start and from where each delimiter of the sample begins, with
    each long part ``2K + 9`` or one more characters longer (its last one repeated),
    partially or not: where the run's length is all that differs, nothing else does (what
    the lasting holds of runs of one character rely on, runtime/base.py's _check_run)."""
    from respc.compiler.regexinfo import any_pump

    compiled = respc.load(name)
    bounds = {source: any_pump(source) for source in delimiter_sources(compiled.template)}
    for data, case, where, at, _ in long_parts(name):
        out = case["output"]
        starts = sorted({0, *(k for k in range(at) if out[k] in "<[{\"' \n" or k == at - 1)})
        for source, k in bounds.items():
            if k is None:
                continue
            rx = regex.compile(source, regex.DOTALL)
            n = 2 * k + 9
            texts = [lengthened(case, at, size) for size in (n, n + 1)]
            for start in starts:
                for partial in (False, True):
                    for how in ("match", "search"):
                        got = [
                            _mapped(getattr(rx, how)(text, start, partial=partial), at, size)
                            for text, size in zip(texts, (n, n + 1))
                        ]
                        assert got[0] == got[1], (name, where, n, source, start, how, partial, got)
