"""Linear work in long whitespace runs and in many tool calls, for every bundled family.

For each family's first tool sample (templates/samples/*.json, so families added later are
covered), a run of spaces is put at every delimiter boundary (where a region opens or
closes, and inside a delimiter's match where a literal part meets the rest), and the work
the parser asks for is counted at run lengths n and 4n, whole and streamed: it must grow
linearly (less than 5x for 4x the run; quadratic work grows 16x). The same for the sample's
tool calls repeated n and 4n times. No time is measured (the machine is noisy).

Work is counted with the pure runtime (a counting stand-in for each compiled pattern of
the generated module, and, for whole outputs, a ``str`` whose searches count):

* a regex ``match`` at ``p`` reads the whitespace run there when the pattern can start
  with whitespace, and up to where its match ends (all of the text for a partial one);
* a regex ``search`` from ``p`` tries every start up to where its match starts (all of the
  text when there is none), and at each start reads what a ``match`` there would; a start
  inside a whitespace run (not where the search began) reads the run only where some way
  of matching the pattern can take a whitespace character there (the guards,
  regexinfo.ws_guarded, rule that out: ``(?:\\G|(?<!\\s))\\s*x``, ``(?<=\\n)[ \\t]*x``);
* ``str.find`` / ``startswith`` read from their start to what they find (or their end).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import regex

import respc
from respc.runtime import base as _base
from respc.runtime import scan as _scan
from respc.runtime.scan import REGEX_WS

try:
    from respc.compiler.regexinfo import WS_GUARD
except ImportError:  # (before the guard existed: the test still runs, and shows the work)
    WS_GUARD = "(?:\\G|(?<!\\s))"

SAMPLES = sorted((Path(__file__).resolve().parent.parent / "templates" / "samples").glob("*.json"))
FAMILIES = [path.stem for path in SAMPLES]
RUN = 300  # spaces at a boundary (and 4x that): above the 256 where held runs become lasting holds
CALLS = 40  # tool calls (and 4x that)
GROWTH = 5.0  # the most 4x the input may cost: linear is about 4x, quadratic about 16x

#: families still super-linear, and why (strict: one that becomes linear must leave the list)
KNOWN_WS: dict[str, str] = {}
#: (none left: the call-list lookaheads of llama3.2-pythonic and llama4, ``(?=\[...\(.*\)...)``,
#: are held without rescanning, regexinfo.gap_split; gigachat3's close that takes the rest of
#: the output, ``\}\s*(?:(?:<\|message_sep\|>|</s>)[\s\S]*|\Z)``, is a tail hold)
KNOWN_CALLS: dict[str, str] = {}


def _pure() -> None:
    if respc.RUNTIME_INFO.startswith("compiled"):
        pytest.skip("counts the pure runtime's calls (a compiled module calls its patterns directly)")


class Work:
    def __init__(self) -> None:
        self.count = 0


def _ws_runs(buf: str) -> list[int]:
    """For each position, the length of the whitespace run that starts there."""
    runs = [0] * (len(buf) + 1)
    for k in range(len(buf) - 1, -1, -1):
        if buf[k] in REGEX_WS:
            runs[k] = runs[k + 1] + 1
    return runs


class CountingPattern:
    """Stands in for one compiled pattern of a generated module, counting what it reads."""

    def __init__(self, rx, work: Work) -> None:
        self._rx = rx
        self._work = work
        self._ws_led = rx.pattern.startswith(WS_GUARD) or _reads_ws(rx)
        self._inside: dict[tuple[str, str], bool] = {}  # (character before, run's character) -> _reads_ws_inside

    def __getattr__(self, name):
        return getattr(self._rx, name)

    def _lead(self, buf: str, p: int) -> int:
        if not self._ws_led:
            return 1
        k = p
        n = len(buf)
        while k < n and buf[k] in REGEX_WS:
            k += 1
        return k - p + 1

    def match(self, buf, pos=0, endpos=None, **kw):
        m = self._rx.match(buf, pos, len(buf) if endpos is None else endpos, **kw)
        self._work.count += max(self._lead(buf, pos), (len(buf) if m is not None and m.partial else (m.end() if m else pos)) - pos)
        return m

    def search(self, buf, pos=0, endpos=None, **kw):
        m = self._rx.search(buf, pos, len(buf) if endpos is None else endpos, **kw)
        stop = m.start() if m is not None else len(buf)
        if self._ws_led:
            runs = _ws_runs(buf[pos : stop + 1])
            for q in range(0, stop - pos + 1):
                if q and q < len(runs) and runs[q] and buf[pos + q - 1] in REGEX_WS:
                    # a start inside a run: it reads the run only where some way of matching
                    # can take its whitespace there (what the guards, regexinfo.ws_guarded, rule out)
                    key = (buf[pos + q - 1], buf[pos + q])
                    if key not in self._inside:
                        self._inside[key] = _reads_ws_inside(self._rx, *key)
                    self._work.count += runs[q] + 1 if self._inside[key] else 1
                else:
                    self._work.count += runs[q] + 1 if q < len(runs) else 1
        else:
            self._work.count += stop - pos + 1
        if m is not None:
            self._work.count += (len(buf) if m.partial else m.end()) - m.start()
        return m

    def fullmatch(self, buf, pos=0, endpos=None, **kw):
        self._work.count += (len(buf) if endpos is None else endpos) - pos
        return self._rx.fullmatch(buf, pos, len(buf) if endpos is None else endpos, **kw)

    def finditer(self, *args, **kw):
        return self._rx.finditer(*args, **kw)


def _counted(helper, work: Work):
    """A runtime helper that walks text (``ws_run_start(buf, lo, hi)`` and the like), counting
    the characters it walks: the length of what it returns a run of, plus one."""

    def counted(*args):
        found = helper(*args)
        text = args[0]
        if helper.__name__ == "ws_run_start":
            work.count += args[2] - found + 1
        elif helper.__name__ == "ws_run_end":
            work.count += found - args[1] + 1
        elif helper.__name__ == "ws_tail":
            work.count += len(text) - found + 1
        else:
            work.count += len(text) + 1
        return found

    return counted


def _reads_ws(rx) -> bool:
    """The pattern can read a whitespace run from where it starts (after other text: ``\\A``
    fails there at once)."""
    m = rx.match("x" + " " * 8, 1, partial=True)
    return m is not None and m.end() == 9


def _reads_ws_inside(rx, before: str, c: str) -> bool:
    """The pattern can read a run of ``c`` from a start inside a whitespace run (after
    ``before``) other than where the search began (``\\G`` fails there)."""
    probe = regex.compile(rx.pattern.replace("\\G", "(?!)"), rx.flags)
    m = probe.match(before + c * 8, 1, partial=True)
    return m is not None and m.end() == 9


class CountingStr(str):
    """A whole output whose searches count what they read."""

    work: Work

    def find(self, sub, start=None, end=None):
        lo = 0 if start is None else start
        hi = len(self) if end is None else min(end, len(self))
        i = str.find(self, sub, lo, hi)
        CountingStr.work.count += max(1, (i + len(sub) if i >= 0 else hi) - lo)
        return i

    def startswith(self, prefix, start=None, end=None):
        CountingStr.work.count += 1
        return str.startswith(self, prefix, 0 if start is None else start, len(self) if end is None else end)


@pytest.fixture
def counting(monkeypatch):
    """``counted(name) -> (compiled, work)``: the bundled template with counting patterns."""
    _pure()

    def counted(name: str):
        compiled = respc.load(name)
        module = __import__(compiled.Parser.__module__, fromlist=["_"])
        work = Work()
        wrapped = {}

        def wrap(value):
            if hasattr(value, "search") and hasattr(value, "pattern"):
                if id(value) not in wrapped:
                    wrapped[id(value)] = CountingPattern(value, work)
                return wrapped[id(value)]
            if type(value) is tuple:
                return tuple(wrap(item) for item in value)
            return value

        for key, value in list(vars(module).items()):
            if key.startswith(("_RE_", "_PENDING_")):
                monkeypatch.setattr(module, key, wrap(value))
        for record in compiled.Parser.STATES:
            monkeypatch.setattr(record, "runs", wrap(record.runs))
        # the runtime's walks over whitespace runs count what they read
        for helper in ("ws_run_start", "ws_run_end", "ws_tail", "only_ws"):
            monkeypatch.setattr(_scan, helper, _counted(getattr(_scan, helper), work))
        monkeypatch.setattr(_base, "only_ws", _scan.only_ws)
        return compiled, work

    return counted


def _first_tool_case(name: str) -> tuple[dict, dict]:
    data = json.loads((Path(__file__).resolve().parent.parent / "templates" / "samples" / f"{name}.json").read_text())
    for case in data["cases"]:
        if "tool_calls" in case.get("expected", {}):
            return data, case
    return data, data["cases"][0]


def _events(compiled, case: dict, tools, text: str) -> tuple[list, int]:
    parser = compiled.parser(prefix=case["prefix"], tools=tools, spans=True)
    base = len(compiled.Parser.cut_prefix(case["prefix"])) if case["prefix"] else 0
    events = list(parser.initial_events) + parser.feed(text) + parser.finalize()[1]
    return [e for e in events if isinstance(e, dict)], base


def _boundaries(compiled, case: dict, tools) -> list[int]:
    """Where a delimiter begins or ends in the output, and inside each delimiter's text where a
    special character (one of ``<>[]{}|`` and the like) meets a letter or a space."""
    out = case["output"]
    events, base = _events(compiled, case, tools, out)
    found = set()
    for event in events:
        if event["type"] in ("region_open", "region_close") and "start" in event:
            start, end = event["start"] - base, event["end"] - base
            for k in (start, end):
                if 0 <= k <= len(out):
                    found.add(k)
            for k in range(max(start, 0) + 1, min(end, len(out))):
                if out[k - 1].isalnum() != out[k].isalnum() and not (out[k - 1] in REGEX_WS or out[k] in REGEX_WS):
                    found.add(k)
    return sorted(found)


def _whole_work(compiled, work: Work, case: dict, tools, text: str) -> int:
    work.count = 0
    CountingStr.work = work
    parser = compiled.Parser.__new__(compiled.Parser)
    try:
        parser._whole(compiled.Parser.cut_prefix(case["prefix"]) if case["prefix"] else "", CountingStr(text), tools, [], None, None)
    except (ValueError, TypeError):
        pass  # a run where the template does not take one: what it cost to find out counts
    assert work.count > 0, "the whole parse did no work: it failed before parsing (a changed signature?)"
    return work.count


def _stream_work(compiled, work: Work, case: dict, tools, text: str, size: int = 8) -> int:
    work.count = 0
    parser = compiled.parser(prefix=case["prefix"], tools=tools, on_malformed="event", regex_timeout=None)
    try:
        for i in range(0, len(text), size):
            parser.feed(text[i : i + size])
        parser.finalize()
    except (ValueError, TypeError):
        pass
    return work.count


def _growth(name: str, what: str, small: int, large: int) -> list[str]:
    """The finding when 4x the input took more than GROWTH times the work."""
    if large <= GROWTH * max(small, 1):
        return []
    return [f"{name}: {what}: 4x the input took {large / max(small, 1):.1f}x the work ({small} -> {large})"]


def _verdict(name: str, found: list[str], known: dict[str, str]) -> None:
    if name in known:
        if found:
            pytest.xfail(f"{known[name]}: " + "; ".join(found[:2]))
        pytest.fail(f"{name} is linear now: take it out of the known list ({known[name]})")
    assert not found, "super-linear (see docs/performance.md, linear work): " + "; ".join(found)


@pytest.mark.parametrize("name", FAMILIES)
def test_whitespace_runs_at_every_boundary_are_linear(counting, name):
    compiled, work = counting(name)
    data, case = _first_tool_case(name)
    tools = data.get("tools")
    out = case["output"]
    found = []
    for at in _boundaries(compiled, case, tools):
        texts = [out[:at] + " " * k + out[at:] for k in (RUN, 4 * RUN)]
        where = f"{RUN} and {4 * RUN} spaces at {at} ({out[max(0, at - 12) : at]!r} | {out[at : at + 12]!r})"
        whole = [_whole_work(compiled, work, case, tools, text) for text in texts]
        found += _growth(name, f"whole, {where}", *whole)
        stream = [_stream_work(compiled, work, case, tools, text) for text in texts]
        found += _growth(name, f"streamed in 8-character chunks, {where}", *stream)
    _verdict(name, found, KNOWN_WS)


@pytest.mark.parametrize("name", FAMILIES)
def test_no_lookbehind_reads_a_run_back_at_every_position(name):
    """What the counts above cannot see: the regex engine's own backtracking. A lookbehind
    that reads a whitespace run backwards (``(?<!x[^<]*)``), tried at every length a run
    before it backtracks through, reads the run again each time (muse-glimmer's answer open
    took 1.8 s whole at 1,000 spaces and 85 s at 4,000, the reference as long). No bundled
    delimiter has one (regexinfo.ws_lookbehind, what ``respc lint`` reports)."""
    from respc.compiler.regexinfo import ws_lookbehind

    template = respc.load(name).template
    found = [
        f"fields.{field}.{key}"
        for field, spec in template["fields"].items()
        for key in ("open_pattern", "close_pattern")
        if key in spec and ws_lookbehind(spec[key])
    ]
    assert not found, f"{name}: a lookbehind reads a whitespace run back at every position in {found}"


@pytest.mark.parametrize("name", FAMILIES)
def test_many_tool_calls_are_linear(counting, name):
    compiled, work = counting(name)
    data, case = _first_tool_case(name)
    tools = data.get("tools")
    out = case["output"]
    events, base = _events(compiled, case, tools, out)
    spans = [(e["start"] - base, e["end"] - base) for e in events if e.get("field") == "tool_calls" and e["type"] in ("region_open", "region_close")]
    if not spans:
        pytest.skip(f"{name}: its first sample has no tool call")
    a, b = max(spans[0][0], 0), spans[-1][1]
    texts = [out[:a] + out[a:b] * k + out[b:] for k in (CALLS, 4 * CALLS)]
    whole = [_whole_work(compiled, work, case, tools, text) for text in texts]
    found = _growth(name, f"whole, {CALLS} and {4 * CALLS} calls", *whole)
    stream = [_stream_work(compiled, work, case, tools, text) for text in texts]
    found += _growth(name, f"streamed, {CALLS} and {4 * CALLS} calls", *stream)
    _verdict(name, found, KNOWN_CALLS)


def test_counting_sees_quadratic_work(counting):
    """The counts tell quadratic work apart: an unguarded whitespace-led search over a run
    grows 16x for 4x the run."""

    work = Work()
    rx = CountingPattern(regex.compile(r"\s*(?=x)|\s*y", regex.DOTALL), work)
    counts = []
    for k in (RUN, 4 * RUN):
        work.count = 0
        rx.search("a" + " " * k + "b", 0)
        counts.append(work.count)
    assert counts[1] > 10 * counts[0]
    guarded = CountingPattern(regex.compile(WS_GUARD + r"(?:\s*(?=x)|\s*y)", regex.DOTALL), work)
    counts = []
    for k in (RUN, 4 * RUN):
        work.count = 0
        guarded.search("a" + " " * k + "b", 0)
        counts.append(work.count)
    assert counts[1] < 5 * counts[0]


def streamed_message(compiled, case: dict, tools, text: str, size: int) -> dict:
    """The message of ``text`` streamed in ``size``-character chunks after the case's prefix."""
    parser = compiled.parser(prefix=case["prefix"], tools=tools)
    for i in range(0, len(text), size):
        parser.feed(text[i : i + size])
    return parser.finalize()[0]


def _outcome(run):
    try:
        return run()
    except (ValueError, TypeError) as error:
        return type(error).__name__


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_held_runs_parse_as_whole(name):
    """The lasting holds that keep long runs linear (runtime/base.py: a held text ending in a
    run of one whitespace character, scan.State.pump) change nothing: a long run of spaces
    or newlines at every delimiter boundary, streamed in 8- and 5-character chunks, gives the
    message a whole parse gives."""
    _pure()
    compiled = respc.load(name)
    data, case = _first_tool_case(name)
    tools = data.get("tools")
    out = case["output"]
    for at in _boundaries(compiled, case, tools):
        for c in (" ", "\n"):
            text = out[:at] + c * 400 + out[at:]
            whole = _outcome(lambda: compiled.Parser.parse_whole(case["prefix"], text, tools))
            for size in (8, 5):
                got = _outcome(lambda: streamed_message(compiled, case, tools, text, size))
                assert got == whole, f"{name}: 400 x {c!r} at {at} ({out[max(0, at - 12) : at]!r} | {out[at : at + 12]!r}), {size}-character chunks"


def delimiter_sources(template: dict) -> list[str]:
    """The pattern of each delimiter of the template (a literal one's escaped), sorted."""
    sources = set()
    for field in template["fields"].values():
        for key in ("open", "close", "open_pattern", "close_pattern"):
            if key in field:
                value = field[key]
                sources.add(value if key.endswith("pattern") else "|".join(regex.escape(v) for v in ([value] if isinstance(value, str) else value)))
    return sorted(sources)


def _mapped(m, at: int, n: int):
    """A match's kind and span, positions past a run of ``n`` at ``at`` counted from the run's end."""
    if m is None:
        return None

    def place(k):
        return ("before", k) if k <= at else ("after", k - at - n)

    return bool(m.partial), place(m.start()), place(m.end())


@pytest.mark.parametrize("name", FAMILIES)
def test_pumped_runs_match_alike(name):
    """regexinfo.ws_pump's bound: each delimiter of the family (with a bound ``K``) matches and
    searches alike, from every boundary, with a run of ``2K + 9`` or one more spaces (or
    newlines) at each boundary of the family's first tool sample, partially or not: where the
    run's length is all that differs, nothing else does (what the lasting holds rely on)."""
    import regex

    from respc.compiler.regexinfo import ws_pump

    compiled = respc.load(name)
    data, case = _first_tool_case(name)
    tools = data.get("tools")
    out = case["output"]
    at_all = _boundaries(compiled, case, tools)
    sources = delimiter_sources(compiled.template)
    for source in sorted(sources):
        k = ws_pump(source)
        if k is None:
            continue
        rx = regex.compile(source, regex.DOTALL)
        n = 2 * k + 9
        for at in at_all:
            for c in (" ", "\n"):
                texts = [out[:at] + c * size + out[at:] for size in (n, n + 1)]
                for start in sorted({0, *(b for b in at_all if b <= at)}):
                    for partial in (False, True):
                        for how in ("match", "search"):
                            got = [
                                _mapped(getattr(rx, how)(text, start, partial=partial), at, size)
                                for text, size in zip(texts, (n, n + 1))
                            ]
                            assert got[0] == got[1], (name, source, at, repr(c), start, how, partial, got)
