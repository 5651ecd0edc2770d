"""respc.detect, respc.for_model and `respc detect` on chat templates written for these tests."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import chat_templates as C  # noqa: E402

import respc  # noqa: E402
from respc.chat import probes  # noqa: E402
from respc.chat.detect import detect_report  # noqa: E402
from respc.chat.render import ChatTemplate, ChatTemplateError  # noqa: E402
from respc.cli import main  # noqa: E402


def test_render_like_transformers():
    chat = ChatTemplate(
        "{{ bos_token }}{{ messages[0].content | tojson }}{% generation %}[{{ strftime_now('%Y') }}]{% endgeneration %}"
        "{% for x in [1, 2, 3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}"
        "{{ messages[0].thinking }}",
        bos_token="<s>",
    )
    text = chat.render([{"role": "user", "content": "Zürich", "reasoning_content": "r"}])
    assert text.startswith('<s>"Zürich"[20') and text.endswith("]1r")  # ensure_ascii=False, loop controls, aliasing


def test_render_that_raises_is_none():
    chat = ChatTemplate(C.RAISES_ON_TOOLS)
    assert chat.render([probes.USER], tools=probes.TOOLS) is None
    assert "does not support tools" in chat.last_error
    assert chat.render([probes.USER]) is not None


def test_bad_jinja_names_the_line():
    with pytest.raises(ChatTemplateError, match="line 1"):
        ChatTemplate("{% for %}")


def test_chatml_json_calls_detects_a_family_that_round_trips():
    family = respc.detect(C.CHATML_JSON)
    assert family is not None
    chat = ChatTemplate(C.CHATML_JSON)
    item = probes.render_probe(chat, probes.base_probes()[5])  # two calls
    parsed = respc.load(family).parse(item.output, prefix=item.prefix, tools=probes.TOOLS)
    assert [c["function"]["name"] for c in parsed["tool_calls"]] == ["get_weather", "get_time"]


def test_a_reply_ended_by_the_eos_token_detects_like_one_ended_by_the_turn_marker():
    # the model stops at its eos token (an engine strips it): the family reads the turn up to it
    want = respc.detect(C.CHATML_JSON, eos_token="</s>")
    assert want is not None
    assert respc.detect(C.CHATML_JSON_EOS_LAST, eos_token="</s>") == want


def test_tagged_xml_parameters_detect_a_tagged_family():
    family = respc.detect(C.TAGGED_XML)
    assert family is not None
    assert respc.load(family).template["fields"]["tool_calls"]["content"] == "xml-inline"


def test_no_family_fits_says_why():
    result = detect_report(C.PYTHONIC)
    assert result.family is None
    assert "no bundled" in result.explain()


def test_template_that_raises_on_tools_skips_those_probes():
    result = detect_report(C.RAISES_ON_TOOLS)
    assert "the prompt raises" in result.skipped["call"]
    assert "answer_no_tools" in result.probes


def test_plain_chatml_is_content_only():
    # every ChatML family parses a content-only reply, and the template shows no reasoning, no
    # calls and no family's own prompt: naming one would be a guess
    result = detect_report(C.NO_TOOLS)
    assert len(result.fitting) > 1 and result.family is None and result.content_only
    assert "content-only" in result.explain()
    # a template that shows reasoning is not content only (its format tells the families apart)
    shown = detect_report(C.PREOPEN_THINK)
    assert shown.family is not None and not shown.content_only


def test_for_model_infers_a_content_only_template_for_plain_chatml(tmp_path):
    (tmp_path / "chat_template.jinja").write_text(C.NO_TOOLS)
    report = []
    compiled = respc.for_model(str(tmp_path), report=report)
    assert "inferred" in report[0]
    assert set(compiled.template["fields"]) == {"content"}
    assert compiled.parse("The answer.<|im_end|>", prefix="<|im_start|>assistant\n")["content"] == "The answer."


def test_text_the_template_writes_before_the_content_is_not_the_models():
    assert detect_report(C.PREFIXED_CONTENT).family == detect_report(C.CHATML_JSON).family


def test_arguments_written_as_a_python_dict_are_the_json_the_model_writes():
    result = detect_report(C.ACTION_REPR)
    assert result.family == "internlm2", result.explain()
    assert "internlm2" not in result.failures


def test_calls_rendered_after_content_are_excused_for_a_call_list_family():
    # the family reads the calls written alone; the render's content + call list is excused
    result = detect_report(C.HEADER_PYTHONIC)
    assert result.family == "llama4", result.explain()
    assert [p for p, _ in result.failures["llama4"]] == ["content_call"]
    assert result.failures["llama4"][0][1].startswith("excused")


def test_excuse_needs_the_failure_to_be_in_the_calls():
    # the action template with reasoning the family cannot read: the reasoning + call probe
    # fails outside its calls, so nothing is excused and nothing fits
    with_reasoning = C.ACTION_REPR.replace(
        "{{- '<|im_start|>assistant\\n' + (m.content or '') }}",
        "{{- '<|im_start|>assistant\\n' + ('<think>' + m.reasoning_content + '</think>' if m.reasoning_content else '') + (m.content or '') }}",
    )
    assert with_reasoning != C.ACTION_REPR
    assert respc.detect(with_reasoning) is None


def test_parsers_load_only_for_families_whose_anchor_occurs():
    from respc.chat.detect import _compiled

    _compiled.cache_clear()
    assert respc.detect(C.HEADER_PYTHONIC) == "llama4"
    assert _compiled.cache_info().currsize <= 3  # not the 61 bundled families


def test_parsers_do_not_load_for_families_whose_call_open_the_calls_never_match(monkeypatch):
    # ChatML with JSON inside <tool_call>: the families writing <tool_call>\n<function=...> share the
    # anchor and the marker, but their open pattern matches no rendered call (and their own prompt
    # is not this one), so they fail without their parser
    from respc.chat import detect as D

    loaded = []
    real = D._compiled
    monkeypatch.setattr(D, "_compiled", lambda name: loaded.append(name) or real(name))
    source = C.CHATML_JSON + " "  # a template not seen before in this process
    result = detect_report(source)
    assert result.family is not None and "qwen3-coder" not in loaded and "mimo" not in loaded
    # (qwen3-coder's open needs only <function=, which no rendered call holds: the cheaper
    # pre-filter drops it before this report)
    assert result.failures["qwen3.5"][0][1] == D._NO_CALL_OPEN


def test_a_second_detect_of_a_template_parses_nothing_again(monkeypatch):
    from respc.chat import detect as D

    source = C.TAGGED_XML + " "
    first = detect_report(source)
    monkeypatch.setattr(D, "parses_all", lambda *a, **k: pytest.fail("parsed again"))
    again = detect_report(source)
    assert again == first and again is not first
    again.fitting.append("changed")  # a copy: the next caller gets the report unchanged
    assert detect_report(source) == first


def test_for_model_prefers_the_shipped_response_template(tmp_path):
    template = {"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"content": "text"}}}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": C.CHATML_JSON, "response_template": template}))
    assert respc.for_model(str(tmp_path)).template == template


def test_for_model_detects_from_chat_template_jinja(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": {"content": "<|im_end|>"}}))
    (tmp_path / "chat_template.jinja").write_text(C.CHATML_JSON)
    report = []
    compiled = respc.for_model(str(tmp_path), report=report)
    assert compiled.name == respc.detect(C.CHATML_JSON)
    assert "detected" in report[0]


def test_for_model_reads_a_tokenizer_object():
    class Tok:
        chat_template = C.CHATML_JSON
        bos_token, eos_token = None, "<|im_end|>"

    assert respc.for_model(Tok()).name == respc.detect(C.CHATML_JSON)


def test_cli_detect(tmp_path, capsys):
    path = tmp_path / "t.jinja"
    path.write_text(C.CHATML_JSON)
    assert main(["detect", str(path)]) == 0
    assert capsys.readouterr().out.strip() == respc.detect(C.CHATML_JSON)
    path.write_text(C.PYTHONIC)
    assert main(["detect", str(path)]) == 1
    assert "no bundled family fits" in capsys.readouterr().err
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": C.CHATML_JSON}))
    assert main(["detect", str(config)]) == 0
    assert main(["detect", str(tmp_path / "missing.jinja")]) == 2
    path.write_text(C.NO_TOOLS)
    assert main(["detect", str(path)]) == 1
    assert "content-only" in capsys.readouterr().err


_CONTENT = "{%- if m.content %}{{- m.content }}{%- endif %}"
_FIRST_NL = "{%- if loop.first and m.content %}{{- '\\n' }}{%- endif %}"
# content next to calls written as a second assistant turn after the calls
TWO_TURNS = C.CHATML_JSON.replace(_CONTENT, "{%- if m.content and not m.tool_calls %}{{- m.content }}{%- endif %}").replace(_FIRST_NL, "").replace(
    "{%- endfor %}\n{{- '<|im_end|>\\n' }}\n{%- elif",
    "{%- endfor %}\n{%- if m.content and m.tool_calls %}{{- '<|im_end|>\\n<|im_start|>assistant\\n' + m.content }}{%- endif %}\n{{- '<|im_end|>\\n' }}\n{%- elif",
)
# content next to calls rendered as reasoning (as gpt-oss's analysis channel)
CONTENT_AS_REASONING = C.CHATML_JSON.replace(
    _CONTENT,
    "{%- if m.content and m.tool_calls %}{{- '<think>\\n' + m.content + '\\n</think>\\n\\n' }}{%- elif m.content %}{{- m.content }}{%- endif %}",
).replace(_FIRST_NL, "")


def test_content_after_calls_as_a_second_turn_still_detects():
    chat = ChatTemplate(TWO_TURNS)
    item = probes.render_probe(chat, next(p for p in probes.base_probes() if p.name == "content_call"))
    assert item.first_turn is not None and "Let me check." not in item.first_turn.output
    assert respc.detect(TWO_TURNS) is not None


def test_content_rendered_as_reasoning_next_to_calls_does_not_veto():
    family = respc.detect(CONTENT_AS_REASONING)
    assert family is not None
    assert "reasoning_content" in respc.load(family).template["fields"]


def test_shared_close_is_read_after():
    # the prompt pre-closes an empty block; the history writes its close again
    source = C.CHATML_JSON.replace(
        "{{- '<|im_start|>assistant\\n' }}{%- endif %}", "{{- '<|im_start|>assistant\\n<think></think>' }}{%- endif %}"
    ).replace("{{- '<|im_start|>assistant\\n' }}\n", "{{- '<|im_start|>assistant\\n</think>' }}\n", 1)
    item = probes.render_probe(ChatTemplate(source), probes.base_probes()[0])
    assert item.output.startswith("The capital") and "</think>" in item.note


def test_functions_and_datetime_kwargs_where_the_template_reads_them():
    chat = ChatTemplate("{{ functions }}|{{ datetime }}")
    text = chat.render([probes.USER], tools=probes.TOOLS)
    functions, when = text.split("|")
    assert [f["name"] for f in json.loads(functions)] == ["get_weather", "get_time", "set_alarm"]
    assert when[:2] == "20"
    assert ChatTemplate("{{ tools | length }}").render([probes.USER], tools=probes.TOOLS) == "3"


# a template written here whose prompt is the lfm2 family's (its sample prompts) and whose calls
# are JSON inside the family's markers, where the family writes Python calls
JSON_INSIDE_PYTHON_MARKERS = """{{- bos_token }}
{%- if tools %}{{- '<|im_start|>system\\nList of tools: <|tool_list_start|>' + tools | tojson + '<|tool_list_end|><|im_end|>\\n' }}{%- endif %}
{%- for m in messages %}
{{- '<|im_start|>' + m.role + '\\n' }}
{%- for tc in m.tool_calls or [] %}{%- if loop.first %}{{- '<|tool_call_start|>[' }}{%- else %}{{- ', ' }}{%- endif %}
{{- {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson }}{%- if loop.last %}{{- ']<|tool_call_end|>' }}{%- endif %}
{%- endfor %}
{{- (m.content or '') + '<|im_end|>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"""


def test_own_prompt_with_another_call_body_fits_its_family():
    result = detect_report(JSON_INSIDE_PYTHON_MARKERS, bos_token="<|startoftext|>")
    assert result.family == "lfm2", result.explain()
    assert all(why.startswith("excused") for _, why in result.failures["lfm2"])
    # without the family's prompt, the same calls fit no family
    other = JSON_INSIDE_PYTHON_MARKERS.replace("List of tools: ", "Tools:\\n").replace("tools | tojson", "tools | tojson(indent=2)")
    assert respc.detect(other, bos_token="<|startoftext|>") is None


def _inst(call_id: bool, system: str = "") -> str:
    """A Mistral-like template written here: [INST]...[/INST], calls as [TOOL_CALLS]name[ARGS]{...}."""
    cid = "{{- '[CALL_ID]' + tc.id }}" if call_id else ""
    return (
        "{{- bos_token }}"
        + (f"{{{{- '[SYSTEM_PROMPT]{system}[/SYSTEM_PROMPT]' }}}}" if system else "")
        + "{%- for m in messages %}"
        "{%- if m.role == 'user' %}{{- '[INST]' + m.content + '[/INST]' }}"
        "{%- elif m.role == 'tool' %}{{- '[TOOL_RESULTS]' + m.content + '[/TOOL_RESULTS]' }}"
        "{%- else %}{{- m.content or '' }}"
        "{%- for tc in m.tool_calls or [] %}{{- '[TOOL_CALLS]' + tc.function.name }}" + cid + "{{- '[ARGS]' + tc.function.arguments | tojson }}{%- endfor %}"
        "{{- eos_token }}{%- endif %}{%- endfor %}"
    )


def test_rendered_ids_prefer_the_family_that_reads_them():
    with_ids = detect_report(_inst(True), bos_token="<s>", eos_token="</s>")
    assert "mistral-small-3.2" in with_ids.fitting and len(with_ids.fitting) > 1
    assert with_ids.family == "mistral-small-3.2"
    from respc.chat.detect import _ids_given_back, render_all

    rendered, _ = render_all(ChatTemplate(_inst(True), bos_token="<s>", eos_token="</s>"))
    assert _ids_given_back(respc.load("mistral-small-3.2"), rendered) > _ids_given_back(respc.load("devstral-small"), rendered) == 0


def test_reasoning_marker_in_the_prompt_counts_as_shown():
    source = _inst(False, system="Think first, inside [THINK]your thoughts[/THINK], then answer.")
    assert respc.detect(source, bos_token="<s>", eos_token="</s>") == "ministral-3-reasoning"
    assert respc.detect(_inst(False), bos_token="<s>", eos_token="</s>") != "ministral-3-reasoning"


def test_a_prompt_that_pre_opens_a_pattern_opened_block_leaves_reasoning_open():
    # mimo opens its reasoning with a pattern (``\s*<think>``), matched only once text follows it
    from respc.chat.detect import _opens_reasoning

    mimo = respc.load("mimo")
    assert _opens_reasoning(mimo, "<|im_start|>user\nhi<|im_end|><|im_start|>assistant\n<think>")
    assert not _opens_reasoning(mimo, "<|im_start|>user\nhi<|im_end|><|im_start|>assistant\n")


# tagged calls, ChatML turns without a newline after <|im_end|>, a prompt that pre-opens <think>
# and a history that writes <think> only where the message has reasoning (written here)
PREOPEN_TAGGED = """{%- if tools %}{{- '<|im_start|>system\\nTools: ' + tools | tojson + '<|im_end|>' }}{%- endif %}
{%- for m in messages %}
{%- if m.role == 'assistant' %}
{{- '<|im_start|>assistant\\n' }}{%- if m.reasoning_content %}{{- '<think>' + m.reasoning_content + '</think>' }}{%- endif %}
{{- m.content or '' }}
{%- for tc in m.tool_calls or [] %}{{- '<tool_call>\\n<function=' + tc.function.name + '>\\n' }}
{%- for k, v in tc.function.arguments.items() %}{{- '<parameter=' + k + '>' + (v | string) + '</parameter>\\n' }}{%- endfor %}
{{- '</function>\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>' }}
{%- elif m.role == 'tool' %}{{- '<|im_start|>tool\\n<tool_response>\\n' + m.content + '\\n</tool_response>\\n<|im_end|>' }}
{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' }}{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>' }}{%- endif %}"""


def test_pre_opened_think_with_a_history_that_drops_it_fits_the_pattern_opened_family():
    result = detect_report(PREOPEN_TAGGED)
    assert "mimo" in result.fitting, result.failures.get("mimo")
