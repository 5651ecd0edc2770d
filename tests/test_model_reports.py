"""What users report about the bundled families, checked over every family's samples.

Each test loops over ``templates/samples/*.json``, so a family added later is checked the same
way without a line here. The reports:

- whitespace the model writes around its markers (a newline before ``<think>``, after a
  tool-call section, at the end of a reply without its end-of-turn token) never becomes part of
  ``content`` or ``reasoning_content``: a family whose content joins several regions (text
  before and after calls) must not join empty ones;
- streaming agrees with parsing whole when a chunk holds several tokens, a marker and text
  together (split just before and after every marker-looking boundary);
- an output cut off anywhere inside its last tool call, streamed with ``on_malformed="event"``
  (and parsed whole with ``on_malformed="collect"``), raises nothing and keeps what came
  before: the reasoning and the earlier calls;
- a multi-turn prompt whose history holds an earlier turn (with its ``</think>`` or tool
  calls) parses the reply as the prompt alone does: the start anchor cuts the history;
- the report cases the families were fixed for (text around calls, a call inside thinking,
  calls without ids, ...) stay in their samples.

Every whole parse is compared with the reference (transformers 5.24.0), every stream's events
too, so a template that passes stays portable.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from compare import assert_same
from transformers.utils.chat_parsing import ResponseParser as RefParser  # the behavioural reference
from transformers.utils.chat_parsing import parse_response as ref_parse

import respc

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
SAMPLES = TEMPLATES / "samples"
FAMILIES = sorted(p.stem for p in SAMPLES.glob("*.json"))

#: families whose tool calls are one document the language parses whole: a JSON list (Command
#: R+/R7B/A, Apriel, Nemotron Nano v2) or a pythonic call list opened only once complete (Llama
#: 3.2 pythonic, Llama 4, LFM2/2.5). A reply cut inside it loses the list (content keeps the
#: raw text, or the region is malformed), since the language has no partial-JSON nor partial
#: call-list parser (docs/models.md, "What the template language cannot say")
CUT_LOSES_THE_LIST = {
    "apriel-1.5",
    "command-a",
    "command-r-plus",
    "command-r7b",
    "lfm2",
    "lfm2.5",
    "llama3.2-pythonic",
    "llama4",
    "nemotron-nano-v2",
}

#: the cases each fixed family keeps, by report (the families' samples hold them)
REPORT_CASES = {
    "mistral-small-3.1": ["call_without_id", "text_around_calls", "cut_inside_list"],
    "llama3.1": ["semicolon_parallel_calls", "call_then_text", "cut_after_first_call"],
    "llama3.2": ["semicolon_parallel_calls", "call_then_text"],
    "apertus": ["calls_without_suffix", "text_around_calls"],
    "deepseek-v3.1": ["text_around_calls"],
    "deepseek-r1": ["text_around_calls"],
    "deepseek-v3.2": ["text_around_calls"],
    "magistral": ["text_before_think"],
    "gemma4": ["empty_thought_channel"],
    "glm-4.5": ["code_argument_whitespace"],
    "glm-4.6": ["code_argument_whitespace"],
    "glm-4.7-flash": ["code_argument_whitespace"],
    "qwen3": ["call_inside_thinking", "call_inside_thinking_then_close", "text_around_calls"],
    "qwen3.5": ["call_inside_thinking", "text_around_calls"],
    "kimi-k2-thinking": ["call_inside_think", "call_inside_think_without_section"],
    "phi-4-mini": ["functools_call"],
}


#: families bundled alongside the whitespace rule whose markers do not yet take the whitespace
#: written next to them (a blank line before or after a marker stays in content), and the one
#: whose start anchor misses a history of the other token spelling: known faults, marked strict
#: so that a fix is noticed (docs/models.md, their rows)
KNOWN = {
    "whitespace": {"apriel-1.6", "firefunction-v2", "hunyuan-v3", "minimax-m1"},
    "history": {"hunyuan-v3"},
}


def _families(check: str) -> list:
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=f"{n}: known {check} fault")) if n in KNOWN[check] else n
        for n in FAMILIES
    ]


def _load(name: str) -> tuple[dict, dict]:
    template = json.loads((TEMPLATES / f"{name}.json").read_text(encoding="utf-8"))
    samples = json.loads((SAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    return template, samples


def _tools(samples: dict, case: dict):
    return copy.deepcopy(samples.get("tools")) if case.get("tools", True) else None


def _stream(make, chunks: list[str]) -> tuple[dict, list]:
    parser = make()
    events = [list(parser.initial_events)]
    for chunk in chunks:
        events.append(parser.feed(chunk))
    message, final = parser.finalize()
    events.append(final)
    return message, events


def _boundaries(text: str) -> list[int]:
    """Where a marker may start or end: before ``<``/``[``, after ``>``/``]``, and both ends."""
    out = {0, len(text)}
    for i, ch in enumerate(text):
        if ch in "<[":
            out.add(i)
        elif ch in ">]":
            out.add(i + 1)
    return sorted(out)


def _padded(text: str):
    for at in _boundaries(text):
        for ws in ("\n", " \n", "\n\n"):
            yield text[:at] + ws + text[at:]


def _whitespace_fault(message) -> str | None:
    if not isinstance(message, dict):
        return None
    for key in ("content", "reasoning_content"):
        value = message.get(key)
        if isinstance(value, str) and (value != value.strip() or "\n\n\n\n" in value):
            return key
    return None


def test_every_fixed_family_still_exists():
    assert set(REPORT_CASES) <= set(FAMILIES)


@pytest.mark.parametrize("name", _families("whitespace"))
def test_whitespace_around_markers_never_becomes_text(name):
    template, samples = _load(name)
    compiled = respc.compile_template(template)
    for case in samples["cases"]:
        for text in _padded(case["output"]):
            tools = _tools(samples, case)
            try:
                got = compiled.parse(text, prefix=case["prefix"], tools=copy.deepcopy(tools))
            except Exception as exc:  # an error must be the reference's error too
                with pytest.raises(type(exc)):
                    ref_parse(text, copy.deepcopy(template), prefix=case["prefix"], tools=copy.deepcopy(tools))
                continue
            fault = _whitespace_fault(got)
            assert fault is None, f"{name}:{case['name']}: {fault} {got.get(fault)!r} from {text!r}"
            ref = ref_parse(text, copy.deepcopy(template), prefix=case["prefix"], tools=copy.deepcopy(tools))
            assert_same(got, ref, f"{name}:{case['name']} {text!r}")


@pytest.mark.parametrize("name", FAMILIES)
def test_streaming_agrees_when_a_chunk_holds_a_marker_and_text(name):
    template, samples = _load(name)
    compiled = respc.compile_template(template)
    for case in samples["cases"]:
        text, prefix = case["output"], case["prefix"]
        for lead in (1, 3, 6):
            cuts = sorted({max(0, at - lead) for at in _boundaries(text)} | {0, len(text)})
            chunks = [text[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]
            tools = _tools(samples, case)
            got, got_events = _stream(lambda: compiled.parser(prefix=prefix, tools=copy.deepcopy(tools)), chunks)
            assert_same(got, case["expected"], f"{name}:{case['name']} chunks {chunks!r}")
            _, ref_events = _stream(lambda: RefParser(copy.deepcopy(template), prefix, tools=copy.deepcopy(tools)), chunks)
            assert_same(got_events, ref_events, f"{name}:{case['name']} events, chunks {chunks!r}")


def _call_key(call: dict):
    function = call.get("function", {}) if isinstance(call, dict) else {}
    if not isinstance(function, dict):  # a cut call whose whole object is the raw text
        return None, function
    return function.get("name"), function.get("arguments")


@pytest.mark.parametrize("name", FAMILIES)
def test_cut_inside_the_last_call_keeps_what_came_before(name):
    template, samples = _load(name)
    compiled = respc.compile_template(template)
    checked = 0
    for case in samples["cases"]:
        expected = case["expected"]
        calls = expected.get("tool_calls") or []
        if case.get("cut") or not calls:
            continue
        text, prefix, tools = case["output"], case["prefix"], _tools(samples, case)
        last_name = _call_key(calls[-1])[0]
        start = text.rfind(last_name) if last_name else -1
        if start < 0:
            continue
        for at in range(start, len(text), max(1, (len(text) - start) // 12)):
            cut = text[:at]
            got, _errors = compiled.parse(cut, prefix=prefix, tools=copy.deepcopy(tools), on_malformed="collect")
            streamed, _ = _stream(
                lambda: compiled.parser(prefix=prefix, tools=copy.deepcopy(tools), on_malformed="event"), list(cut)
            )
            assert_same(streamed, got, f"{name}:{case['name']} cut at {at}: streamed")
            if expected.get("reasoning_content") and at >= text.find(expected["reasoning_content"]) + len(
                expected["reasoning_content"]
            ) + 20:
                assert str(got.get("reasoning_content", "")).startswith(expected["reasoning_content"]), (
                    f"{name}:{case['name']} cut at {at}: reasoning lost: {got!r}"
                )
            if name in CUT_LOSES_THE_LIST:
                continue
            kept = [_call_key(c) for c in got.get("tool_calls") or []]
            assert kept[: len(calls) - 1] == [_call_key(c) for c in calls[:-1]], (
                f"{name}:{case['name']} cut at {at} ({cut[-40:]!r}): earlier calls lost: {got!r}"
            )
            checked += 1
    if name not in CUT_LOSES_THE_LIST and any(c["expected"].get("tool_calls") for c in samples["cases"]):
        assert checked, f"{name}: no call found to cut in its samples"


@pytest.mark.parametrize("name", _families("history"))
def test_history_before_the_prompt_does_not_change_the_reply(name):
    template, samples = _load(name)
    compiled = respc.compile_template(template)
    cases = samples["cases"]
    earlier = next((c for c in cases if c["name"] == "reasoning_tool_call"), cases[0])
    end = (samples.get("end_tokens") or [""])[0]
    history = earlier["prefix"] + earlier["output"] + end + "\n"
    for case in cases:
        prefix = history + case["prefix"]
        tools = _tools(samples, case)
        got = compiled.parse(case["output"], prefix=prefix, tools=copy.deepcopy(tools))
        assert_same(got, case["expected"], f"{name}:{case['name']} after a history")
        ref = ref_parse(case["output"], copy.deepcopy(template), prefix=prefix, tools=copy.deepcopy(tools))
        assert_same(got, ref, f"{name}:{case['name']} after a history, reference")


@pytest.mark.parametrize("name", sorted(REPORT_CASES))
def test_fixed_families_keep_their_report_cases(name):
    _, samples = _load(name)
    names = {c["name"] for c in samples["cases"]}
    missing = [c for c in REPORT_CASES[name] if c not in names]
    assert not missing, f"{name}: samples lack the report cases {missing}"


def test_list_says_which_variant_each_name_is(capsys):
    """``respc list`` names the variant of every family, so a user picks the one whose format
    the model's chat template asks for (llama3.2 is the JSON mode of Llama 3.2's own template;
    the pythonic list is llama3.2-pythonic)."""
    from respc.cli import main

    assert main(["list"]) == 0
    lines = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert sorted(lines) == FAMILIES
    assert "chat template" in lines["llama3.2"] and "JSON" in lines["llama3.2"]
    assert "pythonic" in lines["llama3.2-pythonic"]
    assert all(text.strip() for text in lines.values())
