"""The serving extensions of the event stream: ``spans=True`` (offsets and captures) and
``on_malformed`` ("event" for streams, "collect" for whole outputs).

The spans property runs over every bundled template, on the mutated sample replies of
tests/test_bundled_fuzz.py, streamed in random chunks: chunk texts, delimiter spans and the
text dropped outside any region tile the parser's input (the cut prefix, then the output)
exactly. Every case is seeded by the family's name; a failure prints the family, the case
and the text.
"""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest
from optional import needs

import respc

_FUZZ_PATH = Path(__file__).resolve().parent / "test_bundled_fuzz.py"
_spec = importlib.util.spec_from_file_location("_respc_bundled_fuzz", _FUZZ_PATH)
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

#: cases per family for the tiling property (the 46 families take a few seconds)
CASES = 60
_SPAN_KEYS = ("start", "end", "captures")


def _stream(compiled, prefix: str, chunks: list[str], **options) -> tuple[list[dict], dict]:
    parser = compiled.parser(prefix=prefix, **options)
    events = list(parser.initial_events)
    for chunk in chunks:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    return events + final, message


def _tiling_problem(events: list[dict], text: str) -> str | None:
    """Why ``events`` do not tile ``text`` (None when they do): walked in order, each span
    starts where the last one ended, or after a gap of text dropped outside any region (the
    null region's text, or a close delimiter of the implicit field that never opened)."""
    pos = 0
    inside = False
    for number, event in enumerate(events):
        kind = event["type"]
        if kind == "region_chunk":
            start, end = event["start"], event["start"] + len(event["text"])
            if text[start:end] != event["text"]:
                return f"event {number}: chunk text {event['text']!r} is not the input at {start}:{end}"
        else:
            start, end = event["start"], event["end"]
        if start < pos:
            return f"event {number} ({kind}) starts at {start}, inside what ended at {pos}"
        if start > pos and inside:
            return f"event {number} ({kind}): input {pos}:{start} ({text[pos:start]!r}) is accounted for by no event"
        if kind == "region_open":
            inside = True
        elif kind in ("region_close", "region_malformed"):
            inside = False
        pos = end
    if pos < len(text) and inside:
        return f"the input from {pos} on ({text[pos:]!r}) is accounted for by no event"
    return None


@pytest.mark.parametrize("name", fuzz.FAMILIES)
def test_spans_tile_the_input(name):
    template, seeds, pieces = fuzz._family(name)
    compiled = respc.load(name)
    rng = random.Random(f"spans-{name}")
    for case in range(CASES):
        seed_name, text, prefix, tools = rng.choice(seeds)
        mutated = fuzz._mutate(rng, text, pieces) if case % 3 else text
        case_prefix = prefix if rng.random() < 0.8 else ""
        chunks = fuzz._chunks(rng, mutated) if case % 5 else [mutated]
        where = f"{name} case {case} (sample {seed_name!r}); text={mutated!r}"
        try:
            events, message = _stream(compiled, case_prefix, chunks, tools=tools, spans=True, on_malformed="event")
        except ValueError as error:  # a required field missing: the message cannot be made
            assert "did not appear" in str(error), where
            continue
        whole = compiled.Parser.cut_prefix(case_prefix) + mutated if case_prefix else mutated
        problem = _tiling_problem(events, whole)
        assert problem is None, f"{where}: {problem}"
        # spans change nothing else: the same events less their span keys, the same message
        plain, plain_message = _stream(compiled, case_prefix, chunks, tools=tools, on_malformed="event")
        stripped = [{k: v for k, v in e.items() if k not in _SPAN_KEYS} for e in events]
        assert stripped == plain, where
        assert message == plain_message, where


def test_spans_name_delimiters_and_captures():
    compiled = respc.load("qwen3")
    text = "<think>hmm</think>Hi <tool_call>\n" + '{"name": "f", "arguments": {"a": 1}}' + "\n</tool_call>"
    events, _ = _stream(compiled, "<|im_start|>assistant\n", [text[i : i + 3] for i in range(0, len(text), 3)], spans=True)
    delimiters = [(e["type"], e["field"], e["start"], e["end"]) for e in events if e["type"] != "region_chunk"]
    assert delimiters == [
        ("region_open", "reasoning_content", 0, 7),  # <think>
        ("region_close", "reasoning_content", 10, 18),  # </think>
        ("region_open", "content", 18, 18),  # the implicit field opens with its first text
        ("region_close", "content", 20, 20),  # and closes where the tool call's delimiter starts
        ("region_open", "tool_calls", 20, 32),  # " <tool_call>" (the pattern takes the space)
        ("region_close", "tool_calls", 70, 82),  # "</tool_call>" (its \s* finds nothing more)
    ]
    assert events[0]["captures"] == {}
    gpt = respc.load("gpt-oss")
    reply = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>"
    events, message = _stream(gpt, "", [reply], spans=True)
    opens = [e for e in events if e["type"] == "region_open"]
    assert opens[0]["captures"] == {"name": "get_weather"}
    assert message["tool_calls"][0]["function"]["name"] == "get_weather"


def test_spans_count_from_the_cut_prefix():
    compiled = respc.load("qwen3")
    prefix = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    events, _ = _stream(compiled, prefix, ["abc</think>ok"], spans=True)
    # the cut prefix is "<think>\n": the open comes from it, the output follows at offset 8
    assert events[0] == {"type": "region_open", "field": "reasoning_content", "start": 0, "end": 7, "captures": {}}
    chunks = [(e["start"], e["text"]) for e in events if e["type"] == "region_chunk"]
    assert "".join(t for _, t in chunks) == "\nabcok"
    assert chunks[0][0] == 7


STRICT = {
    "start_anchor": "<A>",
    "fields": {
        "content": {"content": "text"},
        "tool_calls": {"open": "<tc>", "close": "</tc>", "content": "json", "repeats": True},
        "answer": {"open": "<ans>", "close": "</ans>", "content": "int", "optional": False},
        "meta": {"open": "<m>", "close": "</m>", "content": "json", "transform": "{content.x}"},
    },
}
BAD = 'a<tc>{"x": 1}</tc>b<tc>{bad</tc><m>{"y": 2}</m><ans>forty</ans>c'


def test_malformed_regions_raise_by_default_as_the_reference_does():
    needs("transformers.utils.chat_parsing")
    from transformers.utils.chat_parsing import parse_response as ref_parse

    with pytest.raises(ValueError) as ours:
        respc.parse_response(BAD, STRICT, prefix="")
    with pytest.raises(ValueError):
        ref_parse(BAD, STRICT, prefix="")
    assert "JSON" in str(ours.value)
    parser = respc.get_response_parser(STRICT, prefix="")
    with pytest.raises(ValueError):
        parser.feed(BAD)


@pytest.mark.parametrize("size", [1, 3, len(BAD)])
def test_malformed_regions_end_in_an_event_and_the_stream_goes_on(size):
    chunks = [BAD[i : i + size] for i in range(0, len(BAD), size)]
    events, message = _stream(respc.compile_template(STRICT), "", chunks, spans=True, on_malformed="event")
    malformed = [e for e in events if e["type"] == "region_malformed"]
    assert [(e["field"], e["text"]) for e in malformed] == [
        ("tool_calls", "{bad"),  # bad JSON
        ("meta", '{"y": 2}'),  # a transform path that does not resolve
        ("answer", "forty"),  # a bad int
    ]
    assert all(e["error"] and isinstance(e["error"], str) for e in malformed)
    assert (malformed[0]["start"], malformed[0]["end"]) == (BAD.index("</tc>", 20), BAD.index("</tc>", 20) + 5)
    # the values left out; what follows still parsed; a required field that was malformed
    # is no "missing field" error
    assert message == {"content": "c", "tool_calls": [{"x": 1}]}


def test_collect_returns_the_message_and_the_errors():
    message, errors = respc.parse_response(BAD, STRICT, prefix="", on_malformed="collect")
    assert message == {"content": "c", "tool_calls": [{"x": 1}]}
    assert [(e["type"], e["field"], e["text"]) for e in errors] == [
        ("region_malformed", "tool_calls", "{bad"),
        ("region_malformed", "meta", '{"y": 2}'),
        ("region_malformed", "answer", "forty"),
    ]
    messages, errors = respc.parse_response([BAD, "<ans>4</ans>"], STRICT, prefix="", on_malformed="collect")
    assert messages[1] == {"answer": 4}
    assert [e["index"] for e in errors] == [0, 0, 0]
    # a message without problems: no errors
    assert respc.parse_response("<ans>4</ans>", STRICT, prefix="", on_malformed="collect") == ({"answer": 4}, [])


def test_collect_and_event_modes_agree():
    compiled = respc.compile_template(STRICT)
    events, message = _stream(compiled, "", [BAD], on_malformed="event")
    whole, errors = compiled.parse(BAD, prefix="", on_malformed="collect")
    assert whole == message
    assert errors == [e for e in events if e["type"] == "region_malformed"]


def test_serving_options_are_checked():
    compiled = respc.load("qwen3")
    with pytest.raises(ValueError, match="on_malformed must be 'raise' or 'event'"):
        compiled.parser(prefix="", on_malformed="collect")
    with pytest.raises(ValueError, match="on_malformed must be 'raise' or 'collect'"):
        compiled.parse("x", prefix="", on_malformed="event")
    with pytest.raises(TypeError, match="spans must be True or False"):
        compiled.parser(prefix="", spans="yes")


def test_options_reach_every_entry_point():
    parser = respc.ResponseParser("qwen3", "", spans=True, on_malformed="event")
    assert parser.feed("hi")[0] == {"type": "region_open", "field": "content", "start": 0, "end": 0}
    parser = respc.get_response_parser(STRICT, prefix="", on_malformed="event")
    events = parser.feed("<tc>{</tc>")
    assert [e["type"] for e in events] == ["region_open", "region_chunk", "region_malformed"]
    assert json.loads(json.dumps(events))  # events stay plain JSON data
