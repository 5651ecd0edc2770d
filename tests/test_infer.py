"""respc.infer on chat templates written for these tests (one per format kind), `respc infer`, and
a property test: what infer returns parses back random conversations the chat template renders."""

import json
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import chat_templates as C  # noqa: E402
from optional import needs  # noqa: E402

import respc  # noqa: E402
from respc.chat import probes  # noqa: E402
from respc.chat.infer import infer_report, verify  # noqa: E402
from respc.chat.render import ChatTemplate  # noqa: E402
from respc.cli import main  # noqa: E402
from respc.compiler.lint import lint  # noqa: E402

KINDS = ["chatml_json", "tagged_xml", "json_list_ids", "pythonic", "preopen_think", "drops_reasoning", "no_tools", "raises_on_tools"]


def _parse(template, chat, message, history=None, **kwargs):
    history = history or [probes.USER]
    prompt = chat.render(history, tools=probes.TOOLS, add_generation_prompt=True, **kwargs)
    turn = chat.render(history + [message], tools=probes.TOOLS, **kwargs)
    assert turn.startswith(prompt)
    return respc.compile_template(template).parse(turn[len(prompt):], prefix=prompt, tools=probes.TOOLS)


@pytest.mark.parametrize("kind", KINDS)
def test_infer_each_format_kind_round_trips(kind):
    chat = ChatTemplate(C.ALL[kind], bos_token="<s>", eos_token="</s>")
    template = respc.infer(chat)
    assert verify(template, chat, {}, random_count=30, seed=7) == []


def test_chatml_json_emits_literal_delimiters():
    template = respc.infer(C.CHATML_JSON)
    assert template["start_anchor"] == "<|im_start|>assistant\n"
    calls = template["fields"]["tool_calls"]
    assert calls["open_pattern"] == r"\s*<tool_call>" and calls["content"] == "json"
    assert template["fields"]["reasoning_content"]["open_pattern"] == r"\s*<think>"


def test_tagged_parameters_become_xml_inline():
    template = respc.infer(C.TAGGED_XML)
    calls = template["fields"]["tool_calls"]
    assert calls["content"] == "xml-inline"
    assert "(?P<name>" in calls["open_pattern"]
    message = _parse(template, ChatTemplate(C.TAGGED_XML), {"role": "assistant", "content": "", "tool_calls": [probes.WEATHER]})
    assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}


def test_json_list_with_ids_reads_ids():
    template = respc.infer(C.JSON_LIST_IDS, bos_token="<s>", eos_token="</s>")
    assert template["fields"]["tool_calls"]["transform_each"] is True
    chat = ChatTemplate(C.JSON_LIST_IDS, bos_token="<s>", eos_token="</s>")
    message = _parse(template, chat, {"role": "assistant", "content": "", "tool_calls": [probes.WEATHER, probes.TIME]})
    assert [c["id"] for c in message["tool_calls"]] == [probes.ID1, probes.ID2]


def test_pythonic_calls_become_a_python_call_list():
    template = respc.infer(C.PYTHONIC)
    assert template["fields"]["tool_calls"]["content"] == "python-call-list"


def test_pre_opened_reasoning_is_left_to_the_prefix():
    template = respc.infer(C.PREOPEN_THINK)
    assert template["start_anchor"] == "<|im_start|>assistant\n"
    chat = ChatTemplate(C.PREOPEN_THINK)
    prompt = chat.render([probes.USER], add_generation_prompt=True)
    assert prompt.endswith("<think>\n")
    message = respc.compile_template(template).parse("Thinking.\n</think>\n\nHi.<|im_end|>", prefix=prompt)
    assert message["reasoning_content"] == "Thinking." and message["content"] == "Hi."


def test_reasoning_dropped_from_history_is_closed_by_convention():
    assert C.DROPS_REASONING.count("<think>") == 1  # only the generation prompt writes it
    result = infer_report(C.DROPS_REASONING)
    spec = result.template["fields"]["reasoning_content"]
    assert spec["open_pattern"] == r"\s*<think>" and spec["close_pattern"].startswith("</think>")
    assert any("by convention" in line for line in result.lines)
    chat = ChatTemplate(C.DROPS_REASONING)
    prompt = chat.render([probes.USER], add_generation_prompt=True)
    message = respc.compile_template(result.template).parse("Hmm.\n</think>\n\nHi.<|im_end|>", prefix=prompt)
    assert message["reasoning_content"] == "Hmm." and message["content"] == "Hi."


@pytest.mark.parametrize("kind", ["no_tools", "raises_on_tools"])
def test_no_tool_support_means_no_tool_calls_field(kind):
    result = infer_report(C.ALL[kind])
    assert "tool_calls" not in result.template["fields"]
    assert any("tool_calls" in line and "no tool call" in line for line in result.lines) or any(
        "raises" in line for line in result.lines
    )


def test_inferred_templates_lint_clean():
    for kind in KINDS:
        assert lint(respc.infer(C.ALL[kind], eos_token="</s>")) == [], kind


def test_infer_error_names_the_part():
    broken = C.CHATML_JSON.replace("'\\n</tool_call>'", "'\\n'")  # calls never closed: cannot be told apart
    with pytest.raises(respc.InferError) as info:
        respc.infer("{{ messages[0].content }}")
    assert str(info.value).startswith("start anchor:")
    assert issubclass(respc.InferError, ValueError)
    result = infer_report(broken)
    assert result.template is None or verify(result.template, ChatTemplate(broken), {}) == []


def test_cli_infer_writes_a_template(tmp_path, capsys):
    path = tmp_path / "chat.jinja"
    path.write_text(C.TAGGED_XML)
    out = tmp_path / "t.json"
    assert main(["infer", str(path), "-o", str(out), "--report"]) == 0
    assert "tagged parameters" in capsys.readouterr().err
    assert respc.compile_template(json.loads(out.read_text()))
    path.write_text("{{ messages[0].content }}")
    assert main(["infer", str(path)]) == 2
    assert "start anchor" in capsys.readouterr().err


def test_for_model_infers_when_no_family_fits(tmp_path):
    (tmp_path / "chat_template.jinja").write_text(C.PYTHONIC)
    report = []
    compiled = respc.for_model(str(tmp_path), report=report)
    assert "inferred" in report[0]
    assert compiled.template["fields"]["tool_calls"]["content"] == "python-call-list"


@pytest.mark.parametrize("kind", ["chatml_json", "tagged_xml", "json_list_ids", "pythonic"])
def test_property_infer_then_parse_reproduces_random_conversations(kind):
    needs("hypothesis")
    from hypothesis import given, settings
    from hypothesis import strategies as st

    chat = ChatTemplate(C.ALL[kind], bos_token="<s>", eos_token="</s>")
    template = respc.infer(chat)
    compiled = respc.compile_template(template)

    @settings(max_examples=40, derandomize=True, deadline=None)
    @given(st.integers(min_value=0, max_value=10**9))
    def check(seed):
        item = probes.render_probe(chat, probes.random_probe(random.Random(seed), seed))
        if isinstance(item, str):
            return
        parsed = compiled.parse(item.output, prefix=item.prefix, tools=probes.TOOLS)
        assert probes.matches(parsed, item.expected), (seed, item.output, probes.normalize(parsed), item.expected)

    check()


def test_content_after_calls_as_a_second_turn_is_inferred_from_the_first():
    from test_detect import TWO_TURNS

    template = respc.infer(TWO_TURNS)
    from respc.api import compile_template

    compiled = compile_template(template)
    out = '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}\n</tool_call><|im_end|>\n'
    parsed = compiled.parse(out, prefix="<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert parsed["tool_calls"][0]["function"]["name"] == "get_time"


# parameters whose tag says whether the value is a string (as DeepSeek-V3.2's DSML does), written here
TYPED_TAGS = C.chatml(
    "{%- if loop.first %}{{- '<calls>\\n' }}{%- endif %}"
    "{{- '<invoke name=\"' + tc.function.name + '\">\\n' }}"
    "{%- for k, v in tc.function.arguments.items() %}"
    "{{- '<parameter name=\"' + k + '\" string=\"' + ('true' if v is string else 'false') + '\">' + (v | string) + '</parameter>\\n' }}"
    "{%- endfor %}{{- '</invoke>\\n' }}{%- if loop.last %}{{- '</calls>' }}{%- endif %}"
)


def test_a_key_tag_that_varies_with_the_value_type():
    template = respc.infer(TYPED_TAGS)
    chat = ChatTemplate(TYPED_TAGS)
    message = {"role": "assistant", "content": "", "tool_calls": [probes.call("set_alarm", {"hour": 7, "label": "wake up"})]}
    parsed = _parse(template, chat, message)
    assert parsed["tool_calls"][0]["function"]["arguments"] in ({"hour": 7, "label": "wake up"}, '{"hour": 7, "label": "wake up"}')


def test_reasoning_markers_the_prompt_asks_for():
    from test_detect import _inst

    source = _inst(False, system="Think first, inside [THINK]your thoughts[/THINK], then answer.")
    template = respc.infer(source, bos_token="<s>", eos_token="</s>")
    assert "reasoning_content" in template["fields"]
    from respc.api import compile_template

    parsed = compile_template(template).parse("[THINK]Paris is near.[/THINK]It is sunny.</s>", prefix="<s>[INST]hi[/INST]")
    assert parsed["reasoning_content"].strip() == "Paris is near." and parsed["content"].strip() == "It is sunny."
