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


# --- formats read from more than the probes' renders (chat templates in tests/chat_templates.py) ---


def _reply(kind, output, history=None, **kwargs):
    """``output`` parsed by the template inferred for ``C.MORE[kind]``, after that chat template's prompt."""
    chat = ChatTemplate(C.MORE[kind], bos_token="<s>", eos_token="</s>")
    prompt = chat.render(history or [probes.USER], tools=probes.TOOLS, add_generation_prompt=True, **kwargs)
    template = respc.infer(chat)
    return template, respc.compile_template(template).parse(output, prefix=prompt, tools=probes.TOOLS)


def _calls(message):
    return [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]


@pytest.mark.parametrize("kind", sorted(C.MORE))
def test_more_formats_round_trip_and_lint_clean(kind):
    chat = ChatTemplate(C.MORE[kind], bos_token="<s>", eos_token="</s>")
    template = respc.infer(chat)
    assert verify(template, chat, {}, random_count=30, seed=11) == []
    assert lint(template) == [], kind


def test_a_value_in_a_key_named_tag_may_sit_on_its_own_lines():
    out = "<tool_call>\n<function=get_time>\n<parameter=timezone>\nAsia/Tokyo\n</parameter>\n</function>\n</tool_call><|im_end|>"
    _, message = _reply("key_named_tags", out)
    assert _calls(message) == [("get_time", {"timezone": "Asia/Tokyo"})]


def test_the_turn_after_a_tool_result_starts_before_a_pre_closed_reasoning_block():
    history = [probes.USER, {"role": "assistant", "content": "", "tool_calls": [probes.WEATHER]}, {"role": "tool", "content": "sunny"}]
    template, message = _reply("results_in_turn", "Sunny all week.<end>", history)
    assert template["start_anchor_pattern"].startswith("(?:<A>|</results>)")
    assert message["content"] == "Sunny all week." and not message.get("tool_calls")
    _, message = _reply("results_in_turn", "It is sunny.</think>Sunny all week.<end>", history, enable_thinking=True)
    assert message["reasoning_content"] == "It is sunny." and message["content"] == "Sunny all week."


def test_ids_inside_a_json_list_are_optional():
    template = respc.infer(C.JSON_LIST_IDS, bos_token="<s>", eos_token="</s>")
    compiled = respc.compile_template(template)
    message = compiled.parse('[CALLS][{"name": "get_time", "arguments": {"timezone": "UTC"}}]</s>', prefix="<s>[USER]hi[/USER][ASSISTANT]")
    assert message["tool_calls"][0]["function"] == {"name": "get_time", "arguments": {"timezone": "UTC"}}
    assert message["tool_calls"][0]["id"] == ""


def test_a_template_that_appends_to_a_list_is_rendered_in_a_mutable_sandbox():
    chat = ChatTemplate(C.APPENDS_TO_LIST)
    assert chat.render([probes.USER, {"role": "assistant", "content": "", "tool_calls": [probes.WEATHER]}], tools=probes.TOOLS)
    assert chat.mutated > 0  # the immutable sandbox refused seen.append(...)
    assert respc.infer(chat)["fields"]["tool_calls"]["open_pattern"] == r"\s*<tool_call>"


def test_reasoning_opened_by_a_sentence_and_ended_by_begin_final():
    template, message = _reply("sentence_opens_reasoning", "Paris is mild.\n[BEGIN FINAL]\nIt is mild.\n[END FINAL]")
    assert template["fields"]["reasoning_content"]["open_pattern"] == r"\s*My reasoning:"
    assert message["reasoning_content"].strip() == "Paris is mild." and message["content"].strip() == "It is mild."


def test_reasoning_is_the_reply_before_a_prompt_described_begin_marker():
    template, message = _reply("begin_end_prompt", "The user asks about Paris.\n[BEGIN FINAL]\nIt is sunny.\n[END FINAL]\n<|end|>")
    assert template["start_anchor"] == "<|end|>\n"
    assert message["reasoning_content"].strip() == "The user asks about Paris." and message["content"].strip() == "It is sunny."


def test_a_generation_prompt_written_whether_or_not_asked_for():
    result = infer_report(C.PROMPT_ALWAYS)
    assert any("whether or not it is asked for" in line for line in result.lines)
    fields = result.template["fields"]
    assert result.template["start_anchor"] == "<|TURN|><|BOT|>"
    assert r"(?:<\|END_ANSWER\|>|<\|END_TURN\|>)[\s\S]*" in fields["content"]["close_pattern"]
    out = '<|THINK|>Look it up.<|END_THINK|><|ACT|>[{"name": "get_time", "arguments": {"timezone": "UTC"}}]<|END_ACT|>'
    _, message = _reply("prompt_always", out, enable_thinking=True)
    assert message["reasoning_content"] == "Look it up." and _calls(message) == [("get_time", {"timezone": "UTC"})]
    _, message = _reply("prompt_always", "<|ANSWER|>Hi.<|END_ANSWER|>")
    assert message["content"] == "Hi."


def test_arguments_with_bare_keys_and_other_string_delimiters():
    template, message = _reply("loose_json", '<call>set_alarm{hour:7,label:<"|>wake, up<"|>}</call><|im_end|>')
    assert template["fields"]["tool_calls"]["content_args"]["string_delims"] == [['<"|>', '<"|>']]
    assert _calls(message) == [("set_alarm", {"hour": 7, "label": "wake, up"})]


def test_markers_and_calls_the_template_text_describes():
    result = infer_report(C.DESCRIBED_CALLS)
    assert any("the template's text asks for it between '<think>'" in line for line in result.lines)
    assert "described_call" in " ".join(result.lines) or result.template["fields"]["tool_calls"]
    out = '<think>Two lookups.</think><response>Checking.</response><|tool_call|>[{"name": "get_time", "arguments": {"timezone": "UTC"}}, {"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}]'
    _, message = _reply("described_calls", out)
    assert message["reasoning_content"] == "Two lookups." and message["content"].strip() == "Checking."
    assert _calls(message) == [("get_time", {"timezone": "UTC"}), ("get_weather", {"city": "Oslo", "days": 2})]


def test_a_tool_result_close_no_probe_renders_is_a_start_anchor():
    template = respc.infer(C.RESULTS_BRANCH)
    assert template["start_anchor"] == ["<|im_start|>assistant\n", "<tool_result|>"]
    prefix = '<|im_start|>assistant\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call><|tool_result>"12:00"<tool_result|>'
    message = respc.compile_template(template).parse("It is noon.<|im_end|>", prefix=prefix)
    assert message["content"] == "It is noon." and not message.get("tool_calls")


def test_a_json_list_keyed_by_function_names():
    out = '<calls>[{"get_weather": {"city": "Oslo", "days": 2, "opts": {"units": "C"}}}, {"get_time": {}}]</calls><|im_end|>'
    _, message = _reply("keyed_list", out)
    assert _calls(message) == [("get_weather", {"city": "Oslo", "days": 2, "opts": {"units": "C"}}), ("get_time", {})]
    assert not message.get("content")


def test_a_json_call_without_close_ends_where_json_cannot_go_on():
    out = '\n<|call|> {"name": "get_weather", "arguments": {"city": "Oslo", "opts": {"units": "C"}}}\n<|call|> {"name": "get_time", "arguments": {}}<|im_end|>'
    template, message = _reply("open_only_json", out)
    assert _calls(message) == [("get_weather", {"city": "Oslo", "opts": {"units": "C"}}), ("get_time", {})]


def test_text_after_a_json_list_without_close_is_content():
    template = respc.infer(C.JSON_LIST_IDS, bos_token="<s>", eos_token="</s>")
    compiled = respc.compile_template(template)
    out = 'Checking.[CALLS][{"name": "get_time", "arguments": {"timezone": "UTC"}, "id": "a1"}] I will report back.</s>'
    message = compiled.parse(out, prefix="<s>[USER]hi[/USER][ASSISTANT]")
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_time"]
    assert "I will report back." in message["content"] and "Checking." in message["content"]


def test_a_template_for_string_arguments_is_rendered_with_them():
    chat = ChatTemplate(C.STRING_ARGUMENTS)
    turn = chat.render([probes.USER, {"role": "assistant", "content": "", "tool_calls": [probes.WEATHER]}], tools=probes.TOOLS)
    assert '"arguments": {"city": "Paris", "days": 3}}' in turn and chat.string_arguments > 0
    _, message = _reply("string_arguments", '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}\n</tool_call><|im_end|>')
    assert _calls(message) == [("get_time", {"timezone": "UTC"})]


def test_a_call_marker_the_generation_prompt_writes():
    template, message = _reply("recipient_marker", 'get_time\n{"timezone": "UTC"}>>>set_alarm\n{"hour": 7, "label": "up"}<|eot|>')
    assert template["start_anchor"] == "<|start|>assistant\n"
    assert _calls(message) == [("get_time", {"timezone": "UTC"}), ("set_alarm", {"hour": 7, "label": "up"})]
    _, message = _reply("recipient_marker", 'all\nOne moment.>>>get_time\n{"timezone": "UTC"}<|eot|>')
    assert message["content"] == "One moment." and _calls(message) == [("get_time", {"timezone": "UTC"})]


def test_a_marker_the_template_writes_before_calls_in_an_unreached_branch():
    out = '<|python_tag|>{"type": "function", "name": "get_time", "parameters": {"timezone": "UTC"}} Checking now.<|eot|>'
    template, message = _reply("bare_json_tagged_branch", out)
    assert r"(?:<\|python_tag\|>\s*)?" in template["fields"]["tool_calls"]["open_pattern"]
    assert _calls(message) == [("get_time", {"timezone": "UTC"})] and message["content"] == "Checking now."


def test_environment_ipython_makes_the_python_tag_optional_before_a_call():
    # Llama 3's prompt format: with "Environment: ipython" the model writes <|python_tag|> before
    # its calls, which this template never renders
    out = '<|python_tag|>{"name": "get_time", "parameters": {"timezone": "UTC"}}<|eot_id|>'
    template, message = _reply("ipython_env", out)
    assert _calls(message) == [("get_time", {"timezone": "UTC"})] and not message.get("content")
    _, message = _reply("ipython_env", '{"name": "get_time", "parameters": {"timezone": "UTC"}}<|eot_id|>')
    assert _calls(message) == [("get_time", {"timezone": "UTC"})]


def test_calls_written_as_turns_of_their_own_after_the_end_of_turn():
    out = 'Let me see.<|end|>\n\nfunction call<|sep|>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}<|end|>\n\n'
    template, message = _reply("call_turn", out)
    assert message["content"] == "Let me see." and _calls(message) == [("get_time", {"timezone": "UTC"})]
    _, message = _reply("call_turn", "Hello.<|end|>\n\nuser<|sep|>\nthanks")
    assert message["content"] == "Hello." and not message.get("tool_calls")


def test_a_call_turn_the_prompt_describes_is_read_too():
    # the template writes "<|call|>{...}" inside the reply; its prompt says the `function call`
    # role writes calls: a turn of that role after the end of turn is a call as well
    inside = 'Let me see.<|call|>{"name": "get_time", "arguments": {"timezone": "UTC"}}<|end|>\n\n'
    turn = 'Let me see.<|end|>\n\nfunction call<|sep|>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}<|end|>\n\n'
    for out in (inside, turn):
        _, message = _reply("call_role_described", out)
        assert message["content"] == "Let me see." and _calls(message) == [("get_time", {"timezone": "UTC"})], out
    _, message = _reply("call_role_described", "Hello.<|end|>\n\nuser<|sep|>\nthanks")
    assert message["content"] == "Hello." and not message.get("tool_calls")


def test_json_calls_a_line_in_one_section():
    out = '<calls>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}\n{"name": "get_time", "arguments": {"timezone": "UTC"}}\n</calls><|im_end|>'
    template, message = _reply("json_lines_section", out)
    assert template["fields"]["tool_calls"]["content"] == "json"
    assert _calls(message) == [("get_weather", {"city": "Oslo", "days": 2}), ("get_time", {"timezone": "UTC"})]


def test_python_calls_a_line_in_one_section():
    out = "<calls>\nget_weather(city='Oslo', days=2)\nget_time(timezone=\"UTC\")\n</calls><|im_end|>"
    template, message = _reply("python_lines_section", out)
    assert template["fields"]["tool_calls"]["content"] == "xml-inline"
    assert _calls(message) == [("get_weather", {"city": "Oslo", "days": 2}), ("get_time", {"timezone": "UTC"})]


def test_arguments_written_with_string_are_read_as_the_json_the_model_writes():
    out = '<|action_start|><|plugin|>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}<|action_end|><|im_end|>'
    template, message = _reply("action_repr", out)
    assert template["fields"]["tool_calls"]["content"] == "json"
    assert _calls(message) == [("get_weather", {"city": "Oslo", "days": 2})]


def test_a_plain_text_before_some_contents_is_left_out_and_no_generation_prompt_anchors_on_the_last_marker():
    template, message = _reply("plain_prefix_no_gen", "Bot: Sunny.<|eos|>")
    assert template["start_anchor"] == "<|go|>"
    assert message["content"] == "Sunny."
    _, message = _reply("plain_prefix_no_gen", 'Checking.<calls>[{"name": "get_time", "arguments": {"timezone": "UTC"}}]</calls><|eos|>')
    assert message["content"] == "Checking." and _calls(message) == [("get_time", {"timezone": "UTC"})]
    _, message = _reply("plain_prefix_no_gen", "Bot: Sunny.<|eos|>", enable_thinking=False)
    assert message["content"] == "Sunny." and not message.get("reasoning_content")


def test_phrases_the_template_text_names_delimit_reasoning_and_response():
    for out in ("Here is my reasoning:\nIt is spring.\nHere is my answer:\nMild.<|im_end|>", "Here's my reasoning:\nIt is spring.\nHere's my answer:\nMild.<|im_end|>"):
        _, message = _reply("thought_phrases", out)
        assert message.get("reasoning_content", "").strip() == "It is spring." and message["content"].strip() == "Mild.", out


def test_a_marker_written_after_the_calls_section_may_be_left_out():
    out = '<calls><call>get_time<sep>{"timezone": "UTC"}</call></calls>'
    _, message = _reply("section_then_stop", out)
    assert _calls(message) == [("get_time", {"timezone": "UTC"})] and not message.get("content")
    _, message = _reply("section_then_stop", out + "<|stop|>")
    assert _calls(message) == [("get_time", {"timezone": "UTC"})] and not message.get("content")


def test_a_marker_that_opens_every_block_is_not_a_second_turn():
    out = "<|open|>think<|sep|>Look it up.<|close|><|open|>text<|sep|>Checking.<|end|>"
    _, message = _reply("shared_open", out)
    assert message["reasoning_content"] == "Look it up." and message["content"] == "Checking."


def test_a_name_written_twice_is_read_for_any_function():
    out = '<call to=get_time><invoke name="get_time"><arg name="timezone">UTC</arg></invoke></call><|im_end|>'
    _, message = _reply("name_twice", out)
    assert _calls(message) == [("get_time", {"timezone": "UTC"})]


def test_stop_markers_after_the_turn_close_may_be_left_out():
    for out in ("Sunny.<|im_end|>", "Sunny.<|im_end|><|endofturn|>"):
        _, message = _reply("stop_after_turn_close", out)
        assert message["content"] == "Sunny.", out
    _, message = _reply("stop_after_turn_close", '<calls>[{"name": "get_time", "arguments": {"timezone": "UTC"}}]<|im_end|>')
    assert _calls(message) == [("get_time", {"timezone": "UTC"})] and not message.get("content")


def test_reasoning_rendered_only_from_content_blocks():
    result = infer_report(C.BLOCK_REASONING)
    assert any("blocks of type 'thinking'" in line for line in result.lines)
    _, message = _reply("block_reasoning", "<reason>Look it up.</reason>It is mild.<|im_end|>")
    assert message["reasoning_content"] == "Look it up." and message["content"] == "It is mild."


def test_a_call_list_the_reply_ends_with_closes_its_section():
    _, message = _reply("keyed_list", '<calls>[{"get_time": {}}]')
    assert _calls(message) == [("get_time", {})] and not message.get("content")


def test_tools_given_as_the_xml_tools_kwarg_the_template_reads():
    out = '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}\n</tool_call><|im_end|>'
    template, message = _reply("xml_tools_kwarg", out)
    assert _calls(message) == [("get_time", {"timezone": "UTC"})]


def test_tags_of_a_marker_a_name_and_a_separator_are_read_whole():
    template, message = _reply("compound_tags", "Look it up.<|c|>think<|s|><|o|>answer<|s|>Sunny.<|c|>answer<|s|><|c|>msg<|s|>")
    assert template["start_anchor"] == '<|o|>msg role="assistant"<|s|>'
    assert message["reasoning_content"] == "Look it up." and message["content"] == "Sunny."
    out = (
        'Two calls.<|c|>think<|s|><|o|>answer<|s|><|c|>answer<|s|><|o|>calls<|s|><|o|>call fn="get_time" n="1"<|s|>'
        '<|o|>arg key="timezone"<|s|>UTC<|c|>arg<|s|><|c|>call<|s|><|o|>call fn="set_alarm" n="2"<|s|><|o|>arg key="hour"<|s|>7'
        '<|c|>arg<|s|><|o|>arg key="label"<|s|>up<|c|>arg<|s|><|c|>call<|s|><|c|>calls<|s|><|c|>msg<|s|><|eom|>'
    )
    _, message = _reply("compound_tags", out)
    assert _calls(message) == [("get_time", {"timezone": "UTC"}), ("set_alarm", {"hour": 7, "label": "up"})]
    assert not message.get("content")


def test_python_values_the_template_writes_bare_are_read_as_the_model_quotes_them():
    result = infer_report(C.BARE_VALUES)
    assert any("unquoted" in line for line in result.lines)
    _, message = _reply("bare_values", '[get_time(timezone="UTC"), set_alarm(hour=7, label="wake up")]<|eot|>')
    assert _calls(message) == [("get_time", {"timezone": "UTC"}), ("set_alarm", {"hour": 7, "label": "wake up"})]


def test_a_suffix_formatted_into_every_special_token_is_optional():
    call = '{"name": "get_time", "arguments": {"timezone": "UTC"}}'
    template = respc.infer(C.SUFFIXED_TOKENS)
    compiled = respc.compile_template(template)
    for tk in (":v2", ""):
        out = f"Checking.<call{tk}>{call}</call{tk}><eot{tk}>"
        message = compiled.parse(out, prefix=f"<user{tk}>hi<eot{tk}><bot{tk}>", tools=probes.TOOLS)
        assert message["content"] == "Checking." and _calls(message) == [("get_time", {"timezone": "UTC"})], tk


def test_a_semicolon_separates_bare_json_calls_where_the_template_renders_no_two():
    out = '{"name": "get_time", "parameters": {"timezone": "UTC"}}; {"name": "set_alarm", "parameters": {"hour": 7, "label": "up"}}<|eot|>'
    _, message = _reply("bare_json_tagged_branch", out)
    assert _calls(message) == [("get_time", {"timezone": "UTC"}), ("set_alarm", {"hour": 7, "label": "up"})]
    assert not message.get("content")


def test_content_ends_where_the_next_message_of_the_reply_starts():
    out = (
        ' to=self<|msg|>Look it up.<|eom|><|start|>assistant to=user<|msg|>Checking.<|eom|>'
        '<|start|>assistant to=get_time<|msg|><invoke name="get_time">\n<p name="timezone">UTC</p>\n</invoke><|eot|>'
    )
    _, message = _reply("channel_messages", out)
    assert message["reasoning_content"] == "Look it up." and message["content"] == "Checking."
    assert _calls(message) == [("get_time", {"timezone": "UTC"})]


def test_a_turn_of_another_role_after_the_reply_is_not_the_models():
    template, message = _reply("instructions_last", "Sunny.<|END|>")
    assert "Answer briefly" not in json.dumps(template)
    assert message["content"] == "Sunny."


@pytest.mark.parametrize("kind", ["chatml_json", "tagged_xml", "json_list_ids", "preopen_think"])
def test_a_reply_cut_by_its_end_token_parses_as_the_cut_reply(kind):
    """An inferred template ends the reasoning and a call the model cut with its end-of-turn
    token right before the token (docs/models.md, "A reply cut off by its end-of-turn
    token"): the reply cut inside its reasoning or its call, then the end token (and a
    newline, and the next turn), parses as the cut reply alone does."""
    chat = ChatTemplate(C.ALL[kind], bos_token="<s>", eos_token="</s>")
    compiled = respc.compile_template(respc.infer(chat))
    history = [probes.USER]
    prompt = chat.render(history, tools=probes.TOOLS, add_generation_prompt=True)
    answer = chat.render(history + [{"role": "assistant", "content": probes.ANSWER}], tools=probes.TOOLS)
    end = answer[len(prompt):].split(probes.ANSWER, 1)[1].strip()
    assert end, f"{kind}: no end-of-turn marker after the content"
    message = {"role": "assistant", "reasoning_content": probes.REASONING, "content": "", "tool_calls": [probes.WEATHER]}
    output = chat.render(history + [message], tools=probes.TOOLS)[len(prompt):]
    # inside the reasoning (where the template writes it) and inside the call's city
    cuts = [output.index(text) + k for text, k in ((probes.REASONING, 20), ("Paris", 2)) if text in output]
    assert cuts, output
    for at in cuts:
        cut = output[:at]
        want = compiled.parse(cut, prefix=prompt, tools=probes.TOOLS, on_malformed="collect")
        for after in ("", "\n", "\nuser turn"):
            got = compiled.parse(cut + end + after, prefix=prompt, tools=probes.TOOLS, on_malformed="collect")
            assert got == want, (kind, cut[-30:], end + after)
