"""Targeted parity checks for the streaming shortcuts: the no-delimiter fast path, the
literal-only path, whitespace tails of \\s*-led delimiters, and held regex matches that
stay held until their tail literal shows up. Each compares every event with the reference."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

import respc
from respc.compiler.ir import build_ir

from optional import needs

needs("transformers.utils.chat_parsing")

from transformers.utils import chat_parsing  # the reference: installed by the test extra
ROOT = Path(__file__).resolve().parent.parent


def _events(parser, chunks):
    out = [list(parser.initial_events)]
    for chunk in chunks:
        out.append(parser.feed(chunk))
    message, final = parser.finalize()
    out.append(final)
    return message, out


def _compare(template, text, prefix="", tools=None, sizes=(1, 2, 3, 4, 7, 64), seed=0):
    rng = random.Random(seed)
    chunkings = [[text[i : i + k] for i in range(0, len(text), k)] for k in sizes]
    cuts, i = [], 0
    while i < len(text):
        k = rng.randint(1, 9)
        cuts.append(text[i : i + k])
        i += k
    chunkings.append(cuts)
    for chunks in chunkings:
        ours = _events(respc.ResponseParser(template, prefix, tools=tools), chunks)
        ref = _events(chat_parsing.ResponseParser(template, prefix=prefix, tools=tools), chunks)
        assert ours == ref, (template, chunks)
    return ours[0]


def _bundled(name):
    return json.loads((ROOT / "templates" / f"{name}.json").read_text(encoding="utf-8"))


def test_gpt_oss_held_tool_header_then_completed():
    """gpt-oss's tool header (either recipient order) stays held over long runs of
    whitespace (the pattern's \\s*) until its <|message|>; a partial marker in the run
    breaks the header, which then never opens."""
    template = _bundled("gpt-oss")
    gap = "  \n\t " * 60
    for header in (
        f"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json{gap}",
        f"<|start|>assistant to=functions.get_weather{gap}<|channel|>commentary json{gap}",
        f"<|start|>assistant{gap}to=functions.get_weather{gap}<|channel|>analysis",
    ):
        text = f'<|channel|>analysis<|message|>think<|end|>{header}<|message|>{{"city": "Paris"}}<|call|>'
        message = _compare(template, text)
        assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
        assert message["reasoning_content"] == "think"
    text = f'<|channel|>commentary to=functions.get_weather json{gap}<|mess {gap}<|message|>{{"city": "Paris"}}<|call|>'
    assert "tool_calls" not in _compare(template, text)


def test_gpt_oss_held_tool_header_never_completed():
    template = _bundled("gpt-oss")
    for text in (
        "<|channel|>commentary to=functions.f json" + " \n<|mess" * 150,
        "<|channel|>commentary to=functions.f" + "_long_name" * 150,
        " to=functions.f" + "  \n<|chann" * 150,
    ):
        message = _compare(template, text, sizes=(1, 4, 13))
        assert "tool_calls" not in message


def test_qwen3_whitespace_tails_and_json_bodies():
    template = _bundled("qwen3")
    text = (
        "<think>\nplan  \n\n</think>\n\nI will call a tool.   \n\n"
        '<tool_call>\n{"name": "run", "arguments": {"q": "SELECT a < b", "n": 3}}\n</tool_call>\n  \n'
        '<tool_call>\n{"name": "other", "arguments": {"s": "</tool_call"}}\n</tool_call>\n  \n<|im_end|>'
    )
    message = _compare(template, text)
    assert message["reasoning_content"] == "plan" and message["content"] == "I will call a tool."
    assert message["tool_calls"][0]["function"] == {"name": "run", "arguments": {"q": "SELECT a < b", "n": 3}}
    assert message["tool_calls"][1]["function"] == {"name": "other", "arguments": {"s": "</tool_call"}}


def test_qwen3_coder_whitespace_tails_and_xml_bodies():
    template = _bundled("qwen3-coder")
    text = (
        "I will call a tool.   \n\n"
        "<tool_call>\n<function=run>\n<parameter=q>\nSELECT a < b\n</parameter>\n"
        "<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>\n  \n<|im_end|>"
    )
    tools = [{"type": "function", "function": {"name": "run", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}}}]
    message = _compare(template, text, tools=tools)
    assert message["content"] == "I will call a tool."
    assert message["tool_calls"][0]["function"] == {"name": "run", "arguments": {"q": "SELECT a < b", "n": 3}}
    assert _compare(template, text)["tool_calls"][0]["function"]["arguments"] == {"q": "SELECT a < b", "n": "3"}


def test_literal_only_states_with_lookalike_text():
    template = _bundled("smollm3")
    text = (
        "<think>a <thin b </thinking> c</think>\n<tool_ <tool_call>"
        '{"name": "f", "arguments": {"x": "</tool"}}</tool_call>\n\ndone <|im_en x<|im_end|>'
    )
    message = _compare(template, text)
    assert message["tool_calls"][0]["function"]["arguments"] == {"x": "</tool"}


def test_sample_replies_stream_like_the_reference():
    # gpt-oss makes one call per reply (<|call|> stops the generation)
    for name, calls in (("qwen3", 3), ("qwen3-coder", 2), ("gpt-oss", 1), ("command-a", 2)):
        text = (ROOT / "bench" / "samples" / f"{name}.txt").read_text(encoding="utf-8")
        prefix = (ROOT / "bench" / "samples" / f"{name}.prefix.txt").read_text(encoding="utf-8")
        tools = json.loads((ROOT / "bench" / "samples" / f"{name}.tools.json").read_text(encoding="utf-8"))
        message = _compare(_bundled(name), text, prefix, tools, sizes=(1, 4, 16))
        assert len(message["tool_calls"]) == calls, name


def test_complete_match_beyond_a_partial_one_still_counts():
    """Regression: a partial match blocks only while no complete match of the same
    delimiter exists further on (the regex engine prefers complete matches)."""
    template = {
        "start_anchor_pattern": "x*",
        "fields": {
            "z": {"open_pattern": r"\[\[(?P<name>\w+)\[", "transform": {"k": "{name}"}},
            "n": {"close_pattern": r"(?:\]|\[\[x\]\])"},
            "x": {"close": ["<y>", "[[x]]"], "repeats": True, "open_pattern": r"\["},
        },
    }
    _compare(template, '{"name": "calc"}[[x]][{"a": 1}[[x]]tail', "[[x")


def test_empty_and_none_feeds_are_no_ops_like_the_reference():
    template = _bundled("qwen3")
    ours = respc.ResponseParser(template, "")
    ref = chat_parsing.ResponseParser(template, prefix="")
    for piece in ["ab<th", None, "", "ink>x", "", "</think>done<|im_end|>"]:
        assert ours.feed(piece) == ref.feed(piece)
    assert ours.finalize() == ref.finalize()


def test_quiet_path_rearms_both_first_characters_after_a_state_change():
    """Regression: the quiet path re-armed the quickest path with the state's first
    character but a previous state's second one, so a chunk ending in a partial '[['
    went straight into the region instead of being held."""
    template = {
        "start_anchor": "<a>",
        "fields": {
            "call": {"open_pattern": r"<c>\w+", "close": ["##", "[[", "#", "[[x]]"], "content": "text"},
            "note": {"open": "##n", "close": "<e>", "content": "text"},
        },
    }
    chunks = ["##nab", "c<e>x", " y", "<c>f[", "ab", 'c"[', "]]x", "[[x]] tail"]
    ours = _events(respc.ResponseParser(template, ""), chunks)
    ref = _events(chat_parsing.ResponseParser(template, prefix=""), chunks)
    assert ours == ref
    _compare(template, "".join(chunks))


@pytest.mark.parametrize("name", ["qwen3", "qwen3-coder", "gpt-oss", "command-a"])
@pytest.mark.parametrize("cut", [None, -1, -3, -9, -17])
def test_one_pass_parse_equals_feed_then_finalize(name, cut):
    """CompiledTemplate.parse scans the text once at end of stream (parse_whole); the
    message must equal feed + finalize's and the reference's, also when the text ends
    inside a delimiter (cut)."""
    template = _bundled(name)
    samples = ROOT / "bench" / "samples"
    text = (samples / f"{name}.txt").read_text(encoding="utf-8")
    prefix = (samples / f"{name}.prefix.txt").read_text(encoding="utf-8")
    if cut is not None:
        text = text[:cut]
    compiled = respc.compile_template(template)
    streamed = compiled.parser(prefix=prefix)
    streamed.feed(text)
    try:
        want = streamed.finalize()[0]
    except ValueError:
        with pytest.raises(ValueError, match="json|JSON|required"):
            compiled.parse(text, prefix=prefix)
        with pytest.raises(Exception):
            chat_parsing.parse_response(text, template, prefix=prefix)
        return
    assert compiled.parse(text, prefix=prefix) == want
    assert chat_parsing.parse_response(text, template, prefix=prefix) == want


#: templates whose marks the bundled ones lack: one-character marks, whitespace-led
#: and not (differential seed 101 found quiet_cut ignoring a lone whitespace-led one)
_MARK_TEMPLATES = {
    "one_char_ws_led": {
        "fields": {"content": {"close": "\n", "open_pattern": "\\s*E"}, "y": {"close": "<|s|>"}},
        "start_anchor_pattern": "x*",
    },
    "one_char_direct": {
        "start_anchor": "<s>",
        "fields": {
            "a": {"open": "@", "close": "#"},
            "b": {"open_pattern": "\\s*<b>", "close": "\n"},
            "content": {"close": "<e>"},
        },
    },
}


def _marks(template):
    """Every mark (delimiter literal, or a regex's required literal prefix) of every state."""
    return sorted({m for state in build_ir(template).states if state.marks for group in state.marks for m in group})


@pytest.mark.parametrize("name", ["smollm3", "hermes3", "qwen3-coder", "gpt-oss", "command-a", *_MARK_TEMPLATES])
def test_quiet_tests_agree_with_the_scan(name):
    """Where a state's generated quiet test answers (no delimiter can commit), its scan
    holds from the same position and commits nothing. Texts are random mixes of the
    delimiters' pieces (seeded; a failure prints the text)."""
    template = _MARK_TEMPLATES.get(name) or _bundled(name)
    Parser = respc.compile_template(template).Parser
    parser = Parser("")
    pieces = [m[:k] for m in _marks(template) for k in range(1, len(m) + 1)]
    pieces += [" ", "\n", "x", "ab", "<", "=", "f_1"]
    rng = random.Random(20261129)
    checked = 0
    for record in Parser.STATES:
        if record.quiet is None:
            continue
        for _ in range(3000):
            x = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
            parser._memo[:] = [None] * len(parser._memo)
            cut = record.quiet(parser, x)
            found = record.scan(parser, x, 0, False)
            if cut >= 0:
                checked += 1
                assert found == cut, (name, x, cut, found)
    assert checked > 1000


def test_quiet_tests_hold_a_header_being_written():
    """A delimiter being written from the start of the held text is held by the quiet test,
    without a scan: a literal (gpt-oss's analysis channel), and a regex whose prefix another
    delimiter's regex shares (the content open fails on "analysis", the tool-call open does not)."""
    Parser = respc.load("gpt-oss").Parser
    parser = Parser("")
    free = Parser.STATES[-1]
    for x in ["<|channel|>a", "<|channel|>analysis<|mes", "<|channel|>analysis to=fun", "<|channel|>comm"]:
        assert free.quiet(parser, x) == 0 == free.scan(parser, x, 0, False), x


@pytest.mark.parametrize("regex_field, literal_field", [("a", "b"), ("b", "a")])
def test_a_tie_goes_to_the_field_first_by_name_though_literals_are_scanned_first(regex_field, literal_field):
    """Two opens match the same text at one place (the reference: the field first by name
    wins). Scans check literal delimiters before regexes, so the rank decides, not the order."""
    template = {
        "start_anchor": "<s>",
        "fields": {regex_field: {"open_pattern": "<x>", "close": "</a>"}, literal_field: {"open": "<x>", "close": "</b>"}},
    }
    compiled = respc.compile_template(template)
    assert compiled.parse("<x>hi</a></b>", prefix="") == {"a": "hi" if regex_field == "a" else "hi</a>"}
    parser = compiled.parser(prefix="")
    events = [event for char in "<x>hi</a></b>" for event in parser.feed(char)]
    assert events[0] == {"type": "region_open", "field": "a"}


def test_an_empty_feed_scans_held_text_again():
    """As in the reference, feed("") scans the held text again (differential seed 90210): a
    full-case-folding pattern is a partial match of "str" at its "s", not of "r" alone, so the
    held "r" is let go once the scan starts there."""
    template = {"start_anchor": "<s>", "fields": {"x": {"repeats": True}, "n": {"open_pattern": "(?fi)straße", "close": "|>"}}}
    parser = respc.compile_template(template).parser(prefix="")
    assert parser.feed("str") == [
        {"type": "region_open", "field": "x"},
        {"type": "region_chunk", "field": "x", "text": "st", "dirty": False},
    ]
    assert parser.feed("") == [{"type": "region_chunk", "field": "x", "text": "r", "dirty": False}]
    assert parser.feed("") == []  # nothing held: nothing to scan


def test_one_shot_with_G_anchor_feeds_and_finalizes():
    """Regression (differential seed 90): \\G matches where each scan starts, so for a
    template using it a whole output is parsed by feed + finalize, as the reference does."""
    template = {
        "defaults": {"role": "assistant", "z": ["old"]},
        "start_anchor_pattern": "x*",
        "fields": {
            "z": {"content": "bool", "repeats": True, "close_pattern": r"(?:\#|)", "open_pattern": r"\G<\|c\|>"},
            "x": {
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
                "close_pattern": r"<\|c\|>(?:\s*\#!)?",
            },
        },
    }
    text = '<|c|>{"name":"f","arguments":{"obj":" 7 "}}<|c|>'
    compiled = respc.compile_template(template)
    assert compiled.Parser.ONE_PASS is False
    want = chat_parsing.parse_response(text, template, prefix="")
    assert want["z"] == ["old", False, False]
    assert compiled.parse(text, prefix="") == want


def test_prefix_being_written_at_the_end_before_a_partial_match_of_a_shorter_prefix():
    """A regex whose matches start with '<a<bc' or '<b': when the buffer ends in '<a<b',
    the scan finds the partial match at '<b' by its prefix, but the earlier '<a<b' (a
    proper beginning of the other prefix) is the leftmost partial match and holds."""
    template = {
        "start_anchor": "<s>",
        "fields": {
            "call": {"open_pattern": r"(?:<a<bc|<b)x(?P<n>\w)", "close": "</c>", "transform": {"k": "{n}"}},
            "content": {"close": "<end>"},
        },
    }
    text = "hi <a<bcxq body</c> then <bxz more</c> and <a<b<end>"
    message = _compare(template, text, sizes=(1, 2, 3, 4, 5, 6, 8))
    assert message["call"] == {"k": "z"}


#: the continuation each template's own format writes (qwen3: JSON calls; qwen3-coder and
#: qwen3.5: XML calls, qwen3.5 with a think block as the earlier bundled qwen3 had)
_CONTINUATIONS = {
    "qwen3": 'nk>\nmore</think>answer\n<tool_call>\n{"name": "g", "arguments": {"b": 2}}\n</tool_call>',
    "qwen3-coder": "nk>\nmore</think>answer\n<tool_call>\n<function=g>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>",
    "qwen3.5": "nk>\nmore</think>answer\n<tool_call>\n<function=g>\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>",
}


@pytest.mark.parametrize("name", list(_CONTINUATIONS))
@pytest.mark.parametrize(
    "prefix",
    [
        "<|im_start|>assistant\n<think>\nalready thinking",  # the body starts in the prefix
        "<|im_start|>assistant\n<think>\nalready thinking</thi",  # ... and a delimiter too
        "<|im_start|>assistant\nsome content \n",  # the implicit field, a held whitespace tail
        "<|im_start|>assistant\n<tool_call>\n<function=f>\n<parameter=a>\n1",  # an XML tool call
        '<|im_start|>assistant\n<tool_call>\n{"name": "f", "arguments": {"a": 1',  # a JSON tool call
        "no anchor at all <think>",
    ],
)
def test_whole_parse_continues_what_the_prefix_started(prefix, name):
    """parse (ParserBase.parse_whole) scans the prefix as a feed would, then the text: a
    region opened in the prefix keeps its body from there."""
    template = _bundled(name)
    text = _CONTINUATIONS[name]
    for piece in (text, text[3:], text[text.find("answer"):], ""):
        want = chat_parsing.parse_response(piece, template, prefix=prefix)
        assert respc.parse_response(piece, template, prefix=prefix) == want, (prefix, piece)


_END_TEMPLATES = {
    "shared_marker": {
        "start_anchor": "<s>",
        "fields": {
            "a": {"open": ["<|x|>long", "<|x|>"], "close": "<|end|>"},
            "b": {"open_pattern": r"<\|x\|>lo(?P<name>\w*)", "close": "<|end|>", "transform": {"n": "{name}"}},
            "c": {"open": "<|x|>lon", "close": ["<|end|>", "<|e|>"]},
        },
    },
}


@pytest.mark.parametrize("name", ["smollm3", "qwen3", "qwen3-coder", "gpt-oss", "command-a", *_END_TEMPLATES])
def test_end_of_stream_scans_agree_with_the_general_scans(name):
    """Where a state has its own end-of-stream scan (every delimiter starts with one
    literal), it returns what the state's general scan returns at end of stream: the same
    position, action and match. Texts are random mixes of the delimiters' pieces (seeded)."""
    template = _END_TEMPLATES.get(name) or _bundled(name)
    Parser = respc.compile_template(template).Parser
    parser = Parser("")
    rng = random.Random(20261130)
    specialized = [state for state, record in enumerate(Parser.STATES) if record.end_scan is not record.scan]
    if name in ("command-a", "shared_marker"):  # gpt-oss no longer: a header may start with \s*to=
        assert specialized, name
    marks = _marks(template)
    pieces = [m[:k] for m in marks for k in range(1, len(m) + 1)] + ["<|", "x", " ", "\n", "lo", "ng", "to=functions.f", "<|message|>"]
    for state in specialized:
        for _ in range(3000):
            buf = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
            pos = rng.randint(0, len(buf))
            # (each buffer is a new input: the scans' memos are of one input's offsets)
            parser._memo = [None] * Parser.MEMOS
            want = Parser.STATES[state].scan(parser, buf, pos, True)
            parser._memo = [None] * Parser.MEMOS
            got = Parser.STATES[state].end_scan(parser, buf, pos, True)
            if want.__class__ is int:
                assert got == want, (name, state, buf, pos, got, want)
            else:
                assert got[:3] == want[:3], (name, state, buf, pos, got, want)
                assert (got[3] is None) == (want[3] is None), (name, state, buf, pos)
                if want[3] is not None:
                    assert got[3].span() == want[3].span() and got[3].groupdict() == want[3].groupdict()


def test_quiet_path_in_the_implicit_region_before_it_opens():
    """After a region closes, the implicit region is not open yet: the quiet path may hold
    (whitespace a delimiter may grow from, a delimiter being written), but text it would
    emit goes through the general path, which emits region_open first."""
    template = _bundled("qwen3-coder")
    call = "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"
    text = f"{call}\n\n  a < b <tool_ c{call}  \n<tool_call x <|im_e y {call}\n<|im_end|>"
    message = _compare(template, text, prefix="<|im_start|>assistant\n", sizes=(1, 2, 3, 4, 5, 7, 11))
    assert len(message["tool_calls"]) == 3


def test_pending_regex_after_a_held_whitespace_run_stays_held():
    """Regression (found by tests/test_bundled_fuzz.py): a whitespace tail held on the
    quickest path, then a chunk that starts a regex delimiter (the XML format's
    ``\\s*<tool_call>\\s*<function=NAME>``: qwen3-coder, and qwen3.5 with a think block)
    held as pending: the next chunk without a ``<`` must not take the quickest path and emit
    the pending header as content."""
    for chunks, name in itertools.product(
        (
            ["a\n", "\n<tool_call>\n<fu", "nct", "ion=f>", "</tool_call>"],
            ["<think>x</think>", "an other markets", ".\n", "\n<tool_call>\n<fu", "nct", "ion=f>", "</tool_call>"],
            ["a\n", "\n<tool_call>\n<fu", "nct", "ion", "=f>x", "</tool_call>"],
        ),
        ("qwen3-coder", "qwen3.5"),
    ):
        message = _compare(_bundled(name), "".join(chunks), sizes=())
        ours = _events(respc.ResponseParser(_bundled(name), ""), chunks)
        ref = _events(chat_parsing.ResponseParser(_bundled(name), prefix=""), chunks)
        assert ours == ref, (name, chunks)
        assert message["tool_calls"][0]["function"]["name"] == "f"
