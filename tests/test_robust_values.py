"""Cut streams and JSON values Python or OpenAI's contract cannot take, end to end.

* a generation cut inside a tool call ends a ``DeltaParser`` stream with
  ``finish(length=True)``, for every bundled family, in both ``on_malformed`` modes, and
  a stream that finished or failed takes no more input;
* arguments a model writes that strict JSON has no text for (``1e400``, ``NaN``,
  ``-Infinity``) keep the reference's values in the message, and are sent (streamed and
  by ``to_message``) as strict JSON text (docs/openai.md, "Values JSON has no text for");
* JSON that Python cannot decode (nested thousands deep, an integer past the int
  string-conversion limit) is a malformed region in every mode, with and without tools,
  never an exception that escapes (RecursionError) and never a wrong value.
"""

from __future__ import annotations

import copy
import json
import math
import random

import pytest
from compare import assert_same
from test_models import _families, _load
from transformers.utils.chat_parsing import parse_response as ref_parse

import respc
from respc.openai import DeltaParser, to_message

SEED = 7


def _strict_loads(text: str):
    """``json.loads`` under strict JSON: NaN, Infinity and -Infinity are refused."""

    def refuse(word):
        raise ValueError(f"not strict JSON: {word} in {text[:80]!r}")

    return json.loads(text, parse_constant=refuse)


def _accumulated(deltas: list[dict]) -> dict[int, dict]:
    """The calls a client builds from the deltas, by index: id, name and arguments."""
    calls: dict[int, dict] = {}
    for delta in deltas:
        for call in delta.get("tool_calls", ()):
            entry = calls.setdefault(call["index"], {"id": None, "name": None, "arguments": ""})
            if "id" in call:
                entry["id"] = call["id"]
                entry["name"] = call["function"]["name"]
            entry["arguments"] += call["function"]["arguments"]
    return calls


def _stream(parser: DeltaParser, text: str, size: int, length: bool = False) -> tuple[list[dict], str]:
    deltas = []
    for at in range(0, len(text), size):
        deltas += parser.feed(text[at : at + size])
    last, reason = parser.finish(length=length)
    return deltas + last, reason


def _bare(errors: list[dict]) -> list[dict]:
    """region_malformed events less their offsets (DeltaParser's parser runs with spans)."""
    return [{k: e[k] for k in ("type", "field", "error", "text")} for e in errors]


# --- a cut inside a call ---------------------------------------------------------------


def _cut_cases():
    out = []
    for name in _families():
        _, samples = _load(name)
        for case in samples["cases"]:
            if case.get("cut"):
                out.append(pytest.param(name, case, samples, id=f"{name}:{case['name']}"))
    return out


@pytest.mark.parametrize("mode", ["raise", "event"])
@pytest.mark.parametrize(("name", "case", "samples"), _cut_cases())
def test_a_cut_ends_the_stream_with_length(name, case, samples, mode):
    """Every cut sample, cut again at every fourth character (inside the call, its open
    delimiter, the text before it): ``finish(length=True)`` returns "length" and never
    raises; the message is parse_response's with on_malformed="collect" (a call the cut
    leaves unparsable is left out and reported in ``errors``), and what was sent of each
    call is the start of strict JSON text."""
    tools = samples["tools"] if case.get("tools", True) else None
    output = case["output"]
    for end in range(len(output), 0, -4):
        text = output[:end]
        parser = DeltaParser(name, prefix=case["prefix"], tools=tools, id_seed=SEED, on_malformed=mode)
        deltas, reason = _stream(parser, text, 5, length=True)
        where = f"{name}:{case['name']} cut at {end}: {text[-40:]!r}"
        assert reason == "length", where
        message, errors = respc.parse_response(text, name, prefix=case["prefix"], tools=tools, on_malformed="collect")
        assert parser.message == message, where
        assert _bare(parser.errors) == errors, where
        for call in _accumulated(deltas).values():
            assert "Infinity" not in call["arguments"] and "NaN" not in call["arguments"], where
        with pytest.raises(RuntimeError, match="already finished"):
            parser.feed("more")


def test_the_families_the_issue_names_no_longer_raise_on_a_cut():
    """command-a, nemotron-nano-v2 and apriel-1.5 cut inside a call's JSON (their templates do
    not allow non-JSON): the stream ends with what was sent. (mistral-small-3.1, also named by
    the issue, now cuts its list item by item and keeps a cut call's raw text: it no longer
    raises at all, see test_model_reports.)"""
    for name in ("command-a", "nemotron-nano-v2", "apriel-1.5", "command-r7b", "command-r-plus"):
        _, samples = _load(name)
        case = next(c for c in samples["cases"] if c["name"] == "cut_mid_call")
        output = case["output"]
        text = output[: output.index('"Par') + 4]
        with pytest.raises(ValueError):
            respc.parse_response(text, name, prefix=case["prefix"], tools=samples["tools"])  # as the reference
        parser = DeltaParser(name, prefix=case["prefix"], tools=samples["tools"], id_seed=SEED)
        deltas, reason = _stream(parser, text, 3, length=True)
        assert reason == "length", name
        (error,) = parser.errors
        assert error["field"] == "tool_calls" and "not valid JSON" in error["error"], name
        assert "tool_calls" not in parser.message and "tool_calls" not in parser.to_message(), name
        calls = list(_accumulated(deltas).values())
        (call,) = calls
        assert call["name"] == "get_weather" and '"Par' in call["arguments"], (name, call)


def test_a_finished_or_failed_stream_refuses_more_input():
    _, samples = _load("command-a")
    case = next(c for c in samples["cases"] if c["name"] == "cut_mid_call")
    bad = case["output"].replace('"days": 3', '"days": 3,,') + "<|END_ACTION|>"
    with pytest.raises(ValueError, match="not valid JSON"):
        respc.parse_response(bad, "command-a", prefix=case["prefix"])

    # finished: feed and finish both refuse
    parser = DeltaParser("command-a", prefix=case["prefix"])
    parser.feed(case["output"])
    parser.finish(length=True)
    for again in (lambda: parser.feed("more"), lambda: parser.finish()):
        with pytest.raises(RuntimeError, match="already finished"):
            again()

    # failed in finish (the region malformed at the end, not a cut), and in feed
    for where in ("finish", "feed"):
        parser = DeltaParser("command-a", prefix=case["prefix"])
        text = case["output"] + ",,<|END_ACTION|>" if where == "feed" else case["output"] + ",,"
        with pytest.raises(ValueError):
            parser.feed(text)
            parser.finish()
        for again in (lambda: parser.feed("more"), lambda: parser.finish(length=True)):
            with pytest.raises(RuntimeError, match="raised"):
                again()
        with pytest.raises(RuntimeError, match="finish"):
            parser.to_message()

    # a wrong argument is not a failure of the stream
    parser = DeltaParser("command-a", prefix=case["prefix"])
    with pytest.raises(TypeError):
        parser.feed(3)
    parser.feed(case["output"] + "<|END_ACTION|>")
    assert parser.finish()[1] == "tool_calls"


def test_on_malformed_event_goes_on_past_a_malformed_call():
    """on_malformed="event": a malformed call's region is left out (what was sent of it
    stays), the next call streams, and to_message gives it the id its deltas carry."""
    _, samples = _load("command-a")
    call = '{"tool_call_id": "%s", "tool_name": "get_weather", "parameters": {"city": "Paris", "days": 3%s}}'
    text = (
        "<|START_ACTION|>[" + call % ("a", ",,") + "]<|END_ACTION|>"
        "<|START_ACTION|>[" + call % ("b", "") + "]<|END_ACTION|>"
    )
    with pytest.raises(ValueError):
        DeltaParser("command-a", prefix="").feed(text)
    with pytest.raises(ValueError, match="on_malformed"):
        DeltaParser("command-a", prefix="", on_malformed="collect")
    message, errors = respc.parse_response(text, "command-a", prefix="", on_malformed="collect")
    for size in (1, 7, len(text)):
        parser = DeltaParser("command-a", prefix="", tools=samples["tools"], on_malformed="event")
        deltas, reason = _stream(parser, text, size)
        assert parser.message == message and _bare(parser.errors) == errors and reason == "tool_calls"
        calls = _accumulated(deltas)
        assert calls[0]["id"] == "a" and calls[1]["id"] == "b", calls
        assert _strict_loads(calls[1]["arguments"]) == {"city": "Paris", "days": 3}
        (sent,) = parser.to_message()["tool_calls"]
        assert sent["id"] == "b" and sent["function"]["arguments"] == calls[1]["arguments"]


# --- values ------------------------------------------------------------------------------

#: a call to get_weather in three body shapes, the value in ``days`` (an integer: with
#: tools, the stream holds it until complete and typed) or in ``city`` (a string: streamed)
_FORMS = {
    "qwen3": '<tool_call>\n{"name": "get_weather", "arguments": %s}\n</tool_call>',
    "kimi-k2": "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    "<|tool_call_argument_begin|>%s<|tool_call_end|><|tool_calls_section_end|>",
    "command-a": '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": %s}\n]<|END_ACTION|>',
}
_KEYS = ("days", "city")


def _output(name: str, key: str, value: str) -> str:
    other = "city" if key == "days" else "days"
    return _FORMS[name] % ('{"%s": "Paris", "%s": %s}' % (other, key, value) if other == "city" else '{"%s": 3, "%s": %s}' % (other, key, value))


def _tools(name: str):
    return _load(name)[1]["tools"]


#: model-written values strict JSON has no text for (or whose Python value has none)
_NON_FINITE = {
    "1e400": math.inf,
    "-1e400": -math.inf,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
    "NaN": math.nan,
    "[1e400, NaN, -Infinity, 1.5]": [math.inf, math.nan, -math.inf, 1.5],
    '{"x": [{"y": 1E999}]}': {"x": [{"y": math.inf}]},
}


def _same_number(got, want) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return got is None  # NaN is sent as null
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_same_number, got, want))
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_same_number(got[k], want[k]) for k in want)
    return got == want and type(got) is type(want)


@pytest.mark.parametrize("name", sorted(_FORMS))
@pytest.mark.parametrize("written", sorted(_NON_FINITE))
def test_values_json_has_no_text_for_are_sent_as_strict_json(name, written):
    """The message keeps the reference's value (inf, nan: json.loads's); the deltas and
    to_message send strict JSON: an infinity as 1e999 / -1e999 (a JSON number that
    decodes to it), NaN as null."""
    template = _load(name)[0]
    want = _NON_FINITE[written]
    for key in _KEYS:
        text = _output(name, key, written)
        for tools in (None, _tools(name)):
            message = respc.parse_response(text, name, prefix="", tools=tools)
            assert_same(message, ref_parse(text, copy.deepcopy(template), prefix="", tools=tools))
            assert_same(message["tool_calls"][0]["function"]["arguments"][key], want)
            arguments = _strict_loads(to_message(message)["tool_calls"][0]["function"]["arguments"])
            assert _same_number(arguments[key], want), (text, arguments)
            for size in (1, 3, len(text)):
                parser = DeltaParser(name, prefix="", tools=tools, id_seed=SEED)
                deltas, _ = _stream(parser, text, size)
                (call,) = _accumulated(deltas).values()
                streamed = _strict_loads(call["arguments"])
                assert _same_number(streamed[key], want), (text, size, call)
                assert parser.to_message()["tool_calls"][0]["function"]["arguments"] == call["arguments"]


def _deep(kind: str, depth: int) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


#: valid JSON that Python cannot decode: malformed regions
_UNDECODABLE = {
    "list 2000 deep": _deep("list", 2000),
    "object 2000 deep": _deep("object", 2000),
    "list 100000 deep": _deep("list", 100000),
    "a 5000-digit integer": "9" * 5000,
    "a 5000-digit integer in a list": "[1, -" + "9" * 5000 + "]",
}


@pytest.mark.parametrize("name", sorted(_FORMS))
@pytest.mark.parametrize("what", sorted(_UNDECODABLE))
def test_json_python_cannot_decode_is_a_malformed_region(name, what):
    """In every mode and with tools or not: parse_response raises a ValueError (raise) or
    reports the region (collect); ResponseParser streams a region_malformed event
    ("event"); DeltaParser raises a ValueError (raise) or goes on (event)."""
    for key in _KEYS:
        text = _output(name, key, _UNDECODABLE[what])
        where = f"{name} {key}: {what}"
        for tools in (None, _tools(name)):
            with pytest.raises(ValueError):
                respc.parse_response(text, name, prefix="", tools=tools)
            message, errors = respc.parse_response(text, name, prefix="", tools=tools, on_malformed="collect")
            assert "tool_calls" not in message and [e["field"] for e in errors] == ["tool_calls"], where
            parser = respc.ResponseParser(name, prefix="", tools=tools, on_malformed="event")
            events = [e for at in range(0, len(text), 997) for e in parser.feed(text[at : at + 997])]
            streamed, final = parser.finalize()
            assert streamed == message, where
            assert [e["type"] for e in events + final if e["type"] == "region_malformed"] == ["region_malformed"], where
            with pytest.raises(ValueError):
                _stream(DeltaParser(name, prefix="", tools=tools), text, 997)
            parser = DeltaParser(name, prefix="", tools=tools, on_malformed="event")
            deltas, _ = _stream(parser, text, 997)
            assert parser.message == message and _bare(parser.errors) == errors, where
            assert len(_accumulated(deltas)) <= 1, where


@pytest.mark.parametrize("name", sorted(_FORMS))
def test_json_nested_as_deep_as_it_decodes_streams_and_writes(name):
    """Arguments nested 1,000 deep decode (orjson goes to 1024 levels): the message has
    them, and to_message and the stream, with tools (``days`` held) or not, send them:
    strict JSON of the same value (json's own encoder recurses that deep no more)."""
    value = _deep("list", 1000)
    for key in _KEYS:
        text = _output(name, key, value)
        for tools in (None, _tools(name)):
            message = respc.parse_response(text, name, prefix="", tools=tools)
            sent = to_message(message)["tool_calls"][0]["function"]["arguments"]
            assert sent.replace(" ", "").count("[") == 1000, (name, key)
            parser = DeltaParser(name, prefix="", tools=tools, id_seed=SEED)
            deltas, _ = _stream(parser, text, 13)
            (call,) = _accumulated(deltas).values()
            assert call["arguments"] == sent, (name, key, tools is not None)
            assert parser.to_message()["tool_calls"][0]["function"]["arguments"] == sent


def test_strict_json_text_of_any_depth():
    """arguments_text of a value nested 100,000 deep (a message built by hand: no parse
    gives one) and of non-finite floats: strict JSON, the value's own elsewhere."""
    from respc.openai import arguments_text

    value: list = []
    inner = value
    for _ in range(100000):
        inner.append([])
        inner = inner[0]
    text = arguments_text({"arguments": {"a": value}})
    assert text == '{"a": ' + "[" * 100001 + "]" * 100001 + "}"
    rng = random.Random(SEED)
    for _ in range(200):
        item = {"k": [rng.choice([1.5, -0.0, 2, "s", None, True, math.inf, -math.inf, math.nan]) for _ in range(4)]}
        decoded = _strict_loads(arguments_text({"arguments": item}))
        assert _same_number(decoded, item), item
    circular: list = []
    circular.append({"x": circular, "y": math.inf})
    with pytest.raises(ValueError, match="Circular"):
        arguments_text({"arguments": circular})
