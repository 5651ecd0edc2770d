"""The public API: argument handling, batches, template sources, stream lifecycle,
the progress rule, and the compile cache."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import respc
from respc.runtime import loader
from respc.compiler import compile_source, format_source

ROOT = Path(__file__).resolve().parent.parent

TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}
OUTPUT = '<think>plan</think>Sure.<tool_call>{"name": "f", "arguments": {"x": "1"}}</tool_call><|im_end|>'
EXPECTED = {
    "role": "assistant",
    "reasoning_content": "plan",
    "content": "Sure.",
    "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": "1"}}}],
}


def test_parse_response_single_and_batch():
    assert respc.parse_response(OUTPUT, TEMPLATE, prefix="") == EXPECTED
    assert respc.parse_response([OUTPUT, "hi<|im_end|>"], TEMPLATE, prefix="") == [
        EXPECTED,
        {"role": "assistant", "content": "hi"},
    ]
    prefixes = ["", "<|im_start|>assistant\n<think>"]
    got = respc.parse_response(["a", "b</think>c"], TEMPLATE, prefix=prefixes)
    assert got == [
        {"role": "assistant", "content": "a"},
        {"role": "assistant", "reasoning_content": "b", "content": "c"},
    ]


def test_prefix_is_required_and_checked():
    with pytest.raises(ValueError, match='prefix=""'):
        respc.parse_response(OUTPUT, TEMPLATE)
    with pytest.raises(ValueError, match='prefix=""'):
        respc.ResponseParser(TEMPLATE)
    with pytest.raises(ValueError, match='prefix=""'):
        respc.get_response_parser(TEMPLATE)
    with pytest.raises(ValueError, match="2 texts but 3 prefixes"):
        respc.parse_response(["a", "b"], TEMPLATE, prefix=["", "", ""])
    with pytest.raises(ValueError, match="single str"):
        respc.parse_response("a", TEMPLATE, prefix=["a"])


def test_template_sources_dict_path_compiled(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(TEMPLATE), encoding="utf-8")
    compiled = respc.compile_template(TEMPLATE)
    assert respc.compile_template(str(path)) is compiled  # same canonical template, same module
    assert respc.compile_template(path) is compiled
    assert respc.compile_template(compiled) is compiled
    assert respc.parse_response(OUTPUT, path, prefix="") == EXPECTED
    assert compiled.parse(OUTPUT, prefix="") == EXPECTED
    # a tokenizer_config.json holding the template is accepted too
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"response_template": TEMPLATE, "model_max_length": 8}), encoding="utf-8")
    assert respc.compile_template(config) is compiled


def test_template_file_errors_name_the_file(tmp_path):
    with pytest.raises(respc.TemplateError, match="no such template file"):
        respc.compile_template(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(respc.TemplateError, match=r"bad\.json: not valid JSON \(line 1"):
        respc.compile_template(bad)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"fields": {"content": {"close": "\xff"}}}')
    with pytest.raises(respc.TemplateError, match=r"latin\.json: not UTF-8 text \(byte 34"):
        respc.compile_template(latin)
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' * 10_000 + "1" + "}" * 10_000, encoding="utf-8")
    with pytest.raises(respc.TemplateError, match=r"deep\.json: JSON nested too deeply"):
        respc.compile_template(deep)


def test_stream_lifecycle_and_initial_events():
    parser = respc.ResponseParser(TEMPLATE, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>")
    assert parser.initial_events == [{"type": "region_open", "field": "reasoning_content"}]
    events = []
    for ch in "x</think>y<|im_end|>":
        events += parser.feed(ch)
    message, final = parser.finalize()
    assert message == {"role": "assistant", "reasoning_content": "x", "content": "y"}
    assert events[0] == {"type": "region_chunk", "field": "reasoning_content", "text": "x", "dirty": False}
    assert final == []
    with pytest.raises(RuntimeError, match="finalized"):
        parser.feed("more")
    with pytest.raises(RuntimeError, match="finalized"):
        parser.finalize()


def test_held_partial_delimiter_is_released_when_it_fails():
    parser = respc.ResponseParser(TEMPLATE, "")
    assert parser.feed("a<thi") == [
        {"type": "region_open", "field": "content"},
        {"type": "region_chunk", "field": "content", "text": "a", "dirty": False},
    ]
    assert parser.feed("s is") == [{"type": "region_chunk", "field": "content", "text": "<this is", "dirty": False}]


def test_progress_rule_terminates_where_the_reference_loops():
    """The issue's example: the reference never returns; respc reports the empty region once."""
    template = {
        "start_anchor": "A",
        "fields": {
            "x": {"close_pattern": "$"},
            "y": {"open_pattern": "(?:^|<b>\\s*)", "close_pattern": "$", "repeats": True, "join": "\n"},
        },
    }
    parser = respc.ResponseParser(template, "")
    # while streaming, $ before the final newline leans on the end of the input: it waits
    # (the reference 5.24 holds it too)
    assert parser.feed("\n") == []
    # at the end, y opens (empty ^) and closes ($ before the final newline) once; its open
    # may not fire again at 0, so the implicit x's empty close at 0 ends the pass (the
    # reference's guard), where the reference reopens y forever
    assert parser.finalize() == (
        {},
        [{"type": "region_open", "field": "y"}, {"type": "region_close", "field": "y", "value": ""}],
    )
    assert respc.parse_response("", template, prefix="") == {}
    # streamed one character at a time, a long input still finishes, event by event
    text = "\n<b>x\n" * 3000
    parser = respc.ResponseParser(template, "")
    count = sum(len(parser.feed(ch)) for ch in text)
    message, _ = parser.finalize()
    assert count > 3000 and message["y"].count("x") == 3000
    assert respc.parse_response(text, template, prefix="")["y"].count("<b>x") == 3000


def test_compiled_template_repr_and_attributes():
    compiled = respc.load("qwen3")
    assert "qwen3" in repr(compiled) and compiled.hash.startswith("sha256:")
    assert compiled.source.startswith("# Generated by respc")
    assert compiled.template["start_anchor"] == "<|im_start|>assistant\n"


# --- the disk cache --------------------------------------------------------------------
CACHED = {"start_anchor": "S", "fields": {"v": {"open": "<v>", "close": "</v>", "content": "int"}}}


def _fresh_compile(template):
    """Compile in a clean in-process cache (as a new process would)."""
    from respc import api

    api._BY_CANONICAL.clear()
    api._BY_OBJECT.clear()
    return respc.compile_template(template)


def test_disk_cache_roundtrip_and_corruption(tmp_path, monkeypatch):
    monkeypatch.setenv(loader.CACHE_ENV, str(tmp_path))
    first = _fresh_compile(CACHED)
    files = list(tmp_path.glob("*.py"))
    assert len(files) == 1 and files[0].read_text().startswith("# respc-cache hmac-sha256=")
    # the cache holds the module as it runs (unformatted: black only shapes what is shown)
    raw = compile_source(CACHED, format=False)[1]
    assert loader.read_cached(first.hash) == raw
    assert first.source == format_source(raw)

    # tamper: the file no longer matches its stamp -> ignored, recompiled, rewritten
    data = files[0].read_text()
    files[0].write_text(data.replace("int(body.strip())", "__import__('os').getpid()"))
    assert loader.read_cached(first.hash) is None
    second = _fresh_compile(CACHED)
    assert second.parse("<v> 7 </v>", prefix="") == {"v": 7}
    assert loader.read_cached(first.hash) == raw  # rewritten intact

    # garbage and a file made for another hash are ignored too
    files[0].write_bytes(b"\xff\xfe garbage")
    assert loader.read_cached(first.hash) is None
    assert _fresh_compile(CACHED).parse("<v>3</v>", prefix="") == {"v": 3}


def test_disk_cache_can_be_disabled(tmp_path, monkeypatch):
    monkeypatch.setenv(loader.CACHE_ENV, "")
    assert loader.cache_dir() is None
    assert _fresh_compile(CACHED).parse("<v>1</v>", prefix="") == {"v": 1}


_CHILD = """
import json, sys
import respc
compiled = respc.compile_template(json.loads(sys.argv[1]))
print(json.dumps([compiled.hash, compiled.parse("<v>5</v>", prefix="")]))
"""


def test_two_processes_compiling_at_once_both_succeed(tmp_path):
    env = {**os.environ, loader.CACHE_ENV: str(tmp_path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(CACHED)],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [json.loads(proc.communicate(timeout=300)[0]) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    assert results[0] == results[1] and results[0][1] == {"v": 5}
    assert len(list(tmp_path.glob("*.py"))) == 1
    assert not list(tmp_path.glob(".tmp-*"))


_HANG_CASE = """
import respc
template = {"start_anchor": ["A:", "<s>"], "fields": {
    "meta": {"close_pattern": "(?:<\\\\|c\\\\|>|\\\\|>)"},
    "z": {"close": "|>", "open": ["<", "<|s|>", "|>"]},
    "y": {"open_pattern": "(?:<\\\\|s\\\\|>|\\\\|>)", "repeats": True, "close_pattern": "\\\\r?\\\\n<\\\\|m\\\\|>"}}}
parser = respc.ResponseParser(template, "1 the <s>x 0.5|>|><|s|>|><s><|s|>")
print(parser.initial_events, parser.feed("|><|s|>[1]\\n<|m|>a|>|>"), parser.finalize())
"""


def test_regex_with_several_first_characters_terminates():
    """Regression: a scan whose regex can start with '<' or '|' once looped forever."""
    done = subprocess.run([sys.executable, "-c", _HANG_CASE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "region_close" in done.stdout


def test_same_dict_object_mutated_in_place_is_compiled_again():
    """The lookup by dict object notices in-place changes, down to a bool becoming an int."""
    template = {"start_anchor": "S", "fields": {"v": {"open": "<v>", "close": "</v>", "content": "int"}}}
    first = respc.compile_template(template)
    assert respc.compile_template(template) is first
    template["fields"]["v"]["close"] = "</w>"
    second = respc.compile_template(template)
    assert second is not first and second.parse("<v> 7 </w>", prefix="") == {"v": 7}
    template["defaults"] = {"n": 1}
    assert respc.compile_template(template).parse("", prefix="") == {"n": 1}
    template["defaults"]["n"] = 1.0
    assert repr(respc.compile_template(template).parse("", prefix="")["n"]) == "1.0"
    template["defaults"]["n"] = True
    assert respc.compile_template(template).parse("", prefix="")["n"] is True
    # a value marshal does not take (a dict subclass): the snapshot falls back to repr,
    # and the changed template is validated again (templates hold JSON values only)
    template["defaults"] = collections.OrderedDict(n=2)
    with pytest.raises(respc.TemplateError, match="defaults: a template holds JSON values only"):
        respc.compile_template(template)
    template["defaults"] = {"n": 3}
    assert respc.compile_template(template).parse("", prefix="") == {"n": 3}
    assert respc.compile_template(template) is respc.compile_template(template)


def test_parse_whole_checks_its_arguments():
    Parser = respc.load("qwen3").Parser
    with pytest.raises(TypeError, match="text must be a str, got NoneType"):
        Parser.parse_whole("", None)
    with pytest.raises(TypeError, match="prefix must be a str, got int"):
        Parser.parse_whole(5, "x")
    with pytest.raises(ValueError, match="prefix is required"):
        Parser.parse_whole(None, "x")
    assert Parser.parse_whole("", "hi<|im_end|>") == {"role": "assistant", "content": "hi"}


class _Text(str):
    """A str subclass (numpy.str_ is one): some tokenizers and data pipelines hand these out."""


@pytest.mark.parametrize("name", ["qwen3", "qwen3-coder", "gpt-oss", "command-a"])
def test_str_subclasses_parse_like_plain_str(name):
    # The compiled runtime's scans are typed for str (runtime/base.pxd): the entry points
    # copy a subclass into a plain str, so the message and every event are the same.
    root = ROOT / "bench" / "samples"
    text = (root / f"{name}.txt").read_text(encoding="utf-8")
    prefix = (root / f"{name}.prefix.txt").read_text(encoding="utf-8")
    tools = json.loads((root / f"{name}.tools.json").read_text(encoding="utf-8"))
    compiled = respc.load(name)
    expected = compiled.parse(text, prefix=prefix, tools=tools)
    assert compiled.parse(_Text(text), prefix=_Text(prefix), tools=tools) == expected
    assert compiled.parse([_Text(text)], prefix=[_Text(prefix)], tools=tools) == [expected]

    def stream(make):
        parser = compiled.parser(prefix=make(prefix), tools=tools)
        events = list(parser.initial_events)
        for i in range(0, len(text), 7):
            events += parser.feed(make(text[i : i + 7]))
        message, final = parser.finalize()
        return message, events + final

    assert stream(_Text) == stream(str)
    assert stream(_Text)[0] == expected


def test_feed_rejects_what_is_not_a_str():
    parser = respc.load("qwen3").parser(prefix="")
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        parser.feed(b"hi")
    with pytest.raises(TypeError, match="prefix must be a str, got bytes"):
        respc.load("qwen3").parser(prefix=b"")


def test_content_parsers_take_str_subclasses():
    from respc.runtime.content import make_parser

    xml = make_parser(
        "xml-inline",
        {"tag_pattern": r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>", "value_parser": {"name": "json"}},
        {"tag_split": (r"<parameter=(?P<key>\w+)>\s*", True, "</parameter>"), "key_head": ("<parameter=", ">", True, "", "")},
    )
    body = "<parameter=a>\n1\n</parameter><parameter=b>[2]</parameter>"
    assert xml(_Text(body)) == xml(body) == {"a": 1, "b": [2]}
    assert make_parser("json", {})(_Text(' {"x": 1} ')) == {"x": 1}
