"""Every example of the response-templates spec, run through respc's public API.

Each example asserts an explicit expected value (taken from the spec) AND that respc agrees with the
behavioural reference (transformers==5.23.0 `transformers.utils.chat_parsing`), both for the one-shot
`parse_response` and for the streaming `ResponseParser` (messages and complete event streams, fed as one
chunk, char by char, and in the spec's own chunks).
"""

import copy
import json
import pathlib

import pytest

import respc
from optional import needs

needs("transformers.utils.chat_parsing")

from compare import assert_same, run_stream
from transformers.utils.chat_parsing import ResponseParser as RefParser
from transformers.utils.chat_parsing import parse_response as ref_parse


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def flat_events(run):
    return run["initial"] + [e for batch in run["fed"] for e in batch] + run["final"]


def both_stream(template, chunks, prefix="", tools=None):
    """Stream `chunks` through respc and the reference; assert identical per-call event lists and message."""
    got = run_stream(lambda: respc.ResponseParser(copy.deepcopy(template), prefix, tools=tools), chunks)
    ref = run_stream(lambda: RefParser(copy.deepcopy(template), prefix, tools=tools), chunks)
    assert_same(got, ref)
    return got


def both_parse(text, template, prefix="", tools=None):
    got = respc.parse_response(text, copy.deepcopy(template), prefix=prefix, tools=tools)
    ref = ref_parse(text, copy.deepcopy(template), prefix=prefix, tools=tools)
    assert_same(got, ref)
    return got


def check(text, template, expected, prefix="", tools=None):
    """One-shot + streaming (whole, char-by-char) against the reference and against `expected`."""
    message = both_parse(text, template, prefix=prefix, tools=tools)
    assert_same(message, expected)
    chunkings = [[text], list(text)] + [[text[i : i + n] for i in range(0, len(text), n)] for n in (2, 3, 7)]
    for chunks in chunkings:
        run = both_stream(template, chunks, prefix=prefix, tools=tools)
        assert_same(run["message"], expected)
    return message


def both_raise(exc, text, template, prefix="", tools=None):
    with pytest.raises(exc):
        respc.parse_response(text, copy.deepcopy(template), prefix=prefix, tools=tools)
    with pytest.raises(exc):
        ref_parse(text, copy.deepcopy(template), prefix=prefix, tools=tools)


def closes(events):
    return [(e["field"], e["value"]) for e in events if e["type"] == "region_close"]


# --------------------------------------------------------------------------------------------------
# templates from the spec
# --------------------------------------------------------------------------------------------------

SMOLLM = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {
            "close": "<|im_end|>",
            "content": "text",
        },
    },
}

SMOLLM_OUTPUT = (
    "<think>\nI should greet the user\n</think>\n\n"
    '<tool_call>{"name": "greet_user", "arguments": {"greeting": "Hi!"}}</tool_call>'
)

SMOLLM_MESSAGE = {
    "role": "assistant",
    "reasoning_content": "I should greet the user",
    "tool_calls": [{"type": "function", "function": {"name": "greet_user", "arguments": {"greeting": "Hi!"}}}],
}

MULTI_TURN_PREFIX = (
    "<|im_start|>user\nHi<|im_end|>\n"
    "<|im_start|>assistant\nHello!<|im_end|>\n"
    "<|im_start|>user\nAgain?<|im_end|>\n"
    "<|im_start|>assistant\n"
)

QWEN3_TOOL_CALLS = {
    "open_pattern": r"<tool_call>\s*<function=(?P<name>\w+)>",
    "close": "</tool_call>",
    "repeats": True,
    "content": "xml-inline",
    "content_args": {
        "tag_pattern": r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>",
        "value_parser": {"name": "json", "args": {"allow_non_json": True}},
    },
    "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
}

GPT_OSS_TOOL_CALLS = {
    "open_pattern": r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
    "close": "<|call|>",
    "repeats": True,
    "content": "json",
    "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
}

COHERE_TOOL_CALLS = {
    "open": "<|START_ACTION|>",
    "close": "<|END_ACTION|>",
    "content": "json",
    "transform_each": True,
    "transform": {"type": "function", "function": {"name": "{tool_name}", "arguments": "{parameters}"}},
}


def single_field(name, field, **top):
    return {"start_anchor": "<s>", **top, "fields": {name: field}}


# --------------------------------------------------------------------------------------------------
# the SmolLM example / streaming example
# --------------------------------------------------------------------------------------------------


def test_smollm_example_exact_output():
    check(SMOLLM_OUTPUT, SMOLLM, SMOLLM_MESSAGE)


def test_smollm_example_with_im_end_and_prompt_prefix():
    prefix = "<|im_start|>user\nGreet me<|im_end|>\n<|im_start|>assistant\n"
    message = check(SMOLLM_OUTPUT + "<|im_end|>", SMOLLM, SMOLLM_MESSAGE, prefix=prefix)
    assert "content" not in message


def test_smollm_plain_answer_goes_to_implicit_content():
    text = "<think>\nhmm\n</think>\n\nThe Cold War ended in 1991.<|im_end|>"
    check(
        text,
        SMOLLM,
        {"role": "assistant", "reasoning_content": "hmm", "content": "The Cold War ended in 1991."},
    )


SPEC_STREAM_CHUNKS = [
    "<think>I should ",
    "greet the user",
    "</think>",
    "<tool_call>",
    '{"name": "greet_user", ',
    '"arguments": {"greeting": "Hi!"}}',
    "</tool_call>",
]

SPEC_STREAM_EVENTS = [
    {"type": "region_open", "field": "reasoning_content"},
    {"type": "region_chunk", "field": "reasoning_content", "text": "I should ", "dirty": False},
    {"type": "region_chunk", "field": "reasoning_content", "text": "greet the user", "dirty": False},
    {"type": "region_close", "field": "reasoning_content", "value": "I should greet the user"},
    {"type": "region_open", "field": "tool_calls"},
    {"type": "region_chunk", "field": "tool_calls", "text": '{"name": "greet_user", ', "dirty": True},
    {"type": "region_chunk", "field": "tool_calls", "text": '"arguments": {"greeting": "Hi!"}}', "dirty": True},
    {
        "type": "region_close",
        "field": "tool_calls",
        "value": {"type": "function", "function": {"name": "greet_user", "arguments": {"greeting": "Hi!"}}},
    },
]


def test_streaming_event_example_exact_events():
    run = both_stream(SMOLLM, SPEC_STREAM_CHUNKS)
    assert run["initial"] == []
    assert_same(flat_events(run), SPEC_STREAM_EVENTS)
    assert run["final"] == []
    assert_same(run["message"], SMOLLM_MESSAGE)


def test_streaming_events_are_emitted_as_soon_as_possible():
    run = both_stream(SMOLLM, SPEC_STREAM_CHUNKS)
    # the region_close of reasoning_content is produced by the feed that carried "</think>"
    assert run["fed"][2] == [SPEC_STREAM_EVENTS[3]]
    assert run["fed"][0] == SPEC_STREAM_EVENTS[0:2]
    assert run["fed"][6] == [SPEC_STREAM_EVENTS[7]]


def test_streaming_char_by_char_holds_partial_delimiters():
    text = "".join(SPEC_STREAM_CHUNKS)
    run = both_stream(SMOLLM, list(text))
    events = flat_events(run)
    chunks = [e for e in events if e["type"] == "region_chunk"]
    # no chunk ever leaks a piece of a delimiter
    assert "".join(c["text"] for c in chunks if c["field"] == "reasoning_content") == "I should greet the user"
    assert "".join(c["text"] for c in chunks if c["field"] == "tool_calls") == (
        '{"name": "greet_user", "arguments": {"greeting": "Hi!"}}'
    )
    assert closes(events) == [(e["field"], e["value"]) for e in SPEC_STREAM_EVENTS if e["type"] == "region_close"]
    assert_same(run["message"], SMOLLM_MESSAGE)


def test_streaming_get_response_parser_equivalent():
    parser = respc.get_response_parser(copy.deepcopy(SMOLLM), prefix="")
    assert parser.initial_events == []
    events = []
    for chunk in SPEC_STREAM_CHUNKS:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    assert_same(events + final, SPEC_STREAM_EVENTS)
    assert_same(message, SMOLLM_MESSAGE)


# --------------------------------------------------------------------------------------------------
# prefix / start anchor
# --------------------------------------------------------------------------------------------------


def test_multi_turn_prefix_from_spec_is_truncated_after_last_anchor():
    run = both_stream(SMOLLM, ["Sure, again!<|im_end|>"], prefix=MULTI_TURN_PREFIX)
    assert run["initial"] == []
    assert_same(run["message"], {"role": "assistant", "content": "Sure, again!"})
    assert "Hello!" not in json.dumps(flat_events(run))
    check("Sure, again!<|im_end|>", SMOLLM, {"role": "assistant", "content": "Sure, again!"}, prefix=MULTI_TURN_PREFIX)


def test_multi_turn_previous_turn_regions_do_not_leak():
    prefix = (
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n<think>old thoughts</think>"
        '<tool_call>{"name": "old", "arguments": {}}</tool_call>Hello!<|im_end|>\n'
        "<|im_start|>user\nAgain?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    message = check("Sure!<|im_end|>", SMOLLM, {"role": "assistant", "content": "Sure!"}, prefix=prefix)
    assert "reasoning_content" not in message and "tool_calls" not in message


def test_anchor_is_never_applied_to_the_generation():
    text = "<think>r</think><|im_start|>assistant\nhello<|im_end|>"
    check(
        text,
        SMOLLM,
        {"role": "assistant", "reasoning_content": "r", "content": "<|im_start|>assistant\nhello"},
    )


def test_anchor_in_generation_does_not_drop_earlier_regions_gpt_oss_style():
    template = {
        "start_anchor": "<|start|>assistant",
        "fields": {
            "reasoning_content": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>"},
            "content": {"open": "<|channel|>final<|message|>", "close": ["<|return|>", "<|end|>"]},
        },
    }
    text = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>hi<|return|>"
    check(text, template, {"reasoning_content": "think", "content": "hi"}, prefix="<|start|>assistant")


def test_anchor_missing_in_prefix_whole_prefix_is_processed():
    template = single_field("reasoning_content", {"open": "<think>", "close": "</think>"})
    # No "<s>" in the prefix: the whole prefix is processed, so the closed region lands in the message.
    run = both_stream(template, ["new"], prefix="<think>old</think>")
    assert_same(
        run["initial"],
        [
            {"type": "region_open", "field": "reasoning_content"},
            {"type": "region_chunk", "field": "reasoning_content", "text": "old", "dirty": False},
            {"type": "region_close", "field": "reasoning_content", "value": "old"},
        ],
    )
    assert_same(run["message"], {"reasoning_content": "old"})
    # With the anchor present, everything before it is dropped.
    run = both_stream(template, ["new"], prefix="<think>old</think><s>")
    assert run["initial"] == []
    assert_same(run["message"], {})


def test_anchor_truncation_uses_last_occurrence():
    template = single_field("reasoning_content", {"open": "<think>", "close": "</think>"})
    prefix = "<s><think>a</think><s><think>b</think><s><think>"
    run = both_stream(template, ["c</think>"], prefix=prefix)
    assert_same(
        run["initial"],
        [{"type": "region_open", "field": "reasoning_content"}],
    )
    assert_same(run["message"], {"reasoning_content": "c"})


def test_start_anchor_pattern_multi_turn():
    template = copy.deepcopy(SMOLLM)
    del template["start_anchor"]
    template["start_anchor_pattern"] = r"<\|im_start\|>assistant\s*"
    prefix = MULTI_TURN_PREFIX + "<think>"
    run = both_stream(template, ["x</think>y<|im_end|>"], prefix=prefix)
    assert_same(run["initial"], [{"type": "region_open", "field": "reasoning_content"}])
    assert_same(run["message"], {"role": "assistant", "reasoning_content": "x", "content": "y"})


def test_prefix_that_opens_think_initial_events_and_message():
    prefix = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    chunks = ["I should greet ", "the user\n</think>\n\n", "Hello!<|im_end|>"]
    run = both_stream(SMOLLM, chunks, prefix=prefix)
    assert_same(
        run["initial"],
        [
            {"type": "region_open", "field": "reasoning_content"},
            {"type": "region_chunk", "field": "reasoning_content", "text": "\n", "dirty": False},
        ],
    )
    expected = {"role": "assistant", "reasoning_content": "I should greet the user", "content": "Hello!"}
    assert_same(run["message"], expected)
    # no second region_open for reasoning_content: the model continues the prefilled region
    opens = [e["field"] for e in flat_events(run) if e["type"] == "region_open"]
    assert opens == ["reasoning_content", "content"]
    check("".join(chunks), SMOLLM, expected, prefix=prefix)


def test_prefix_region_opened_and_closed_lands_in_message():
    prefix = "<|im_start|>assistant\n<think>planned</think>"
    run = both_stream(SMOLLM, ["Answer<|im_end|>"], prefix=prefix)
    assert_same(
        run["initial"],
        [
            {"type": "region_open", "field": "reasoning_content"},
            {"type": "region_chunk", "field": "reasoning_content", "text": "planned", "dirty": False},
            {"type": "region_close", "field": "reasoning_content", "value": "planned"},
        ],
    )
    assert_same(run["message"], {"role": "assistant", "reasoning_content": "planned", "content": "Answer"})


def test_prefix_empty_think_block_is_dropped_from_message():
    prefix = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    run = both_stream(SMOLLM, ["Hi<|im_end|>"], prefix=prefix)
    assert closes(run["initial"]) == [("reasoning_content", "")]
    assert_same(run["message"], {"role": "assistant", "content": "Hi"})


def test_assistant_prefill_of_implicit_content():
    prefix = "<|im_start|>assistant\nSure, "
    run = both_stream(SMOLLM, ["here it is", "<|im_end|>"], prefix=prefix)
    assert_same(
        run["initial"],
        [
            {"type": "region_open", "field": "content"},
            {"type": "region_chunk", "field": "content", "text": "Sure, ", "dirty": False},
        ],
    )
    assert_same(run["message"], {"role": "assistant", "content": "Sure, here it is"})


def test_prefix_required_none_raises_with_opt_out_hint():
    for call in (
        lambda: respc.parse_response("x", copy.deepcopy(SMOLLM), prefix=None),
        lambda: respc.ResponseParser(copy.deepcopy(SMOLLM), None),
        lambda: respc.get_response_parser(copy.deepcopy(SMOLLM), prefix=None),
        lambda: respc.compile_template(copy.deepcopy(SMOLLM)).parse("x", prefix=None),
        lambda: respc.compile_template(copy.deepcopy(SMOLLM)).parser(prefix=None),
    ):
        with pytest.raises(ValueError) as excinfo:
            call()
        assert '""' in str(excinfo.value)
    with pytest.raises(ValueError):
        RefParser(copy.deepcopy(SMOLLM), None)


def test_prefix_omitted_raises():
    with pytest.raises((TypeError, ValueError)):
        respc.parse_response("x", copy.deepcopy(SMOLLM))
    with pytest.raises((TypeError, ValueError)):
        respc.get_response_parser(copy.deepcopy(SMOLLM))


def test_empty_prefix_opts_out():
    check("Hi<|im_end|>", SMOLLM, {"role": "assistant", "content": "Hi"}, prefix="")


# --------------------------------------------------------------------------------------------------
# batch API
# --------------------------------------------------------------------------------------------------


def test_batch_parse_with_broadcast_prefix():
    texts = ["A<|im_end|>", "<think>t</think>B<|im_end|>", SMOLLM_OUTPUT]
    got = respc.parse_response(texts, copy.deepcopy(SMOLLM), prefix="")
    assert isinstance(got, list) and len(got) == 3
    for text, message in zip(texts, got):
        assert_same(message, ref_parse(text, copy.deepcopy(SMOLLM), prefix=""))
    assert_same(got[1], {"role": "assistant", "reasoning_content": "t", "content": "B"})


def test_batch_parse_with_per_item_prefix():
    texts = ["x</think>y<|im_end|>", "z<|im_end|>"]
    prefixes = ["<|im_start|>assistant\n<think>", MULTI_TURN_PREFIX]
    got = respc.parse_response(texts, copy.deepcopy(SMOLLM), prefix=prefixes)
    assert_same(
        got,
        [
            {"role": "assistant", "reasoning_content": "x", "content": "y"},
            {"role": "assistant", "content": "z"},
        ],
    )
    for text, prefix, message in zip(texts, prefixes, got):
        assert_same(message, ref_parse(text, copy.deepcopy(SMOLLM), prefix=prefix))


def test_batch_prefix_length_mismatch_raises():
    with pytest.raises(ValueError):
        respc.parse_response(["a", "b"], copy.deepcopy(SMOLLM), prefix=["", "", ""])
    with pytest.raises(ValueError):
        respc.parse_response(["a", "b"], copy.deepcopy(SMOLLM), prefix=[""])


def test_batch_prefix_none_raises():
    with pytest.raises(ValueError) as excinfo:
        respc.parse_response(["a", "b"], copy.deepcopy(SMOLLM), prefix=None)
    assert '""' in str(excinfo.value)


# --------------------------------------------------------------------------------------------------
# parser lifecycle and template forms
# --------------------------------------------------------------------------------------------------


def test_feed_and_finalize_after_finalize_raise_runtime_error():
    parser = respc.ResponseParser(copy.deepcopy(SMOLLM), "")
    parser.feed("hi")
    parser.finalize()
    with pytest.raises(RuntimeError):
        parser.feed("more")
    with pytest.raises(RuntimeError):
        parser.finalize()
    ref = RefParser(copy.deepcopy(SMOLLM), "")
    ref.finalize()
    with pytest.raises(RuntimeError):
        ref.feed("more")


def test_template_as_json_file_path_str_and_pathlib(tmp_path):
    path = tmp_path / "smollm.json"
    path.write_text(json.dumps(SMOLLM), encoding="utf-8")
    for template in (str(path), pathlib.Path(path)):
        assert_same(respc.parse_response(SMOLLM_OUTPUT, template, prefix=""), SMOLLM_MESSAGE)
        parser = respc.ResponseParser(template, "")
        parser.feed(SMOLLM_OUTPUT)
        assert_same(parser.finalize()[0], SMOLLM_MESSAGE)
        parser = respc.get_response_parser(template, prefix="")
        parser.feed(SMOLLM_OUTPUT)
        assert_same(parser.finalize()[0], SMOLLM_MESSAGE)
        assert_same(respc.compile_template(template).parse(SMOLLM_OUTPUT, prefix=""), SMOLLM_MESSAGE)


def test_compiled_template_api():
    compiled = respc.compile_template(copy.deepcopy(SMOLLM))
    assert isinstance(compiled.hash, str) and compiled.hash
    assert isinstance(compiled.source, str)
    compile(compiled.source, "<respc generated>", "exec")  # the generated module is valid Python
    assert_same(compiled.parse(SMOLLM_OUTPUT, prefix=""), SMOLLM_MESSAGE)
    parser = compiled.parser(prefix="")
    events = []
    for chunk in SPEC_STREAM_CHUNKS:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    assert_same(events + final, SPEC_STREAM_EVENTS)
    assert_same(message, SMOLLM_MESSAGE)
    # a CompiledTemplate is accepted wherever a template is
    assert_same(respc.parse_response(SMOLLM_OUTPUT, compiled, prefix=""), SMOLLM_MESSAGE)
    parser = respc.ResponseParser(compiled, "")
    parser.feed(SMOLLM_OUTPUT)
    assert_same(parser.finalize()[0], SMOLLM_MESSAGE)
    assert respc.compile_template(compiled).hash == compiled.hash


def test_compiled_template_is_deterministic_and_hash_tracks_template():
    a = respc.compile_template(copy.deepcopy(SMOLLM))
    b = respc.compile_template(copy.deepcopy(SMOLLM))
    assert a.hash == b.hash
    assert a.source == b.source
    other = copy.deepcopy(SMOLLM)
    other["fields"]["reasoning_content"]["close"] = "</thinking>"
    assert respc.compile_template(other).hash != a.hash


def test_parser_state_is_independent_per_instance():
    compiled = respc.compile_template(copy.deepcopy(SMOLLM))
    p1, p2 = compiled.parser(prefix=""), compiled.parser(prefix="<|im_start|>assistant\n<think>")
    p1.feed("<think>one")
    p2.feed("two")
    assert_same(p1.finalize()[0], {"role": "assistant", "reasoning_content": "one"})
    assert_same(p2.finalize()[0], {"role": "assistant", "reasoning_content": "two"})


def test_template_dict_is_not_mutated():
    template = copy.deepcopy(SMOLLM)
    snapshot = copy.deepcopy(template)
    message = respc.parse_response(SMOLLM_OUTPUT, template, prefix="")
    message["role"] = "changed"
    assert template == snapshot
    # defaults are copied per message
    assert respc.parse_response("x", template, prefix="")["role"] == "assistant"


# --------------------------------------------------------------------------------------------------
# field API examples
# --------------------------------------------------------------------------------------------------


def test_repeats_parallel_tool_calls():
    text = (
        '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>'
        '<tool_call>{"name": "b", "arguments": {"y": 2}}</tool_call>'
    )
    message = check(
        text,
        SMOLLM,
        {
            "role": "assistant",
            "tool_calls": [
                {"type": "function", "function": {"name": "a", "arguments": {"x": 1}}},
                {"type": "function", "function": {"name": "b", "arguments": {"y": 2}}},
            ],
        },
    )
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["a", "b"]


def test_repeats_single_match_is_still_a_list():
    check(
        '<tool_call>{"name": "a", "arguments": {}}</tool_call>',
        SMOLLM,
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": {}}}]},
    )


JOIN_TEMPLATE = single_field(
    "reasoning_content", {"open": "<think>", "close": "</think>", "repeats": True, "join": "\n"}
)


def test_join_example():
    check("<think>first</think>...<think>second</think>", JOIN_TEMPLATE, {"reasoning_content": "first\nsecond"})


def test_join_region_close_carries_each_block_value():
    run = both_stream(JOIN_TEMPLATE, ["<think>first</think>...", "<think>second</think>"])
    assert closes(flat_events(run)) == [("reasoning_content", "first"), ("reasoning_content", "second")]
    assert_same(run["message"], {"reasoning_content": "first\nsecond"})


def test_join_empty_separator_and_single_block():
    template = single_field("c", {"open": "<c>", "close": "</c>", "repeats": True, "join": ""})
    check("<c>a</c><c>b</c><c>c</c>", template, {"c": "abc"})
    check("<c>only</c>", template, {"c": "only"})
    check("nothing", template, {})


def test_join_requires_string_values():
    template = single_field("c", {"open": "<c>", "close": "</c>", "repeats": True, "join": ",", "content": "int"})
    both_raise(ValueError, "<c>1</c><c>2</c>", template)


def test_optional_false_missing_raises():
    template = single_field("answer", {"open": "<answer>", "close": "</answer>", "optional": False})
    both_raise(ValueError, "no answer here", template)
    with pytest.raises(ValueError):
        parser = respc.ResponseParser(copy.deepcopy(template), "")
        parser.feed("no answer")
        parser.finalize()
    check("<answer>42</answer>", template, {"answer": "42"})


def test_optional_false_present_but_empty_matches_reference():
    # the region matched, so the field is not "missing"; its empty value is then dropped like any other
    template = single_field("answer", {"open": "<answer>", "close": "</answer>", "optional": False})
    check("<answer>  </answer>", template, {})


def test_optional_false_satisfied_by_prefix_region():
    template = single_field("answer", {"open": "<answer>", "close": "</answer>", "optional": False})
    check("", template, {"answer": "pre"}, prefix="<s><answer>pre</answer>")


def test_end_of_generation_closes_open_region():
    template = single_field("reasoning_content", {"open": "<think>", "close": "</think>"})
    run = both_stream(template, ["<think>unfin", "ished"])
    assert_same(run["final"], [{"type": "region_close", "field": "reasoning_content", "value": "unfinished"}])
    assert_same(run["message"], {"reasoning_content": "unfinished"})
    check("<think>unfinished", template, {"reasoning_content": "unfinished"})


def test_end_of_generation_flushes_held_partial_close_delimiter():
    template = single_field("reasoning_content", {"open": "<think>", "close": "</think>"})
    run = both_stream(template, ["<think>abc</thi"])
    assert_same(
        run["final"],
        [
            {"type": "region_chunk", "field": "reasoning_content", "text": "</thi", "dirty": False},
            {"type": "region_close", "field": "reasoning_content", "value": "abc</thi"},
        ],
    )
    assert_same(run["message"], {"reasoning_content": "abc</thi"})


def test_field_without_close_runs_to_end_of_stream():
    template = {
        "start_anchor": "<s>",
        "fields": {"reasoning_content": {"open": "<think>", "close": "</think>"}, "answer": {"open": "<answer>"}},
    }
    check("<think>t</think><answer>42 and more</answer>", template, {"reasoning_content": "t", "answer": "42 and more</answer>"})


def test_implicit_field_captures_leftover_text():
    template = {
        "start_anchor": "<s>",
        "fields": {"reasoning_content": {"open": "<think>", "close": "</think>"}, "content": {}},
    }
    # the implicit region is reopened after each explicit one; without repeats the last segment wins
    check("a<think>x</think>b", template, {"content": "b", "reasoning_content": "x"})
    template["fields"]["content"] = {"repeats": True, "join": ""}
    check("a<think>x</think>b", template, {"content": "ab", "reasoning_content": "x"})


def test_text_outside_any_region_without_implicit_field_is_discarded():
    template = single_field("reasoning_content", {"open": "<think>", "close": "</think>"})
    run = both_stream(template, ["junk <think>t</think> more junk"])
    assert all(e["field"] == "reasoning_content" for e in flat_events(run))
    assert_same(run["message"], {"reasoning_content": "t"})


def test_open_as_list_of_literals():
    template = single_field("reasoning_content", {"open": ["<think>", "<thinking>"], "close": ["</think>", "</thinking>"]})
    check("<thinking>a</thinking>", template, {"reasoning_content": "a"})
    check("<think>b</think>", template, {"reasoning_content": "b"})


def test_defaults_are_always_kept():
    template = {
        "defaults": {"role": "assistant", "content": ""},
        "start_anchor": "<s>",
        "fields": {"content": {"open": "<c>", "close": "</c>"}},
    }
    check("nothing", template, {"role": "assistant", "content": ""})
    check("<c>x</c>", template, {"role": "assistant", "content": "x"})


# --------------------------------------------------------------------------------------------------
# content parser examples
# --------------------------------------------------------------------------------------------------


def test_int_example():
    check("<n> 42 </n>", single_field("count", {"open": "<n>", "close": "</n>", "content": "int"}), {"count": 42})


def test_float_example():
    check("<f> 1.5 </f>", single_field("x", {"open": "<f>", "close": "</f>", "content": "float"}), {"x": 1.5})


def test_bool_example():
    template = single_field("flag", {"open": "<b>", "close": "</b>", "content": "bool"})
    check("<b> true </b>", template, {"flag": True})
    check("<b>no</b>", template, {"flag": False})


def test_text_strip_example():
    check("<t>  hi there \n</t>", single_field("t", {"open": "<t>", "close": "</t>", "content": "text"}), {"t": "hi there"})
    check(
        "<t>  hi there \n</t>",
        single_field("t", {"open": "<t>", "close": "</t>", "content": "text", "content_args": {"strip": False}}),
        {"t": "  hi there \n"},
    )


def test_json_unquoted_keys_example():
    template = single_field(
        "args", {"open": "<args>", "close": "</args>", "content": "json", "content_args": {"unquoted_keys": True}}
    )
    check('<args>{city: "London"}</args>', template, {"args": {"city": "London"}})


def test_json_string_delims_example():
    template = single_field(
        "args",
        {
            "open": "<args>",
            "close": "</args>",
            "content": "json",
            "content_args": {"string_delims": [['<|"|>', '<|"|>']], "unquoted_keys": True},
        },
    )
    check('<args>{city:<|"|>London "UK"<|"|>}</args>', template, {"args": {"city": 'London "UK"'}})


def test_json_allow_non_json_example():
    template = single_field(
        "args", {"open": "<args>", "close": "</args>", "content": "json", "content_args": {"allow_non_json": True}}
    )
    check("<args>  just text  </args>", template, {"args": "just text"})
    check('<args>{"a": 1}</args>', template, {"args": {"a": 1}})
    strict = single_field("args", {"open": "<args>", "close": "</args>", "content": "json"})
    both_raise(ValueError, "<args>just text</args>", strict)


def test_xml_inline_qwen3_example():
    template = {"start_anchor": "<|im_start|>assistant\n", "fields": {"tool_calls": QWEN3_TOOL_CALLS}}
    text = (
        "<tool_call><function=get_weather><parameter=city>London</parameter>"
        "<parameter=units>celsius</parameter></function></tool_call>"
    )
    check(
        text,
        template,
        {
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "London", "units": "celsius"}},
                }
            ]
        },
    )


def test_xml_inline_qwen3_multiline_and_json_values():
    template = {"start_anchor": "<|im_start|>assistant\n", "fields": {"tool_calls": QWEN3_TOOL_CALLS}}
    text = (
        "<tool_call>\n<function=set>\n<parameter=n>\n3\n</parameter>\n<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    check(
        text,
        template,
        {"tool_calls": [{"type": "function", "function": {"name": "set", "arguments": {"n": 3, "tags": ["a", "b"]}}}]},
    )


def test_kv_lines_example():
    template = single_field("metadata", {"open": "<meta>", "close": "</meta>", "content": "kv-lines"})
    check("<meta>name: alice\nage: 30</meta>", template, {"metadata": {"name": "alice", "age": "30"}})


def test_kv_lines_example_with_int_value_parser():
    template = single_field(
        "metadata",
        {"open": "<meta>", "close": "</meta>", "content": "kv-lines", "content_args": {"value_parser": {"name": "int"}}},
    )
    check("<meta>a: 1\nage: 30</meta>", template, {"metadata": {"a": 1, "age": 30}})


# --------------------------------------------------------------------------------------------------
# tools typing example
# --------------------------------------------------------------------------------------------------

SET_ALARM_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "set_alarm",
            "parameters": {
                "type": "object",
                "properties": {
                    "hour": {"type": "integer"},
                    "enabled": {"type": "boolean"},
                    "label": {"type": "string"},
                },
            },
        },
    }
]

SET_ALARM_EXPECTED = {
    "tool_calls": [
        {"type": "function", "function": {"name": "set_alarm", "arguments": {"hour": 7, "enabled": True, "label": "wake up"}}}
    ]
}


def test_tools_typing_example_json_string_arguments():
    template = {"start_anchor": "<s>", "fields": {"tool_calls": SMOLLM["fields"]["tool_calls"]}}
    model_out = '<tool_call>{"name": "set_alarm", "arguments": {"hour": "7", "enabled": "true", "label": "wake up"}}</tool_call>'
    check(model_out, template, SET_ALARM_EXPECTED, tools=SET_ALARM_TOOLS)
    # without tools nothing is cast
    untyped = both_parse(model_out, template)
    assert untyped["tool_calls"][0]["function"]["arguments"] == {"hour": "7", "enabled": "true", "label": "wake up"}


def test_tools_typing_example_xml_inline_strings():
    field = copy.deepcopy(QWEN3_TOOL_CALLS)
    del field["content_args"]["value_parser"]  # every argument is a raw string
    template = {"start_anchor": "<s>", "fields": {"tool_calls": field}}
    model_out = (
        "<tool_call><function=set_alarm><parameter=hour>7</parameter><parameter=enabled>true</parameter>"
        "<parameter=label>wake up</parameter></function></tool_call>"
    )
    check(model_out, template, SET_ALARM_EXPECTED, tools=SET_ALARM_TOOLS)


def test_tools_typing_visible_on_region_close():
    template = {"start_anchor": "<s>", "fields": {"tool_calls": SMOLLM["fields"]["tool_calls"]}}
    model_out = '<tool_call>{"name": "set_alarm", "arguments": {"hour": "7", "enabled": "true", "label": "wake up"}}</tool_call>'
    run = both_stream(template, [model_out[:20], model_out[20:]], tools=SET_ALARM_TOOLS)
    assert_same(closes(flat_events(run)), [("tool_calls", SET_ALARM_EXPECTED["tool_calls"][0])])
    # the region_close is emitted by the feed that carried the close tag, already typed
    assert run["fed"][1][-1]["type"] == "region_close"
    assert_same(run["fed"][1][-1]["value"]["function"]["arguments"]["hour"], 7)


# --------------------------------------------------------------------------------------------------
# transform examples
# --------------------------------------------------------------------------------------------------


def test_transform_whole_content_placeholder_keeps_type():
    template = {"start_anchor": "<s>", "fields": {"tool_calls": SMOLLM["fields"]["tool_calls"]}}
    check(
        '<tool_call>{"name": "greet_user", "arguments": {"greeting": "Hi!"}}</tool_call>',
        template,
        {"tool_calls": [{"type": "function", "function": {"name": "greet_user", "arguments": {"greeting": "Hi!"}}}]},
    )


DOTTED_TEMPLATE = single_field(
    "tool_calls",
    {
        "open": "<tool>",
        "close": "</tool>",
        "repeats": True,
        "content": "json",
        "transform": {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.args}"}},
    },
)


def test_transform_dotted_path():
    check(
        '<tool>{"name": "search", "args": {"q": "x", "n": 3}}</tool>',
        DOTTED_TEMPLATE,
        {"tool_calls": [{"type": "function", "function": {"name": "search", "arguments": {"q": "x", "n": 3}}}]},
    )


def test_transform_dotted_path_deep():
    template = single_field(
        "x", {"open": "<x>", "close": "</x>", "content": "json", "transform": {"v": "{content.a.b.c}", "lit": 5}}
    )
    check('<x>{"a": {"b": {"c": [1, null]}}}</x>', template, {"x": {"v": [1, None], "lit": 5}})


def test_transform_missing_path_raises():
    both_raise(ValueError, '<tool>{"name": "search"}</tool>', DOTTED_TEMPLATE)


def test_transform_path_into_non_dict_raises():
    template = single_field(
        "t", {"open": "<tool>", "close": "</tool>", "content": "json", "transform": {"a": "{content.args.deeper}"}}
    )
    both_raise(ValueError, '<tool>{"name": "search", "args": 5}</tool>', template)


def test_transform_gpt_oss_open_pattern_capture():
    template = {"start_anchor": "<|start|>assistant", "fields": {"tool_calls": GPT_OSS_TOOL_CALLS}}
    text = (
        "<|channel|>commentary to=functions.get_current_weather <|constrain|>json<|message|>"
        '{"location": "San Francisco, CA"}<|call|>'
    )
    check(
        text,
        template,
        {
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "get_current_weather", "arguments": {"location": "San Francisco, CA"}},
                }
            ]
        },
    )


def test_transform_close_pattern_capture_matches_reference():
    # transformers 5.24: named groups of close_pattern join the transform scope (5.23 only
    # exposed the open pattern's, so this failed there)
    template = single_field(
        "x",
        {
            "open": "<x>",
            "close_pattern": r"</x id=(?P<id>\d+)>",
            "content": "text",
            "transform": {"id": "{id}", "body": "{content}"},
        },
    )
    check("<x>hello</x id=12>", template, {"x": {"id": "12", "body": "hello"}})


def test_transform_close_captures_override_open_captures():
    template = single_field(
        "x",
        {
            "open_pattern": r"<x id=(?P<id>\d+)(?P<k>!?)>",
            "close_pattern": r"</x(?: id=(?P<id>\d+))?(?P<k>\??)>",
            "content": "text",
            "transform": {"id": "{id}", "k": "{k}", "body": "{content}"},
        },
    )
    # the close's id overrides the open's; an empty group that took part overrides too
    check("<x id=1!>a</x id=2>", template, {"x": {"id": "2", "k": "", "body": "a"}})
    # a close group that did not take part leaves the open's capture
    check("<x id=1!>a</x?>", template, {"x": {"id": "1", "k": "?", "body": "a"}})


def test_transform_open_and_close_pattern_groups_open_side_available():
    template = single_field(
        "x",
        {
            "open_pattern": r"<x id=(?P<id>\d+)>",
            "close_pattern": r"</x(?P<tail>!?)>",
            "content": "text",
            "transform": {"id": "{id}", "body": "{content}"},
        },
    )
    check("<x id=7>hello</x!>", template, {"x": {"id": "7", "body": "hello"}})


def test_transform_each_cohere():
    template = {"start_anchor": "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "fields": {"tool_calls": COHERE_TOOL_CALLS}}
    body = json.dumps(
        [
            {"tool_name": "greet_user", "parameters": {"greeting": "Hi!"}},
            {"tool_name": "search", "parameters": {"query": "weather tomorrow"}},
        ],
        indent=4,
    )
    check(
        f"<|START_ACTION|>{body}<|END_ACTION|>",
        template,
        {
            "tool_calls": [
                {"type": "function", "function": {"name": "greet_user", "arguments": {"greeting": "Hi!"}}},
                {"type": "function", "function": {"name": "search", "arguments": {"query": "weather tomorrow"}}},
            ]
        },
    )


def test_transform_each_requires_list_of_dicts():
    template = {"start_anchor": "<s>", "fields": {"tool_calls": COHERE_TOOL_CALLS}}
    both_raise(ValueError, '<|START_ACTION|>{"tool_name": "a"}<|END_ACTION|>', template)
    both_raise(ValueError, "<|START_ACTION|>[1, 2]<|END_ACTION|>", template)


def test_transform_literal_values_are_kept():
    template = single_field(
        "x",
        {"open": "<x>", "close": "</x>", "transform": ["{content}", "{ not a placeholder }", 1, None, {"k": True}]},
    )
    check("<x>v</x>", template, {"x": ["v", "{ not a placeholder }", 1, None, {"k": True}]})


# --------------------------------------------------------------------------------------------------
# dirty flags
# --------------------------------------------------------------------------------------------------

DIRTY_CASES = [
    ("text", None, "hello world", False),
    ("int", None, " 12345 ", False),
    ("float", None, " 1.25 ", False),
    ("bool", None, " true ", False),
    ("json", None, '{"a": [1, 2, 3]}', True),
    ("xml-inline", {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"}, "<a>1</a><b>2</b>", True),
    ("kv-lines", None, "a: 1\nb: 2", True),
]


@pytest.mark.parametrize("content,args,body,dirty", DIRTY_CASES, ids=[c[0] for c in DIRTY_CASES])
def test_dirty_flags(content, args, body, dirty):
    field = {"open": "<v>", "close": "</v>", "content": content}
    if args is not None:
        field["content_args"] = args
    template = single_field("v", field)
    text = f"<v>{body}</v>"
    for chunks in ([text], list(text), [text[:5], text[5:9], text[9:]]):
        run = both_stream(template, chunks)
        region_chunks = [e for e in flat_events(run) if e["type"] == "region_chunk"]
        assert region_chunks, "a non-empty region must stream at least one chunk"
        assert all(e["dirty"] is dirty for e in region_chunks)
        assert "".join(e["text"] for e in region_chunks) == body


def test_dirty_flag_of_implicit_text_field():
    run = both_stream(SMOLLM, ["Hello ", "there<|im_end|>"])
    chunks = [e for e in flat_events(run) if e["type"] == "region_chunk"]
    assert chunks and all(e["dirty"] is False and e["field"] == "content" for e in chunks)


# --------------------------------------------------------------------------------------------------
# regex portability section: DOTALL, no MULTILINE, unicode, named groups, partial matching, lookarounds
# --------------------------------------------------------------------------------------------------


def test_regex_dot_matches_newline():
    template = single_field("x", {"open_pattern": r"<x.*?>", "close": "</x>"})
    check("<x\nattr='1'>v</x>", template, {"x": "v"})


def test_regex_caret_and_dollar_match_only_at_input_edges():
    template = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": r"^#", "close": "\n"}, "content": {}}}
    check("a\n#b\nc", template, {"content": "a\n#b\nc"})  # "^" does not match after a newline
    check("#b\nc", template, {"x": "b", "content": "c"})
    template = {"start_anchor": "<s>", "fields": {"x": {"open": "<x>", "close_pattern": r"$"}, "content": {}}}
    text = "a<x>line1\nline2"
    # one-shot: "$" does not match at the inner newline, only at the end of the input
    assert_same(both_parse(text, template), {"content": "a", "x": "line1\nline2"})
    assert_same(both_stream(template, [text])["message"], {"content": "a", "x": "line1\nline2"})
    # streamed char by char: "$" also matches just before a newline that ends the *buffer*
    # ("a<x>line1\n"), but since 5.24 such a match is final only if it survives one more
    # character, so it waits and the stream gives the one-shot message
    run = both_stream(template, list(text))
    assert_same(run["message"], {"content": "a", "x": "line1\nline2"})


def test_regex_word_class_is_unicode_aware():
    template = single_field(
        "x",
        {"open_pattern": r"<fn=(?P<n>\w+)>", "close": "</fn>", "transform": {"n": "{n}", "c": "{content}"}},
    )
    check("<fn=città_名前>v</fn>", template, {"x": {"n": "città_名前", "c": "v"}})


def test_regex_lookaround_supported():
    template = single_field("x", {"open_pattern": r"<x>(?!skip)", "close": "</x>"})
    check("<x>skip</x><x>keep</x>", template, {"x": "keep"})


def test_partial_regex_close_is_held_until_resolved():
    # a close pattern that can still grow at the buffer edge (trailing \s*) is held until a non-matching byte
    template = {"start_anchor": "<s>", "fields": {"x": {"open": "<x>", "close_pattern": r"</x>\s*"}, "content": {}}}
    run = both_stream(template, ["<x>a</x>", "  ", "b"])
    assert run["fed"][0] == [
        {"type": "region_open", "field": "x"},
        {"type": "region_chunk", "field": "x", "text": "a", "dirty": False},
    ]
    assert run["fed"][1] == []  # "</x>  " could still be followed by more whitespace
    assert closes(run["fed"][2]) == [("x", "a")]
    assert_same(run["message"], {"x": "a", "content": "b"})
    check("<x>a</x>  b", template, {"x": "a", "content": "b"})


def test_literal_close_list_where_one_literal_extends_another():
    template = {"start_anchor": "<s>", "fields": {"x": {"open": "<x>", "close": ["</x>", "</x>>"]}, "content": {}}}
    run = both_stream(template, ["<x>a</x>", ">b"])
    assert closes(run["fed"][0]) == []  # "</x>" might still become "</x>>"
    assert closes(run["fed"][1])[0] == ("x", "a")
    check("<x>a</x>>b", template, {"x": "a", "content": "b"})
    check("<x>a</x>b", template, {"x": "a", "content": "b"})


def test_literal_close_is_committed_without_waiting():
    template = single_field("x", {"open": "<x>", "close": "</x>"})
    run = both_stream(template, ["<x>a</x>"])
    assert closes(run["fed"][0]) == [("x", "a")]
