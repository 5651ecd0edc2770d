"""Regex time bounds: a template pattern that may backtrack without bound (like
``(a|aa)+b``) runs under a time bound, so hostile output cannot stall a parser; every
other pattern runs without the clock's cost. Going over is a clear ``respc.RegexTimeout``,
or, with ``on_malformed="event"``/``"collect"``, a malformed region after which parsing
goes on."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import respc
from respc.compiler.regexinfo import may_backtrack

ROOT = Path(__file__).resolve().parent.parent
HANG = "a" * 40 + "c"  # (a|aa)+b tries ~fib(40) ways here: hours without a bound
CATASTROPHIC = {
    "start_anchor": "<A>",
    "fields": {
        "content": {"content": "text"},
        "x": {"open_pattern": "(a|aa)+b", "close": "</x>", "content": "text"},
        "y": {"open": "<y>", "close": "</y>", "content": "text"},
    },
}


def _finishes(fn, seconds: float = 60.0):
    """Run ``fn`` in a thread; fail (instead of hanging the suite) if it is still running
    after ``seconds``, far above the bounds the tests set: a liveness check, not a timing."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            out["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the parser hung: the regex time bound did not apply"
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.mark.parametrize(
    "pattern, risky",
    [
        ("(a|aa)+b", True),
        ("(a+)+b", True),
        (r"(\w+\s*)+x", True),
        (r"(a)\1", True),  # back references: conservatively bounded
        (r"(?:x{1,3})*y", True),
        (r"\s*<tool_call>", False),
        (r"</tool_call>\s*", False),
        (r"(?:ab)*c", False),  # a repetition of something that matches one way
        (r"(?:a|b)*c", False),  # (one character class)
        (r"(?:x{2})*y", False),  # a fixed count matches one way
        (r"(?>a+)+b", False),  # atomic: no backtracking into it
        (r"<function=(?P<name>[^>]+)>", False),
        (r"(?:(?!</x>).)*</x>", False),
        (r"(?V1)(a|aa)+b", True),  # regex-module syntax: not understood, so bounded
    ],
)
def test_may_backtrack(pattern, risky):
    assert may_backtrack(pattern) is risky


def test_bundled_delimiters_run_without_the_clock():
    """No bundled delimiter may backtrack without bound: their scans pay nothing for the bound.
    (muse-glimmer's call open collapses a doubled tool name with a back reference, ``NAME.NAME``:
    it runs under the bound, quadratic at worst in the name's length.)"""
    for path in sorted((ROOT / "templates").glob("*.json")):
        if path.stem == "muse-glimmer":
            continue
        template = json.loads(path.read_text(encoding="utf-8"))
        patterns = [template.get("start_anchor_pattern")] + [
            field.get(key) for field in template["fields"].values() for key in ("open_pattern", "close_pattern")
        ]
        assert not [p for p in patterns if p and may_backtrack(p)], path.name


def test_generated_code_bounds_exactly_the_risky_patterns():
    source = respc.compile_template(CATASTROPHIC).source
    risky_calls = [line for line in source.splitlines() if "_BOUNDED." in line]
    assert risky_calls and all("_scan.timed(self, " in line for line in risky_calls)  # the bound and the budget
    plain = respc.load("qwen3").source
    assert "timeout=" not in plain  # nothing in qwen3 can run away: no clock read


def test_a_catastrophic_pattern_raises_a_clear_error_instead_of_hanging():
    compiled = respc.compile_template(CATASTROPHIC)
    with pytest.raises(respc.RegexTimeout, match=r"time bound \(0.05 s\).*respc lint"):
        _finishes(lambda: compiled.parse(HANG, prefix="", regex_timeout=0.05))
    parser = compiled.parser(prefix="", regex_timeout=0.05)
    with pytest.raises(respc.RegexTimeout):
        _finishes(lambda: parser.feed(HANG))
    assert isinstance(respc.RegexTimeout("x"), TimeoutError)


@pytest.mark.parametrize("size", [1, 7, len(HANG)])
def test_over_the_bound_the_region_is_malformed_and_the_stream_goes_on(size):
    compiled = respc.compile_template(CATASTROPHIC)
    parser = compiled.parser(prefix="", on_malformed="event", regex_timeout=0.02)

    def run():
        events = []
        for i in range(0, len(HANG), size):
            events += parser.feed(HANG[i : i + size])
        events += parser.feed(" <y>after</y> end")
        message, final = parser.finalize()
        return events + final, message

    events, message = _finishes(run)
    malformed = [e for e in events if e["type"] == "region_malformed"]
    assert malformed and all("time bound (0.02 s)" in e["error"] for e in malformed)
    assert "".join(e["text"] for e in malformed).startswith("a")  # the text it could not scan
    assert message["y"] == "after"  # what follows is parsed


def test_collect_reports_the_timeout():
    message, errors = _finishes(
        lambda: respc.parse_response(HANG + "<y>ok</y>", CATASTROPHIC, prefix="", regex_timeout=0.02, on_malformed="collect")
    )
    assert [e["type"] for e in errors] == ["region_malformed"]
    assert "time bound" in errors[0]["error"]


def test_content_patterns_are_bounded_too(monkeypatch):
    template = {
        "start_anchor": "<A>",
        "fields": {
            "content": {"content": "text"},
            "x": {
                "open": "<x>",
                "close": "</x>",
                "content": "xml-inline",
                "content_args": {"tag_pattern": "<(?P<key>k)>(?P<value>(a|aa)+b)"},
            },
        },
    }
    monkeypatch.setattr(respc.runtime.scan, "REGEX_TIMEOUT", 0.02)
    text = "<x><k>" + "a" * 40 + "</x>done"
    message, errors = _finishes(lambda: respc.parse_response(text, template, prefix="", on_malformed="collect"))
    assert message == {"content": "done"}
    assert errors[0]["field"] == "x" and "respc.REGEX_TIMEOUT" in errors[0]["error"]
    with pytest.raises(respc.RegexTimeout, match="field 'x'"):
        _finishes(lambda: respc.parse_response(text, template, prefix=""))


@pytest.mark.parametrize("bad", [0, -1, "1", True, float("inf"), float("nan")])
def test_the_bound_is_checked(bad):
    with pytest.raises(ValueError, match="regex_timeout must be a number of seconds > 0"):
        respc.load("qwen3").parser(prefix="", regex_timeout=bad)
    with pytest.raises(ValueError, match="regex_timeout"):
        respc.parse_response("x", "qwen3", prefix="", regex_timeout=bad)


def test_no_bound_is_allowed():
    assert respc.parse_response("hi", "qwen3", prefix="", regex_timeout=None)["content"] == "hi"
    assert respc.load("qwen3").parser(prefix="", regex_timeout=None).feed("hi")


# --- the parse's budget: the time all of a parser's bounded calls may take together -------
SLOW = ("a" * 16 + "c ") * 40  # each call quick, the calls many: far over a tiny budget in all


@pytest.mark.parametrize("size", [1, 3, len(SLOW)])
def test_the_budget_bounds_the_whole_stream_however_it_is_fed(size):
    """Without a bound per call, only the budget stops a parser that makes many slow calls
    (before it, 224 characters fed one by one took 36 s and never raised)."""
    compiled = respc.compile_template(CATASTROPHIC)
    parser = compiled.parser(prefix="", regex_timeout=None, regex_budget=0.005)

    def run():
        for i in range(0, len(HANG), size):
            parser.feed(HANG[i : i + size])
        for i in range(0, len(SLOW), size):
            parser.feed(SLOW[i : i + size])
        return parser.finalize()

    with pytest.raises(respc.RegexTimeout, match=r"budget.*regex_budget"):
        _finishes(run)


def test_the_budget_bounds_a_whole_parse_and_finalize():
    compiled = respc.compile_template(CATASTROPHIC)
    with pytest.raises(respc.RegexTimeout, match="budget"):
        _finishes(lambda: compiled.parse(HANG + SLOW, prefix="", regex_timeout=None, regex_budget=0.005))
    with pytest.raises(respc.RegexTimeout, match="budget"):
        _finishes(lambda: respc.parse_response([SLOW, HANG], CATASTROPHIC, prefix="", regex_timeout=None, regex_budget=0.005))
    parser = compiled.parser(prefix="", regex_timeout=None, regex_budget=0.005)
    parser._left = 0.0  # spent while streaming: finalize's end-of-stream scan needs the regex again
    parser._held = "a"
    with pytest.raises(respc.RegexTimeout, match="budget"):
        _finishes(parser.finalize)


def test_once_the_budget_is_spent_regions_are_malformed_and_the_stream_ends():
    compiled = respc.compile_template(CATASTROPHIC)
    parser = compiled.parser(prefix="", on_malformed="event", regex_timeout=None, regex_budget=0.005)

    def run():
        events = []
        for ch in HANG + SLOW:
            events += parser.feed(ch)
        message, final = parser.finalize()
        return events + final, message

    events, message = _finishes(run)
    malformed = [e for e in events if e["type"] == "region_malformed"]
    assert malformed and all("budget" in e["error"] for e in malformed)
    message, errors = _finishes(
        lambda: compiled.parse(HANG + SLOW, prefix="", regex_timeout=None, regex_budget=0.005, on_malformed="collect")
    )
    assert errors and "budget" in errors[0]["error"]


def test_the_budget_is_checked_and_may_be_off():
    with pytest.raises(ValueError, match="regex_budget must be a number of seconds > 0"):
        respc.load("qwen3").parser(prefix="", regex_budget=0)
    with pytest.raises(ValueError, match="regex_budget"):
        respc.parse_response("x", "qwen3", prefix="", regex_budget=-1)
    assert respc.parse_response("hi", CATASTROPHIC, prefix="", regex_budget=None) == {"content": "hi"}
    assert respc.REGEX_BUDGET > respc.REGEX_TIMEOUT


def test_the_budget_pickles_with_the_parser():
    import pickle

    parser = respc.compile_template(CATASTROPHIC).parser(prefix="", regex_budget=0.5)
    parser.feed("aa")
    copy = pickle.loads(pickle.dumps(parser))
    assert 0 < copy._left <= 0.5


def test_a_catastrophic_start_anchor_is_a_regex_timeout(monkeypatch):
    template = {"start_anchor_pattern": "(a|aa)+b", "fields": {"content": {"content": "text"}}}
    compiled = respc.compile_template(template)
    monkeypatch.setattr(respc.runtime.scan, "REGEX_TIMEOUT", 0.02)
    with pytest.raises(respc.RegexTimeout, match="start_anchor_pattern.*respc lint"):
        _finishes(lambda: compiled.parse("x", prefix=HANG))
    with pytest.raises(respc.RegexTimeout, match="start_anchor_pattern"):
        _finishes(lambda: compiled.parser(prefix=HANG))


def test_the_openai_stream_bounds_a_catastrophic_tag_pattern(monkeypatch):
    """DeltaParser reads an xml-inline body as it streams, with the tag pattern itself:
    under the time bound too (before, it ran unbounded)."""
    from respc.openai import DeltaParser

    template = {
        "start_anchor": "<A>",
        "fields": {
            "content": {"content": "text"},
            "tool_calls": {
                "open_pattern": '<call name="(?P<name>[^"]+)">',
                "close": "</call>",
                "content": "xml-inline",
                "content_args": {"tag_pattern": "<(?P<key>(?:a|aa)+)>(?P<value>.*?)</p>"},
                "repeats": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            },
        },
    }
    monkeypatch.setattr(respc.runtime.scan, "REGEX_TIMEOUT", 0.02)
    parser = DeltaParser(template, prefix="")

    def run():
        for ch in '<call name="f"><' + "a" * 40 + "c</p>":
            parser.feed(ch)
        return parser.finish()

    with pytest.raises(respc.RegexTimeout, match="tool_calls"):
        _finishes(run)
