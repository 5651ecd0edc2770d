"""respc.openai: Chat Completions deltas from raw output, for every bundled template.

The contract, over every family's samples (templates/samples/, as tests/test_models.py
reads them) and every chunking (whole, 1 character, seeded random sizes, hypothesis): the
deltas add up to the parsed message as ``to_message`` gives it (the fragments of each call
to JSON whose value is the call's arguments, types from ``tools`` included; content and
reasoning to the message's strings; the finish reason). Checked again with the ``openai``
package's own stream accumulator. Then the JSON scanner on its own, streaming as written
(a string's characters before the call closes, typed values whole), errors, and the example.
"""

from __future__ import annotations

import gc
import json
import math
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest
from optional import needs

needs("hypothesis", "transformers.utils.chat_parsing")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_models import _chunkings, _families, _load

import respc
from respc.openai import DeltaParser, JsonScanner, arguments_text, to_message
from respc.runtime.deltas import _IDS_KEPT, new_id

ROOT = Path(__file__).resolve().parent.parent
SEED = 1234


def _all_cases() -> list[tuple[str, dict, dict]]:
    out = []
    for name in _families():
        _, samples = _load(name)
        for case in samples["cases"]:
            out.append((name, samples, case))
    return out


CASES = _all_cases()


def _tools(samples: dict, case: dict) -> list | None:
    return samples["tools"] if case.get("tools", True) else None


def _run(name: str, case: dict, tools: list | None, chunks: list[str], **options) -> tuple[list[dict], str, DeltaParser]:
    parser = DeltaParser(name, prefix=case["prefix"], tools=tools, id_seed=SEED, **options)
    deltas = []
    for chunk in chunks:
        deltas += parser.feed(chunk)
    last, reason = parser.finish(length=case.get("cut", False))
    return deltas + last, reason, parser


def _accumulate(deltas: list[dict]) -> dict:
    """What a client builds from the deltas: strings concatenated, calls by index (each
    starting with its id, type and name)."""
    assert deltas[0] == {"role": "assistant"}, deltas[:1]
    message: dict = {"role": "assistant", "content": None}
    calls: dict[int, dict] = {}
    for delta in deltas[1:]:
        assert len(delta) == 1 and "role" not in delta, delta
        (key, value), = delta.items()
        if key != "tool_calls":
            assert isinstance(value, str) and value, delta
            message[key] = (message.get(key) or "") + value
            continue
        (call,) = value
        index = call["index"]
        if index not in calls:
            assert set(call) == {"index", "id", "type", "function"} and call["function"]["arguments"] == "", call
            assert index == len(calls), f"call {index} started before call {len(calls)}"
            calls[index] = {"id": call["id"], "type": call["type"], "function": dict(call["function"])}
        else:
            assert set(call) == {"index", "function"} and set(call["function"]) == {"arguments"}, call
            calls[index]["function"]["arguments"] += call["function"]["arguments"]
    if calls:
        message["tool_calls"] = [calls[i] for i in range(len(calls))]
    return message


def _decoded(message: dict) -> dict:
    """``message`` with each call's arguments decoded where they are JSON (the contract is
    on values: the streamed text is canonical JSON, which may space a value differently)."""
    out = json.loads(json.dumps(message))
    for call in out.get("tool_calls") or []:
        try:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        except ValueError:
            pass
    return out


def _expected(name: str, case: dict, tools: list | None) -> dict:
    return to_message(respc.parse_response(case["output"], name, prefix=case["prefix"], tools=tools), id_seed=SEED)


def _check(name: str, case: dict, tools: list | None, chunks: list[str], label: str) -> None:
    deltas, reason, parser = _run(name, case, tools, chunks)
    got = _accumulate(deltas)
    want = _expected(name, case, tools)
    where = f"{name}:{case['name']} ({label}); chunks={chunks!r}"
    assert parser.to_message() == want, where
    for key in ("content", "reasoning_content"):
        assert got.get(key) == want.get(key), f"{where}: {key}"
    if case.get("cut"):
        assert reason == "length", where
        # the cut call's arguments are what was written (not JSON); the calls before it are whole
        got_calls, want_calls = got.get("tool_calls", [])[:-1], want.get("tool_calls", [])[:-1]
        assert _decoded({"tool_calls": got_calls}) == _decoded({"tool_calls": want_calls}), where
        return
    assert reason == ("tool_calls" if want.get("tool_calls") else "stop"), where
    assert _decoded(got) == _decoded(want), where
    for call, final in zip(got.get("tool_calls", []), parser.message.get("tool_calls", [])):
        # the contract, on the parsed message itself: the fragments are JSON of its arguments
        arguments = final["function"]["arguments"]
        if isinstance(arguments, str):
            assert call["function"]["arguments"] == arguments, where
        else:
            assert json.loads(call["function"]["arguments"]) == arguments, where


@pytest.mark.slow
@pytest.mark.parametrize("name", _families())
def test_deltas_add_up_to_the_parsed_message(name):
    _, samples = _load(name)
    for case in samples["cases"]:
        tools = _tools(samples, case)
        for label, chunks in _chunkings(case["output"], f"openai:{name}:{case['name']}"):
            _check(name, case, tools, chunks, label)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CASES), st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=60))
def test_any_chunking_gives_the_same_message(item, sizes):
    name, samples, case = item
    text = case["output"]
    chunks, at, k = [], 0, 0
    while at < len(text):
        step = sizes[k % len(sizes)]
        chunks.append(text[at : at + step])
        at += step
        k += 1
    _check(name, case, _tools(samples, case), chunks, f"sizes {sizes}")


def test_the_openai_client_accumulates_the_same_message():
    """The openai package's own accumulator, fed ChatCompletionChunk objects built from the
    deltas, ends with respc's message (as to_message gives it)."""
    needs("openai")
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    checked = 0
    for name, samples, case in CASES:
        if case.get("cut"):
            continue  # a cut call's arguments are not JSON (see test_deltas_add_up_to_the_parsed_message)
        tools = _tools(samples, case)
        chunks = _chunkings(case["output"], f"client:{name}")[2][1]
        deltas, reason, parser = _run(name, case, tools, chunks)
        state = ChatCompletionStreamState()
        for k, delta in enumerate(deltas):
            last = k == len(deltas) - 1
            state.handle_chunk(
                ChatCompletionChunk.model_validate(
                    {
                        "id": "chatcmpl-respc",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": name,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": reason if last else None}],
                    }
                )
            )
        final = state.get_final_completion().choices[0]
        assert final.finish_reason == reason
        message = final.message
        got = {"role": message.role, "content": message.content}
        reasoning = (message.model_extra or {}).get("reasoning_content")
        if reasoning is not None:
            got["reasoning_content"] = reasoning
        if message.tool_calls:
            got["tool_calls"] = [
                {
                    "id": call.id,
                    "type": call.type,
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
                for call in message.tool_calls
            ]
        want = _expected(name, case, tools)
        assert _decoded(got) == _decoded(want), f"{name}:{case['name']}"
        checked += 1
    assert checked > 100


# --- streaming as written ----------------------------------------------------------

_WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "note": {"type": "string"}},
            },
        },
    }
]


def _argument_deltas(deltas: list[dict]) -> list[str]:
    return [d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d and "id" not in d["tool_calls"][0]]


@pytest.mark.parametrize(
    ("name", "open_text", "body", "close_text"),
    [
        ("qwen3", '<tool_call>\n{"name": "get_weather", "arguments": ', '{"city": "%s", "days": "3"}', "}\n</tool_call>"),
        ("gpt-oss", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>", '{"city": "%s", "days": "3"}', "<|call|>"),
        ("kimi-k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>", '{"city": "%s", "days": "3"}', "<|tool_call_end|>"),
        ("mistral-small-3.1", "[TOOL_CALLS]", '[{"name": "get_weather", "id": "a1b2c3d4e", "arguments": {"city": "%s", "days": "3"}}]', "</s>"),
    ],
)
def test_a_json_string_argument_streams_as_it_is_written(name, open_text, body, close_text):
    """A string argument's characters are sent as they arrive, long before the call closes;
    an argument typing changes ("3" for an integer) is sent once complete, typed."""
    city = "Llanfairpwllgwyngyll" * 5
    text = open_text + body % city + close_text
    parser = DeltaParser(name, prefix="", tools=_WEATHER, id_seed=SEED)
    fragments_before_city_ends = []
    end_of_city = text.index(city) + len(city)
    sent = []
    for at, char in enumerate(text):
        fragments = _argument_deltas(parser.feed(char))
        sent += fragments
        if at < end_of_city:
            fragments_before_city_ends += fragments
    last, reason = parser.finish()
    sent += _argument_deltas(last)
    assert reason == "tool_calls"
    assert len("".join(fragments_before_city_ends)) > len(city) // 2, sent[:5]
    assert json.loads("".join(sent)) == {"city": city, "days": 3}
    assert not any('"3"' in fragment for fragment in sent)


@pytest.mark.parametrize("name", ["qwen3-coder", "glm-4.5", "minimax-m2"])
def test_xml_parameters_are_sent_as_each_completes(name):
    _, samples = _load(name)
    case = next(c for c in samples["cases"] if c["name"] == "reasoning_tool_call")
    parser = DeltaParser(name, prefix=case["prefix"], tools=samples["tools"], id_seed=SEED)
    before_close = []
    for char in case["output"]:
        before_close += _argument_deltas(parser.feed(char))
    assert before_close and before_close[0].startswith("{"), before_close


def test_a_call_list_sends_each_argument():
    parser = DeltaParser("llama3.2-pythonic", prefix="", tools=_WEATHER, id_seed=SEED)
    deltas = parser.feed('[get_weather(city="Paris", days="3"), get_weather(city="Rome")]')
    deltas += parser.finish()[0]
    calls = _accumulate(deltas)["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [{"city": "Paris", "days": 3}, {"city": "Rome"}]


def test_long_arguments_stream_whole():
    """A string argument and an xml parameter of many thousand chunks (the argument text
    sent, which the close checks, and an xml body are kept merged into few strings) add up
    to the message's arguments, with nothing sent twice."""
    value = "".join(f"word{i} \u00e9\\n " for i in range(6000))  # escapes as the model writes them
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "' + value + '"}}\n</tool_call>'
    parser = DeltaParser("qwen3", prefix="", tools=_WEATHER, id_seed=SEED)
    deltas = [d for at in range(0, len(text), 3) for d in parser.feed(text[at : at + 3])] + parser.finish()[0]
    (call,) = _accumulate(deltas)["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"city": json.loads(f'"{value}"')}
    note = "".join(f"line {i}\n" for i in range(3000))
    text = "<tool_call>\n<function=get_weather>\n<parameter=note>\n" + note + "</parameter>\n</function>\n</tool_call>"
    parser = DeltaParser("qwen3-coder", prefix="", tools=_WEATHER, id_seed=SEED)
    deltas = [d for at in range(0, len(text), 2) for d in parser.feed(text[at : at + 2])] + parser.finish()[0]
    (call,) = _accumulate(deltas)["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == parser.message["tool_calls"][0]["function"]["arguments"]


_HELD_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {
                    "s": {"type": "string"},
                    "o": {"type": "object"},
                    "a": {"type": "array"},
                    "i": {"type": "integer"},
                    "u": {"type": ["array", "integer"]},
                },
            },
        },
    }
]
_SCALAR = st.integers() | st.text(max_size=3) | st.floats(allow_nan=False)
#: argument texts json.dumps does not write back as they are: a repeated key (at any
#: depth), lone surrogates, a surrogate pair, a number json writes otherwise
_ODD_VALUES = [
    '{"k": 1, "k": 2}',
    '{"k": {"z": [1], "z": 2}, "y": 3}',
    '[{"k": 1}, {"k": 1, "k": 2}]',
    '{"k": "\\ud800"}',
    '["\\udc00x"]',
    '["\\ud83d\\ude00", "\\ud83d"]',
    '[1.50, -0, 1e400, 1E2, "\\u00e9\\/"]',
    '{"\\u0061": 1, "a": 2}',
    "[" * 120 + "]" * 120,
    "[" + "9" * 4100 + "]",
]


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_ODD_VALUES)
    | st.builds(json.dumps, st.lists(_SCALAR, max_size=3) | st.dictionaries(st.text(max_size=3), _SCALAR, max_size=3)),
    st.sampled_from(["o", "a", "i", "u"]),
    st.integers(1, 9),
)
def test_a_held_argument_is_sent_as_json_writes_its_typed_value(value, key, size):
    """An argument held until complete (its schema has a type typing casts to) is sent as
    ``json.dumps`` writes the value the message has: the same text when it is an object or
    a list typing leaves alone, the value's own text when the model wrote it otherwise (a
    repeated key, a lone surrogate escape)."""
    text = '<tool_call>\n{"name": "f", "arguments": {"s": "x", "%s": %s, "t": [1]}}\n</tool_call>' % (key, value)
    parser = DeltaParser("qwen3", prefix="", tools=_HELD_TOOLS, id_seed=SEED)
    deltas = [d for at in range(0, len(text), size) for d in parser.feed(text[at : at + size])] + parser.finish()[0]
    (call,) = _accumulate(deltas)["tool_calls"]
    arguments = parser.message["tool_calls"][0]["function"]["arguments"]
    assert call["function"]["arguments"] == _strict_dumps(arguments), text


def _strict_dumps(value) -> str:
    """``json.dumps(value, ensure_ascii=False)``, with the infinities as ``1e999`` and
    ``-1e999`` and NaN as ``null`` (strict JSON: docs/openai.md, "Values JSON has no text
    for"); the marks stand for them where json writes them (no 4-character string of the
    values tested is one)."""
    marks = {math.inf: "\x00inf", -math.inf: "\x00-inf"}

    def mark(item):
        if isinstance(item, float) and not math.isfinite(item):
            return marks.get(item, None)
        if isinstance(item, list):
            return [mark(x) for x in item]
        if isinstance(item, dict):
            return {k: mark(v) for k, v in item.items()}
        return item

    text = json.dumps(mark(value), ensure_ascii=False)
    return text.replace('"\\u0000inf"', "1e999").replace('"\\u0000-inf"', "-1e999")


def test_ids_are_the_seeds_choices():
    """A call id the format does not write is ``call_`` and ``random.Random(id_seed).choices``
    of 24 alphanumerics: the same ids for the same seed from one release to the next."""
    for seed in [0, 1, 7, "x", 2**70]:
        rng, ref = random.Random(seed), random.Random(seed)
        for _ in range(4):
            assert new_id(rng) == "call_" + "".join(ref.choices(string.ascii_letters + string.digits, k=24))


#: an xml parameter's value: text with tags, tails and partial tails of its own
_XML_VALUE = st.lists(
    st.sampled_from(["a", " ", "\n", "<", ">", "</param", "</parameter>", "<parameter=x>", "3", "é"]), max_size=6
).map("".join)


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["city", "days", "note", "x y"]), _XML_VALUE, st.sampled_from(["", "\n"])), max_size=4
    ),
    st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=40),
)
def test_xml_parameters_stream_for_any_chunking(parameters, sizes):
    """xml-inline parameters, values with tags and tails of their own among them, the body
    fed in any chunks: each parameter is sent before the call's closing tags are written,
    and the fragments add up to the message's arguments."""
    body = "".join(f"<parameter={key}>{gap}{value}{gap}</parameter>\n" for key, value, gap in parameters)
    opening = "<tool_call>\n<function=get_weather>\n"
    parser = DeltaParser("qwen3-coder", prefix="", tools=_WEATHER, id_seed=SEED)
    deltas = parser.feed(opening)
    at = turn = 0
    while at < len(body):
        size = sizes[turn % len(sizes)]
        deltas += parser.feed(body[at : at + size])
        at, turn = at + size, turn + 1
    sent = "".join(_argument_deltas(deltas))
    deltas += parser.feed("</function>\n</tool_call>") + parser.finish()[0]
    arguments = parser.message["tool_calls"][0]["function"]["arguments"]
    for key in arguments:
        assert json.dumps(key, ensure_ascii=False) + ": " in sent, (body, sent)
    assert json.loads("".join(_argument_deltas(deltas))) == arguments, body


@pytest.mark.slow
@pytest.mark.parametrize("name", _families())
def test_bare_chunk_events_give_the_same_deltas(name):
    """Without spans, DeltaParser has the parser give each region_chunk as its text alone
    (the runtime's ``_bare`` hook); with spans=True it reads the events as dicts. Both give
    the same deltas, chunk by chunk."""
    _, samples = _load(name)
    for case in samples["cases"]:
        tools = _tools(samples, case)
        for label, chunks in _chunkings(case["output"], f"bare:{name}:{case['name']}")[1:3]:
            got = []
            for spans in (False, True):
                parser = DeltaParser(name, prefix=case["prefix"], tools=tools, id_seed=SEED, spans=spans)
                try:
                    got.append([parser.feed(chunk) for chunk in chunks] + [parser.finish(length=case.get("cut", False))])
                except ValueError as error:  # a malformed call: raised the same way
                    got.append(str(error))
            assert got[0] == got[1], f"{name}:{case['name']} ({label})"


def test_bare_chunk_events_are_the_chunk_texts():
    """The runtime's hook: with ``_bare`` set, a region_chunk event is its text (a str), the
    other events stay dicts, and the texts are those of the dict events."""
    output = "<think>a b\n</think>Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"
    events = {}
    for bare in (False, True):
        parser = respc.get_response_parser("qwen3", prefix="")
        parser._bare = bare
        events[bare] = [e for chunk in output for e in parser.feed(chunk)] + parser.finalize()[1]
    assert [e["text"] if e["type"] == "region_chunk" else e for e in events[False]] == events[True]
    assert any(isinstance(e, str) for e in events[True])


def test_a_parser_copies_and_pickles_mid_stream():
    """A DeltaParser copied or pickled inside a call's argument goes on as the original does."""
    import copy
    import pickle

    head, rest = '<think>hm</think>Hi <tool_call>\n{"name": "f", "arguments": {"a": "xy', 'z", "b": 2}}\n</tool_call>'
    original = DeltaParser("qwen3", prefix="", id_seed=SEED)
    original.feed(head)
    others = [copy.deepcopy(original), pickle.loads(pickle.dumps(original))]
    want = original.feed(rest) + original.finish()[0]
    assert want == [{"tool_calls": [{"index": 0, "function": {"arguments": 'z", "b": 2}'}}]}]
    for other in others:
        assert other.feed(rest) + other.finish()[0] == want


# --- text fields, ids, finish reasons, errors ---------------------------------------


def test_text_is_stripped_and_joined_as_the_message():
    """Whitespace the field's strip drops is never sent; blocks of a joined field are."""
    output = (
        "<|channel|>analysis<|message|>  first thought \n<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>second<|end|>"
        "<|start|>assistant<|channel|>final<|message|>\n Hello   there \n<|return|>"
    )
    for chunks in ([output], list(output)):
        parser = DeltaParser("gpt-oss", prefix="", id_seed=SEED, reasoning_key="reasoning")
        deltas = [d for chunk in chunks for d in parser.feed(chunk)] + parser.finish()[0]
        message = _accumulate(deltas)
        assert message["reasoning"] == "first thought\nsecond"
        assert message["content"] == "Hello   there"
        assert parser.to_message() == {"role": "assistant", "content": "Hello   there", "reasoning": "first thought\nsecond"}


def test_ids_come_from_the_format_or_the_seed():
    seeded = DeltaParser("qwen3", prefix="", id_seed=7)
    deltas = seeded.feed('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>') + seeded.finish()[0]
    (header,) = [d["tool_calls"][0] for d in deltas if "tool_calls" in d and "id" in d["tool_calls"][0]]
    assert header["id"].startswith("call_") and len(header["id"]) == 29 and header["id"][5:].isalnum()
    again = DeltaParser("qwen3", prefix="", id_seed=7)
    assert again.feed('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>')[1]["tool_calls"][0]["id"] == header["id"]
    assert to_message(seeded.message, id_seed=7)["tool_calls"][0]["id"] == header["id"]
    kimi = DeltaParser("kimi-k2", prefix="")
    deltas = kimi.feed("<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|>")
    headers = [d["tool_calls"][0] for d in deltas + kimi.finish()[0] if "tool_calls" in d and "id" in d["tool_calls"][0]]
    assert [header["id"] for header in headers] == ["functions.f:0"]


def test_ids_follow_the_seeds_sequence_in_every_stream():
    """Every stream with a seed gives the ids of that seed's sequence from its first, past
    the ids kept per seed too (runtime/deltas.py, seeded_id), and for a seed that is not
    hashable; streams without a seed get ids of the same shape, all different."""
    count = _IDS_KEPT + 3
    body = "".join(f'<tool_call>\n{{"name": "f{i}", "arguments": {{}}}}\n</tool_call>' for i in range(count))

    def ids(seed: object) -> list[str]:
        parser = DeltaParser("qwen3", prefix="", id_seed=seed)
        deltas = parser.feed(body) + parser.finish()[0]
        return [d["tool_calls"][0]["id"] for d in deltas if "tool_calls" in d and "id" in d["tool_calls"][0]]

    for seed in [5, "x", bytearray(b"x")]:
        rng = random.Random(seed)
        expected = [new_id(rng) for _ in range(count)]
        assert ids(seed) == expected and ids(seed) == expected, seed
    unseeded = ids(None) + ids(None)
    assert len(set(unseeded)) == 2 * count and all(i.startswith("call_") and len(i) == 29 for i in unseeded)


@pytest.mark.parametrize("name", _families())
def test_a_finished_stream_is_freed_without_the_cycle_collector(name):
    """A stream's readers let go of each other when their region ends, so a finished
    DeltaParser is freed by reference counting: no reference cycle for the garbage collector
    to find, per stream, in a server that runs many."""
    _, samples = _load(name)
    case = next((c for c in samples["cases"] if "tool_calls" in (c.get("expected") or {})), samples["cases"][0])
    tools = _tools(samples, case)
    text = case["output"]
    _run(name, case, tools, [text])  # a first run makes what is made once (the plan, regexes)
    gc.collect()
    gc.disable()
    try:
        _run(name, case, tools, [text[i : i + 3] for i in range(0, len(text), 3)])
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_finish_reasons():
    parser = DeltaParser("qwen3", prefix="")
    assert parser.feed("Hello ") == [{"role": "assistant"}, {"content": "Hello"}]
    assert parser.finish() == ([], "stop")
    parser = DeltaParser("qwen3", prefix="")
    assert parser.finish(length=True) == ([{"role": "assistant"}], "length")
    with pytest.raises(RuntimeError, match="already finished"):
        parser.feed("x")


def test_to_message_shape():
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "x1", "type": "function", "function": {"name": "f", "arguments": {"a": [1, "é"]}}},
            {"type": "function", "function": {"name": "g", "arguments": '{"raw": 1'}},
            {"type": "function", "function": {"name": "h"}},
        ],
    }
    out = to_message(message, id_seed=3)
    assert out["content"] is None and "reasoning_content" not in out
    assert [c["id"] for c in out["tool_calls"]][0] == "x1"
    assert [c["function"]["arguments"] for c in out["tool_calls"]] == ['{"a": [1, "é"]}', '{"raw": 1', "{}"]
    assert arguments_text("raw text") == "raw text"
    with pytest.raises(TypeError, match="message must be a dict"):
        to_message("hello")


def test_a_malformed_call_raises_as_the_parser_does():
    # command-r7b parses its action list as one JSON document, without allow_non_json
    bad = '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {"a": 1,}}]<|END_ACTION|>'
    with pytest.raises(ValueError) as expected:
        respc.parse_response(bad, "command-r7b", prefix="")
    parser = DeltaParser("command-r7b", prefix="")
    with pytest.raises(ValueError) as raised:
        for char in bad:
            parser.feed(char)
        parser.finish()
    assert type(raised.value) is type(expected.value) and str(raised.value) == str(expected.value)


# --- outputs the samples do not show ---------------------------------------------------

_MUTATIONS = ['"', "{", "}", ",", ":", "\\", " ", "\n", "a", "1", "<", ">", "[", "]"]


def _mutated(rng: random.Random, text: str) -> str:
    """``text`` with a few characters deleted, inserted (JSON and markup punctuation) or a
    stretch repeated: outputs a model may write that no sample shows."""
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        if not chars:
            break
        at = rng.randrange(len(chars))
        roll = rng.random()
        if roll < 0.4:
            del chars[at]
        elif roll < 0.7:
            chars.insert(at, rng.choice(_MUTATIONS))
        else:
            chars[at:at] = chars[at : at + rng.randint(1, 20)]
    return "".join(chars)


def _text_regions(name: str, output: str, prefix: str, tools: list | None) -> dict[str, int]:
    """How many regions of each field hold text (not whitespace alone)."""
    parser = respc.get_response_parser(name, prefix=prefix, tools=tools)
    events = list(parser.initial_events) + parser.feed(output) + parser.finalize()[1]
    counts: dict[str, int] = {}
    text: dict[str, bool] = {}
    for event in events:
        field = event["field"]
        if event["type"] == "region_open":
            text[field] = False
        elif event["type"] == "region_chunk" and event["text"].strip():
            text[field] = True
        elif event["type"] in ("region_close", "region_malformed") and text.pop(field, False):
            counts[field] = counts.get(field, 0) + 1
    for field, had in text.items():  # a region the end closed without an event
        counts[field] = counts.get(field, 0) + had
    return counts


def _object_text(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def test_mutated_outputs_stream_as_they_parse():
    """Over mutated sample outputs (seeded), a stream raises what parse_response raises, and
    otherwise adds up to its message, but for the two cases docs/openai.md describes, where
    a stream cannot take back what it sent: a call body that stops being JSON after its
    start (the template allows non-JSON: the message has the raw text), and a text field
    without ``join`` written in two regions (the message keeps the last)."""
    rng = random.Random(20261201)
    checked = 0
    for _ in range(700):
        name, samples, case = rng.choice(CASES)
        tools = _tools(samples, case)
        output = _mutated(rng, case["output"])
        chunks, at = [], 0
        while at < len(output):
            step = rng.randint(1, 9)
            chunks.append(output[at : at + step])
            at += step
        where = f"{name}:{case['name']} output={output!r} chunks={chunks!r}"
        try:
            want = to_message(respc.parse_response(output, name, prefix=case["prefix"], tools=tools), id_seed=SEED)
        except Exception as error:  # noqa: BLE001 -- the stream must raise the same
            if not case.get("cut"):
                with pytest.raises(type(error)):
                    _run(name, dict(case, output=output), tools, chunks)
                continue
            # cut (finish(length=True)): a region the cut leaves open that fails to parse
            # ends the stream, malformed (a region before it raises, as parse_response does)
            try:
                _, reason, parser = _run(name, dict(case, output=output), tools, chunks)
            except type(error):
                continue
            message, errors = respc.parse_response(output, name, prefix=case["prefix"], tools=tools, on_malformed="collect")
            bare = [{k: e[k] for k in ("type", "field", "error", "text")} for e in parser.errors]  # (less start, end)
            assert reason == "length" and parser.message == message and bare == errors, where
            continue
        deltas, _, _ = _run(name, dict(case, output=output), tools, chunks)
        got = _accumulate(deltas)
        if any(not call["function"]["name"] or not _object_text(call["function"]["arguments"]) for call in want.get("tool_calls") or []):
            continue  # a body that is not JSON (the message has its raw text)
        template, _ = _load(name)
        regions = _text_regions(name, output, case["prefix"], tools)
        fields = template["fields"]
        if any(count > 1 and "join" not in fields[field] for field, count in regions.items() if field in fields):
            continue  # a field written twice: the message keeps the last region
        assert _decoded(got) == _decoded(want), where
        checked += 1
    assert checked > 400, checked  # most mutations keep to the contract


# --- the JSON scanner ----------------------------------------------------------------


class _Collect:
    def __init__(self):
        self.parts: list[str] = []
        self.keys: list[tuple[str, int]] = []
        self.events: list[tuple] = []

    def begin(self, kind, depth):
        self.events.append(("begin", kind, depth))

    def text(self, piece):
        self.parts.append(piece)

    def key(self, name, depth):
        self.keys.append((name, depth))

    def end(self, depth):
        self.events.append(("end", depth))


def _scan(pieces: list[str], handler: _Collect | None = None) -> tuple[_Collect, JsonScanner]:
    handler = handler or _Collect()
    scanner = JsonScanner(handler)
    for piece in pieces:
        scanner.feed(piece)
    scanner.finish()
    return handler, scanner


def _every_split(text: str):
    yield [text]
    yield list(text)
    for i in range(1, len(text)):
        yield [text[:i], text[i:]]


@pytest.mark.parametrize(
    "text",
    [
        r'{"a": "x\"y\\z\/\n\t\u00e9\u0001", "b": "\ud83d\ude00 ok"}',
        r'["\ud83d\ude00\ud83d\ude01", "\ud83dlone", "\udc00"]',
        '{"nested": {"list": [1, [2, {"deep": []}], {}], "s": ""}, "n": -0.5e+3}',
        ' \n {  "k" :\t[ true ,false, null , 12345678901234567890 , 1.0E2, -0 ] }\r\n',
        # keys and escapes that json writes otherwise (the scanner's run of text as written ends there)
        r'{"k\u0041y": 1, "a\"b": [2, 3.50], "\u001F": "\u001F\/", "ok": "as written"}',
        '"just a string"',
        "42",
    ],
)
def test_json_scanner_text_is_canonical_for_every_split(text):
    want = json.dumps(json.loads(text), ensure_ascii=False)
    for pieces in _every_split(text):
        handler, scanner = _scan(pieces)
        got = "".join(handler.parts)
        assert json.loads(got) == json.loads(text), pieces
        if "\\ud83dlone" not in text and "\\udc00" not in text:
            assert got == want, pieces
        assert scanner.done, pieces


def test_json_scanner_keys_depths_and_events():
    handler, _ = _scan(list('{"a": {"b": [1, "x"]}, "c": 2}'))
    assert handler.keys == [("a", 1), ("b", 2), ("c", 1)]
    assert handler.events == [
        ("begin", "{", 0),
        ("begin", "{", 1),
        ("begin", "[", 2),
        ("begin", "0", 3),
        ("end", 3),
        ("begin", '"', 3),
        ("end", 3),
        ("end", 2),
        ("end", 1),
        ("begin", "0", 1),
        ("end", 1),
        ("end", 0),
    ]


class _Shallow(_Collect):
    max_depth = 1


def test_json_scanner_tells_a_handler_only_the_depths_it_asks_for():
    # begin/key/end of deeper values are left out; their text comes all the same, and the
    # text read between two other calls comes in one piece
    text = '{"a": {"b": [1, "x"]}, "c": 2}'
    for pieces in _every_split(text):
        handler, scanner = _scan(pieces, _Shallow())
        assert "".join(handler.parts) == text and scanner.done, pieces
        assert handler.keys == [("a", 1), ("c", 1)], pieces
        assert handler.events == [("begin", "{", 0), ("begin", "{", 1), ("end", 1), ("begin", "0", 1), ("end", 1), ("end", 0)], pieces
    handler, _ = _scan([text], _Shallow())
    assert handler.parts == ["{", '"a": ', '{"b": [1, "x"]}', ", ", '"c": ', "2", "}"]


def test_json_scanner_sends_string_text_before_the_string_ends():
    handler = _Collect()
    scanner = JsonScanner(handler)
    scanner.feed('{"a": "hel')
    assert "".join(handler.parts) == '{"a": "hel'
    scanner.feed("lo\\")  # an escape cut in two waits for its second half
    assert "".join(handler.parts) == '{"a": "hello'
    scanner.feed('n", "n": 12')
    assert "".join(handler.parts) == '{"a": "hello\\n", "n": '  # 12 may go on (123)
    scanner.feed("3}")
    assert "".join(handler.parts) == '{"a": "hello\\n", "n": 123}' and scanner.done


@pytest.mark.parametrize("text", ['{"a": 1,}', '{"a" 1}', "[1 2]", '{"a": tru}', '"a\x01"', '{"a": "\\x"}', "{} x", "[01]"])
def test_json_scanner_stops_at_what_is_not_json(text):
    _, scanner = _scan([text])
    assert scanner.bad


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(_JSON, st.booleans(), st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")]), st.integers(1, 7))
def test_json_scanner_matches_json_on_random_values(value, ascii_only, separators, size):
    text = json.dumps(value, ensure_ascii=ascii_only, separators=separators)
    if not isinstance(value, (dict, list)):
        text = f" {text} "
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    handler, scanner = _scan(pieces)
    assert scanner.done, text
    got = "".join(handler.parts)
    assert json.loads(got) == json.loads(text), text
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(value, ensure_ascii=False)):
        assert got == json.dumps(json.loads(text), ensure_ascii=False), text


# --- the example ---------------------------------------------------------------------


def test_the_example_prints_chunks():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "openai_stream.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(ROOT.parent),
    )
    assert result.returncode == 0, result.stderr
    chunks = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
    assert deltas[0] == {"role": "assistant"}
    assert chunks[-1]["choices"][0]["finish_reason"] in ("tool_calls", "stop")


def test_spans_hand_out_the_events_behind_the_deltas():
    text = "<think>hm</think>Hi"
    p = DeltaParser("qwen3", prefix="", spans=True)
    deltas = p.feed(text)
    assert deltas and [e["type"] for e in p.events][:2] == ["region_open", "region_chunk"]
    assert p.events[0]["start"] == 0 and p.events[0]["end"] == len("<think>")
    p.finish()
    quiet = DeltaParser("qwen3", prefix="")
    quiet.feed(text)
    assert quiet.events == []
    with pytest.raises(TypeError, match="spans must be True or False"):
        DeltaParser("qwen3", prefix="", spans="yes")
