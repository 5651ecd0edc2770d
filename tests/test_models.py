"""Every bundled model family parses what that model really writes.

Each family has a template (``templates/<name>.json``) and a samples file
(``templates/samples/<name>.json``) written from the family's real chat template and output
format: prompts rendered with the model's own chat template (the prefix), outputs in the
model's exact format, and the message each must give. Every case is parsed

- whole, and streamed in 1-character and seeded random chunks, to the expected message;
- with each of the family's end-of-turn tokens appended (unless the case is cut off), to the
  same message; and with text after the end of turn (a newline, pad tokens, the next turn in
  the family's own format: the samples' ``next_turn``) to the same message again: it is not
  part of the message;
- by the reference (``transformers``' chat_parsing) with the same template: the same message,
  and the same events chunk by chunk.

Samples file shape (JSON)::

    {"family": "qwen3",
     "tools": [...OpenAI tool schemas, used to type arguments...],
     "end_tokens": ["<|im_end|>"],
     "next_turn": "\n<|im_start|>user\nthanks<|im_end|>",
     "doc": {"format": ..., "reasoning": ..., "tool_calls": ..., "ids": ..., "prompt": ...,
             "source": ..., "not_covered": ...},
     "cases": [{"name": "reasoning_tool_call", "prefix": "...", "output": "...",
                "expected": {...}, "cut": false, "tools": true}, ...]}

``next_turn`` is what a generation that runs on past the end of turn writes next (appended
after an end token); every family has one. A case's ``tools`` (default true) says whether the family's tools are passed when parsing.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from optional import needs

needs("transformers.utils.chat_parsing")

from compare import assert_same
from transformers.utils.chat_parsing import ResponseParser as RefParser  # the behavioural reference
from transformers.utils.chat_parsing import parse_response as ref_parse

import respc

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
SAMPLES = TEMPLATES / "samples"

#: the case kinds every family must have (a family whose format has no parallel calls, or no
#: reasoning, says so in its doc and leaves that case out: see REQUIRED_UNLESS)
REQUIRED = ("reasoning_tool_call", "reasoning_answer", "content_only", "cut_mid_call")


def _families() -> list[str]:
    return sorted(p.stem for p in SAMPLES.glob("*.json"))


def _load(name: str) -> tuple[dict, dict]:
    template = json.loads((TEMPLATES / f"{name}.json").read_text(encoding="utf-8"))
    samples = json.loads((SAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    return template, samples


def _cases() -> list:
    out = []
    for name in _families():
        _, samples = _load(name)
        for case in samples["cases"]:
            out.append(pytest.param(name, case["name"], id=f"{name}:{case['name']}"))
    return out


def _case(name: str, case_name: str) -> tuple[dict, dict, dict]:
    template, samples = _load(name)
    case = next(c for c in samples["cases"] if c["name"] == case_name)
    return template, samples, case


def _chunkings(text: str, seed: str) -> list[tuple[str, list[str]]]:
    out = [("whole", [text]), ("1-char", list(text))]
    rng = random.Random(seed)
    for k in range(3):
        chunks, at = [], 0
        while at < len(text):
            step = rng.randint(1, 12)
            chunks.append(text[at : at + step])
            at += step
        out.append((f"random{k}", chunks))
    return out


def _stream(make, chunks: list[str]) -> tuple[dict, list]:
    parser = make()
    events = [list(parser.initial_events)]
    for chunk in chunks:
        events.append(parser.feed(chunk))
    message, final = parser.finalize()
    events.append(final)
    return message, events


def test_every_family_has_a_template_and_samples():
    names = _families()
    templates = sorted(p.stem for p in TEMPLATES.glob("*.json"))
    assert names == templates, "each bundled template needs templates/samples/<name>.json, and vice versa"
    assert sorted(respc.bundled_templates()) == sorted(templates)


@pytest.mark.parametrize("name", _families())
def test_family_samples_are_complete(name):
    template, samples = _load(name)
    assert samples["family"] == name
    kinds = {c["name"] for c in samples["cases"]}
    missing = [k for k in REQUIRED if k not in kinds]
    assert not missing, f"{name}: samples lack the cases {missing}"
    doc = samples["doc"]
    assert isinstance(samples.get("next_turn"), str) and samples["next_turn"], f"{name}: next_turn must be filled in"
    for key in ("format", "reasoning", "tool_calls", "ids", "prompt", "source", "not_covered"):
        assert isinstance(doc.get(key), str) and doc[key], f"{name}: doc.{key} must be filled in"
    # the bundled name and the template file agree, under every spelling of the name
    compiled = respc.compile_template(template)
    for spelling in {name, name.replace("-", "_").replace(".", "_"), name.replace(".", "-")}:
        assert respc.load(spelling).hash == compiled.hash, spelling


def _check_case(name: str, case_name: str, streams: slice) -> None:
    """The case's expected message from the reference, from a whole parse, and from streams
    of the ``streams`` chunkings of ``_chunkings`` (whole, 1-char, random0..2), whose events
    must be the reference's."""
    template, samples, case = _case(name, case_name)
    tools = copy.deepcopy(samples.get("tools")) if case.get("tools", True) else None
    expected = case["expected"]
    prefix, output = case["prefix"], case["output"]
    compiled = respc.compile_template(template)

    # the reference agrees with the expected message: the template says what the model writes
    assert_same(ref_parse(output, copy.deepcopy(template), prefix=prefix, tools=copy.deepcopy(tools)), expected)

    outputs = [output]
    if not case.get("cut", False):
        outputs += [output + token for token in samples.get("end_tokens", [])]
    for text in outputs:
        assert_same(compiled.parse(text, prefix=prefix, tools=copy.deepcopy(tools)), expected)
        for label, chunks in _chunkings(text, f"{name}:{case_name}:{len(text)}")[streams]:
            got_message, got_events = _stream(lambda: compiled.parser(prefix=prefix, tools=copy.deepcopy(tools)), chunks)
            assert_same(got_message, expected)
            ref_message, ref_events = _stream(
                lambda: RefParser(copy.deepcopy(template), prefix, tools=copy.deepcopy(tools)), chunks
            )
            assert_same(got_events, ref_events, f"events[{label}, {len(text)} chars]")


@pytest.mark.parametrize(("name", "case_name"), _cases())
def test_family_case(name, case_name):
    _check_case(name, case_name, slice(0, 1))  # a whole parse, and one stream of the whole text


@pytest.mark.slow
@pytest.mark.parametrize(("name", "case_name"), _cases())
def test_family_case_chunked(name, case_name):
    _check_case(name, case_name, slice(1, None))  # 1-character and seeded random chunks


def _after_turn(samples: dict) -> list[str]:
    """What may follow the end of turn in a decoded generation: a trailing newline, pad tokens,
    the family's end-of-text token repeated, the next turn."""
    after = ["\n", "<pad>" * 3]
    if "<|endoftext|>" in samples["end_tokens"]:
        after.append("<|endoftext|>" * 3)
    if samples.get("next_turn"):
        after.append(samples["next_turn"])
    return after


def _check_ending(name: str, template: dict, compiled, case: dict, tools, ending: str, way: int) -> None:
    """The case's output with ``ending`` after it: its expected message whole and streamed
    (chunking ``way`` of ``_chunkings``), the reference's message and events."""
    prefix, expected = case["prefix"], case["expected"]
    text = case["output"] + ending
    where = f"{name}:{case['name']} + {ending!r}"
    assert_same(compiled.parse(text, prefix=prefix, tools=copy.deepcopy(tools)), expected, where)
    label, chunks = _chunkings(text, where)[way]
    got_message, got_events = _stream(lambda: compiled.parser(prefix=prefix, tools=copy.deepcopy(tools)), chunks)
    assert_same(got_message, expected, f"{where} [{label}]")
    ref_message, ref_events = _stream(lambda: RefParser(copy.deepcopy(template), prefix, tools=copy.deepcopy(tools)), chunks)
    assert_same(ref_message, expected, f"{where} [{label}, reference]")
    assert_same(got_events, ref_events, f"events[{where}, {label}]")


@pytest.mark.parametrize("name", _families())
def test_text_after_the_end_of_turn_is_ignored(name):
    """Every whole case (not cut) with text after one of the family's end tokens (each token in
    turn, case by case): the same message as without it, whole and streamed, and the same
    events as the reference. Each text is streamed one way (1-character or seeded random chunks,
    alternating), to keep the test's size in check."""
    template, samples = _load(name)
    compiled = respc.compile_template(template)
    tokens = samples["end_tokens"]
    cases = [c for c in samples["cases"] if not c.get("cut", False)]
    for k, case in enumerate(cases):
        tools = samples.get("tools") if case.get("tools", True) else None
        token = tokens[k % len(tokens)]
        for j, after in enumerate(_after_turn(samples)):
            _check_ending(name, template, compiled, case, tools, token + after, 1 + (j + k) % 4)


#: cut cases that still read the end token (and what follows it) into the region left open:
#: gigachat3's call, whose close reads ``}`` then the separator and all after it (a close
#: alternative at the separator alone made its streamed parse of many calls quadratic:
#: tests/test_linear_work.py)
END_INSIDE_CUT_LEAKS = {
    ("gigachat3", "cut_mid_call"),
    ("gigachat3", "v3_1_cut_mid_call"),
}

#: families where a reply cut at some points and then ended by the end token does not give the
#: cut reply's own message, and why
CUT_THEN_END_DIFFERS = {
    "gigachat3": "a call's close reads `}` then the separator (END_INSIDE_CUT_LEAKS)",
    "hunyuan": "an `<answer>` cut before its close stays raw text in the cut reply, the end token closes it",
}


@pytest.mark.parametrize("name", _families())
def test_end_of_turn_right_after_a_cut(name):
    """A reply cut off (inside a tool call, an argument, the reasoning) that still ends with
    the model's end-of-turn token, and text after the turn (a newline, the next turn): the
    same message as the cut reply alone, whole and streamed, with the reference's events. The
    token is never read as part of the call, its arguments or the reasoning. Each text is
    streamed one way (1-character or seeded random chunks, alternating)."""
    template, samples = _load(name)
    compiled = respc.compile_template(template)
    cases = [c for c in samples["cases"] if c.get("cut", False) and (name, c["name"]) not in END_INSIDE_CUT_LEAKS]
    if not cases:
        pytest.skip(f"{name}: no cut case outside END_INSIDE_CUT_LEAKS")
    for k, case in enumerate(cases):
        tools = samples.get("tools") if case.get("tools", True) else None
        for j, token in enumerate(samples["end_tokens"]):
            for after in ("", "\n", samples.get("next_turn") or ""):
                _check_ending(name, template, compiled, case, tools, token + after, 1 + (j + k) % 4)


def test_end_inside_cut_leaks_is_current():
    """Every listed case still leaks (a fixed one leaves the list)."""
    still = set()
    for name, case_name in sorted(END_INSIDE_CUT_LEAKS):
        template, samples, case = _case(name, case_name)
        tools = samples.get("tools") if case.get("tools", True) else None
        compiled = respc.compile_template(template)
        text = case["output"] + samples["end_tokens"][0]
        try:
            assert_same(compiled.parse(text, prefix=case["prefix"], tools=copy.deepcopy(tools)), case["expected"])
        except AssertionError:
            still.add((name, case_name))
    assert still == END_INSIDE_CUT_LEAKS, f"fixed, take out of END_INSIDE_CUT_LEAKS: {sorted(END_INSIDE_CUT_LEAKS - still)}"


def _cut_points(name: str, case: dict, k: int = 12) -> list[int]:
    out = case["output"]
    rng = random.Random(f"cut-then-end:{name}:{case['name']}")
    return sorted(rng.sample(range(1, len(out)), min(k, len(out) - 1))) if len(out) > 1 else []


@pytest.mark.parametrize("name", _families())
def test_cut_anywhere_then_end_of_turn(name):
    """Any reply cut at a seeded point (inside the reasoning, the answer, a call's name or its
    arguments) and then ended by an end token (with a newline, or the next turn after it)
    parses as the cut reply alone does: the token is never read into the open region, a call's
    name or its arguments. Whole parses, and the reference's parse of the same text."""
    template, samples = _load(name)
    compiled = respc.compile_template(template)
    tokens = samples["end_tokens"]
    ends = [(tokens[0], "\n"), (tokens[-1], samples.get("next_turn") or "")]
    differs = []
    for case in samples["cases"]:
        if case.get("cut", False):
            continue
        tools = samples.get("tools") if case.get("tools", True) else None
        for at in _cut_points(name, case):
            cut = case["output"][:at]
            try:
                want = compiled.parse(cut, prefix=case["prefix"], tools=copy.deepcopy(tools), on_malformed="collect")
            except ValueError:
                continue  # a cut the format cannot read whole (a partial call list): nothing to keep
            for token, after in ends:
                text = cut + token + after
                where = f"{name}:{case['name']} cut at {at} ({cut[-20:]!r}) + {token + after!r}"
                got = compiled.parse(text, prefix=case["prefix"], tools=copy.deepcopy(tools), on_malformed="collect")
                if got != want:
                    differs.append(where)
                    continue
                if not got[1]:
                    ref = ref_parse(text, copy.deepcopy(template), prefix=case["prefix"], tools=copy.deepcopy(tools))
                    assert_same(got[0], ref, f"{where} [reference]")
    if name in CUT_THEN_END_DIFFERS:
        assert differs, f"{name} reads every cut then end token as the cut reply: take it out of CUT_THEN_END_DIFFERS"
        return
    assert not differs, "\n".join(differs[:5])


#: tool names as real tool lists spell them (MCP servers' ``mcp__server__tool``, dotted
#: namespaces, dashes, capitals and digits)
TOOL_NAMES = ["get-weather", "web.search_v2", "mcp__github__create_issue", "GetWeather2", "get_weather.v1"]


@pytest.mark.parametrize("name", _families())
def test_tool_names_real_tool_lists_use(name):
    """Each whole call sample with its get_weather renamed (and the tool with it): the call
    has that name, as the reference reads it too (kimi-k2's ``functions.web.search_v2:0`` was
    read as ``search_v2``)."""
    template, samples = _load(name)
    if not any(t["function"]["name"] == "get_weather" for t in samples.get("tools") or []):
        pytest.skip(f"{name}: its samples have no get_weather tool")
    compiled = respc.load(name)
    seen = 0
    for tool_name in TOOL_NAMES:
        tools = copy.deepcopy(samples["tools"])
        for tool in tools:
            if tool["function"]["name"] == "get_weather":
                tool["function"]["name"] = tool_name
        for case in samples["cases"]:
            calls = [c["function"].get("name") if isinstance(c, dict) and isinstance(c.get("function"), dict) else None
                     for c in (case.get("expected") or {}).get("tool_calls") or []]
            if "cut" in case["name"] or "get_weather" not in calls or not case.get("tools", True):
                continue
            text = case["output"].replace("get_weather", tool_name)
            where = f"{name}:{case['name']} as {tool_name}"
            message = compiled.parse(text, prefix=case["prefix"], tools=copy.deepcopy(tools))
            got = [c["function"]["name"] for c in message.get("tool_calls") or []]
            assert got == [tool_name if c == "get_weather" else c for c in calls], where
            ref = ref_parse(text, copy.deepcopy(template), prefix=case["prefix"], tools=copy.deepcopy(tools))
            assert_same(message, ref, where)
            seen += 1
    assert seen, f"{name}: no call sample of get_weather"


def test_every_family_is_documented():
    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip().strip("`") for line in text.splitlines() if line.startswith("| `")}
    assert rows == set(_families())
