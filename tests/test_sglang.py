"""respc inside SGLang (respc/integrations/sglang.py), through SGLang's own parser layer.

For every bundled family and each of its samples, the output goes through SGLang's
``ReasoningParser`` and ``FunctionCallParser`` with the ``respc`` detectors, driven as SGLang's
OpenAI chat server drives them (tests/sglang_driver.py): a tokenizer built here with the
``tokenizers`` library (the format's markers as special tokens) cuts the output into tokens,
detokenized with special tokens kept; one token per delta, four tokens per delta
(speculative decoding), and the non-streaming parse. The streamed deltas are accumulated by
the ``openai`` package's own ``ChatCompletionStreamState``; the message must be respc's own
(``respc.openai.DeltaParser``'s), ids aside (SGLang makes its own).

SGLang's parser layer installs without a GPU: ``pip install --no-deps -r
tests/requirements-sglang.txt``; without it this module skips.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from optional import needs

needs("openai", "tokenizers")

import sglang_driver as driver  # noqa: E402

_WHY = driver.import_sglang()
if _WHY is not None:
    pytest.skip(_WHY, allow_module_level=True)

import respc  # noqa: E402
from respc.integrations import sglang as plugin  # noqa: E402
from respc.openai import DeltaParser, to_message  # noqa: E402

plugin.register()

SAMPLES = Path(__file__).resolve().parent.parent / "templates" / "samples"
FAMILIES = sorted(path.stem for path in SAMPLES.glob("*.json"))
QUICK = ["qwen3", "gpt-oss", "kimi-k2", "qwen3-coder", "deepseek-r1"]

#: what is one special token in the tokenizers built here
_MARKER = re.compile(r"<\|[^<>|\s]{1,40}\|>|<｜[^<>｜]{1,40}｜>|</?[A-Za-z_][\w:.-]{0,30}>|\[[A-Z_]{2,30}\]")


class _Tokenizer:
    """A small tokenizer for one family, with its template as ``response_template`` (what
    SGLang's tokenizer carries from tokenizer_config.json)."""

    def __init__(self, texts: list[str], template: dict):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        specials = sorted({m for text in texts for m in _MARKER.findall(text)})
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(texts, trainer)
        self._tok = tok
        self.response_template = template

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: list[int], skip_special_tokens: bool = False, **_: object) -> str:
        return self._tok.decode(ids, skip_special_tokens=skip_special_tokens)


def _load(name: str) -> tuple[dict, dict]:
    samples = json.loads((SAMPLES / f"{name}.json").read_text(encoding="utf-8"))
    return respc.load(name).template, samples


def _deltas(tokenizer: _Tokenizer, output: str, per: int) -> list[str]:
    """The text deltas of the output detokenized ``per`` tokens at a time, special tokens
    kept, as the server sends them (a delta waits while it ends in half a character)."""
    ids = tokenizer.encode(output)
    assert tokenizer.decode(ids) == output, "the test tokenizer must round-trip the sample"
    deltas, sent = [], ""
    for end in list(range(per, len(ids), per)) + [len(ids)]:
        text = tokenizer.decode(ids[:end])
        if end < len(ids) and text.endswith("\ufffd"):
            continue
        deltas.append(text[len(sent):])
        sent = text
    return deltas


def _accumulate(deltas: list[dict]) -> dict:
    """The message the openai package's stream state builds from the server's deltas."""
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state = ChatCompletionStreamState()
    for k, delta in enumerate(deltas):
        delta = {key: value for key, value in delta.items() if value is not None}
        if "tool_calls" in delta:
            delta["tool_calls"] = [{k2: v2 for k2, v2 in call.items() if v2 is not None} for call in delta["tool_calls"]]
            for call in delta["tool_calls"]:
                call["function"] = {k2: v2 for k2, v2 in call["function"].items() if v2 is not None}
        state.handle_chunk(ChatCompletionChunk.model_validate({
            "id": "chatcmpl-sglang", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": "stop" if k == len(deltas) - 1 else None}],
        }))
    message = state.get_final_completion().choices[0].message
    got = {"role": message.role, "content": message.content}
    reasoning = (message.model_extra or {}).get("reasoning_content")
    if reasoning is not None:
        got["reasoning_content"] = reasoning
    if message.tool_calls:
        got["tool_calls"] = [
            {"id": call.id, "type": call.type, "function": {"name": call.function.name, "arguments": call.function.arguments}}
            for call in message.tool_calls
        ]
    return got


def _plain(message: dict) -> dict:
    """A message without ids, empty strings as none."""
    out = {"role": message.get("role", "assistant"), "content": message.get("content") or None}
    if message.get("reasoning_content"):
        out["reasoning_content"] = message["reasoning_content"]
    calls = [
        {"name": call["function"]["name"], "arguments": call["function"]["arguments"]}
        for call in message.get("tool_calls") or ()
    ]
    if calls:
        out["tool_calls"] = calls
    return out


def _respc_message(template: dict, prefix: str, output: str, tools: list | None) -> dict:
    """respc's own message of a whole output (a region that does not parse left out)."""
    message, _ = respc.compile_template(template).parse(output, prefix=prefix, tools=copy.deepcopy(tools),
                                                        on_malformed="collect")
    return to_message(message)


def _respc_stream(template: dict, prefix: str, output: str, tools: list | None) -> dict:
    """What respc's own deltas add up to (the same message but where a stream cannot take
    back what it sent: a call cut short; docs/openai.md)."""
    parser = DeltaParser(template, prefix=prefix, tools=copy.deepcopy(tools), on_malformed="event")
    deltas = parser.feed(output)
    deltas += parser.finish()[0]
    return _accumulate([{"role": "assistant", "content": ""}] + deltas[1:])


def _check_family(name: str) -> int:
    """Every sample of ``name`` through SGLang's stream (1 and 4 tokens per delta) and
    non-stream paths; the number of outputs checked."""
    template, samples = _load(name)
    texts = [case["prefix"] + case["output"] for case in samples["cases"]] + list(samples.get("end_tokens", []))
    tokenizer = _Tokenizer(texts, template)
    checked = 0
    for case in samples["cases"]:
        tools = samples.get("tools") if case.get("tools", True) else None
        prefix, output = case["prefix"], case["output"]
        expected = _plain(_respc_stream(template, prefix, output, tools))
        where = f"{name}/{case['name']}"
        for per in (1, 4):
            deltas = driver.stream(_deltas(tokenizer, output, per), tokenizer=tokenizer, prefix=prefix,
                                   tools=copy.deepcopy(tools))
            assert _plain(_accumulate(deltas)) == expected, f"{where}: {per} token(s) per delta"
            checked += 1
        got = driver.whole(output, tokenizer=tokenizer, prefix=prefix, tools=copy.deepcopy(tools))
        assert _plain(got) == _plain(_respc_message(template, prefix, output, tools)), f"{where}: non-streaming"
        checked += 1
    return checked


@pytest.fixture
def forward_unknown(monkeypatch):
    """Calls to undeclared tools kept (SGLANG_FORWARD_UNKNOWN_TOOLS), as respc's message
    keeps them: some samples call one (a cut call, Command R+'s directly-answer)."""
    monkeypatch.setenv("SGLANG_FORWARD_UNKNOWN_TOOLS", "1")


@pytest.mark.parametrize("name", QUICK)
def test_family_through_sglang(name, forward_unknown):
    assert _check_family(name) > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in FAMILIES if name not in QUICK])
def test_every_family_through_sglang(name, forward_unknown):
    assert _check_family(name) > 0


@pytest.mark.parametrize("per", [1, 4])
def test_calls_to_undeclared_tools_dropped_as_sglang_drops_them(monkeypatch, per):
    """Without SGLANG_FORWARD_UNKNOWN_TOOLS, SGLang's detectors drop a call to a tool the
    request does not declare: so does respc's (streamed and not), and the next call takes
    its index; with no tools declared every call is kept."""
    monkeypatch.delenv("SGLANG_FORWARD_UNKNOWN_TOOLS", raising=False)
    template, samples = _load("qwen3")
    prefix = next(c for c in samples["cases"] if c["name"] == "content_before_call")["prefix"]
    output = (
        'Two calls.\n<tool_call>\n{"name": "launch", "arguments": {"x": 1}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
    )
    tokenizer = _Tokenizer([prefix + output], template)
    tools = samples["tools"]
    assert "launch" not in {tool["function"]["name"] for tool in tools}
    deltas = driver.stream(_deltas(tokenizer, output, per), tokenizer=tokenizer, prefix=prefix,
                           tools=copy.deepcopy(tools))
    got = _plain(_accumulate(deltas))
    whole = _plain(driver.whole(output, tokenizer=tokenizer, prefix=prefix, tools=copy.deepcopy(tools)))
    for message in (got, whole):
        assert message["tool_calls"] == [{"name": "get_weather", "arguments": '{"location": "Paris"}'}]
        assert message["content"] == "Two calls."
    assert all(call["index"] == 0 for delta in deltas for call in delta.get("tool_calls", ()))
    kept = _plain(_accumulate(driver.stream(_deltas(tokenizer, output, per), tokenizer=tokenizer, prefix=prefix,
                                            tools=None)))
    assert [call["name"] for call in kept["tool_calls"]] == ["launch", "get_weather"]


def test_registered_in_both_tables():
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    reasoning, tool = plugin.detectors()
    plugin.register()  # again: the same classes
    assert FunctionCallParser.ToolCallParserEnum["respc"] is tool
    assert ReasoningParser.DetectorMap["respc"] is reasoning


def test_the_pair_parses_each_output_once(monkeypatch):
    """The tool detector takes the calls the reasoning detector read: one parser per output."""
    template, samples = _load("qwen3")
    case = next(c for c in samples["cases"] if c["name"] == "content_before_call")
    tokenizer = _Tokenizer([case["prefix"] + case["output"]], template)
    made = []

    class Counting(plugin.DeltaParser):
        __slots__ = ()

        def __init__(self, *args, **kwargs):
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(plugin, "DeltaParser", Counting)
    deltas = driver.stream(_deltas(tokenizer, case["output"], 1), tokenizer=tokenizer, prefix=case["prefix"],
                           tools=samples["tools"])
    assert len(made) == 1
    assert _plain(_accumulate(deltas)) == _plain(_respc_message(template, case["prefix"], case["output"], samples["tools"]))


def test_tool_parser_alone_parses_the_raw_output():
    """Without a reasoning parser (or with separate_reasoning off) the tool detector reads
    the raw output itself; the reasoning stays text, without its delimiters."""
    template, samples = _load("qwen3")
    case = next(c for c in samples["cases"] if c["name"] == "content_before_call")
    tokenizer = _Tokenizer([case["prefix"] + case["output"]], template)
    expected = _plain(_respc_message(template, case["prefix"], case["output"], samples["tools"]))
    deltas = driver.stream(_deltas(tokenizer, case["output"], 4), tokenizer=tokenizer, prefix=case["prefix"],
                           tools=samples["tools"], reasoning_parser=None)
    got = _plain(_accumulate(deltas))
    assert got["tool_calls"] == expected["tool_calls"]
    assert got["content"] == expected["reasoning_content"] + expected["content"]


def test_template_from_the_environment_and_the_error(monkeypatch):
    class Bare:
        init_kwargs: dict = {}

    monkeypatch.setenv(plugin.ENV, "gpt-oss")
    assert plugin.choose_template(Bare()).hash == respc.load("gpt-oss").hash
    monkeypatch.delenv(plugin.ENV)
    monkeypatch.delattr(respc, "for_model", raising=False)
    with pytest.raises(plugin.TemplateNotChosen, match=plugin.ENV):
        plugin.choose_template(Bare())
    with_kwargs = Bare()
    with_kwargs.init_kwargs = {"response_template": "kimi-k2"}
    assert plugin.choose_template(with_kwargs).hash == respc.load("kimi-k2").hash


def test_stop_token_closer_and_structure_info():
    reasoning, tool = plugin.detectors()
    detector = tool(tokenizer=type("T", (), {"response_template": respc.load("qwen3").template})())
    assert detector.open_call_closer('<tool_call>\n{"name": "f", "arguments": {}}\n') == "</tool_call>"
    assert detector.open_call_closer("done") is None
    info = detector.structure_info()("f")
    assert info.begin.strip() == "<tool_call>" and info.end.startswith("</tool_call>")


class _StopTokenizer(_Tokenizer):
    """The test tokenizer with the model's stop tokens: ``eos_token`` and the ids of
    generation_config.json's ``eos_token_id`` in its folder (``name_or_path``)."""

    def __init__(self, texts: list[str], template: dict, folder: Path, stops: list[str]):
        super().__init__(texts, template)
        ids = [self._tok.token_to_id(stop) for stop in stops]
        assert None not in ids, "the stop tokens must be special tokens of the test tokenizer"
        (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": ids}), encoding="utf-8")
        self.name_or_path = str(folder)
        self.eos_token = stops[0]

    def convert_ids_to_tokens(self, i: int) -> str | None:
        return self._tok.id_to_token(i)


@pytest.mark.parametrize("choice", ["required", "named"])
def test_gpt_oss_forced_calls_end_at_the_call_stop_token(tmp_path, choice):
    """gpt-oss's call close <|call|> is a stop token: xgrammar's matcher takes a stop token
    only where the grammar may end, so the structural tag SGLang gets for required or named
    tool choice ends each call with its body (the turn ending there), as vLLM's does."""
    from sglang.srt.entrypoints.openai.protocol import ToolChoice
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    template, samples = _load("gpt-oss")
    texts = [c["prefix"] + c["output"] for c in samples["cases"]] + ["<|call|><|return|>"]
    names = [t["function"]["name"] for t in samples["tools"]]
    tool_choice = "required" if choice == "required" else ToolChoice(function={"name": names[0]})
    tags = {}
    for stops in (["<|return|>", "<|call|>"], None):
        tokenizer = _StopTokenizer(texts, template, tmp_path, stops) if stops else _Tokenizer(texts, template)
        parser = FunctionCallParser(tools=driver.tools_of(samples["tools"]), tool_call_parser="respc",
                                    tokenizer=tokenizer, tool_choice=tool_choice)
        kind, tag = parser.get_structure_constraint(tool_choice)
        assert kind == "structural_tag", (kind, tag)
        tags[bool(stops)] = tag
    ended = tags[True]["format"]["elements"][-1]
    assert ended["type"] == "triggered_tags" and ended["at_least_one"] and ended["stop_after_first"], ended
    assert ended["tags"] and [t["end"] for t in ended["tags"]] == [""] * len(ended["tags"]), ended["tags"]
    if choice == "named":
        # (the name is the tag's begin or, after the open's literal start, its content's)
        assert all(names[0] in t["begin"] + json.dumps(t["content"]) and names[1] not in t["begin"] + json.dumps(t["content"])
                   for t in ended["tags"])
    # without the stop tokens known (a tokenizer without them): the template's own close
    assert all("<|call|>" in (t["end"] if isinstance(t["end"], list) else [t["end"]])
               for t in tags[False]["format"]["elements"][-1]["tags"])
    try:
        import xgrammar as xgr
    except Exception as error:  # noqa: BLE001 - xgrammar needs torch
        pytest.skip(f"xgrammar (it needs torch) is not importable: {error}")
    grammar = xgr.Grammar.from_structural_tag(json.dumps(tags[True]))
    call = ('<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant<|channel|>commentary '
            f'to=functions.{names[0]}<|message|>{{"city": "Paris"}}')
    assert xgr.testing._is_grammar_accept_string(grammar, call)  # then <|call|>, a stop token, ends it


def test_sglang_loads_the_plugin_from_its_entry_point():
    """``sglang serve`` calls ``load_plugins()`` before it reads ``--tool-call-parser``: the
    ``sglang.srt.plugins`` entry point registers both parsers (installing respc is enough)."""
    from importlib.metadata import entry_points

    if not any(ep.value == "respc.integrations.sglang:register" for ep in entry_points(group="sglang.srt.plugins")):
        pytest.skip("respc is not installed with its entry points (pip install -e .)")
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.plugins import load_plugins
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    FunctionCallParser.ToolCallParserEnum.pop("respc", None)
    ReasoningParser.DetectorMap.pop("respc", None)
    load_plugins()
    assert "respc" in FunctionCallParser.ToolCallParserEnum and "respc" in ReasoningParser.DetectorMap
    plugin.register()


def _thinking(template: dict) -> dict:
    """``template`` with its reasoning field named ``thinking`` (as some templates on the Hub
    and transformers' docs name it)."""
    out = copy.deepcopy(template)
    out["fields"] = {("thinking" if k == "reasoning_content" else k): v for k, v in out["fields"].items()}
    return out


@pytest.mark.parametrize("source", ["tokenizer", "environment"])
def test_a_reasoning_field_named_thinking_streams_as_reasoning(monkeypatch, tmp_path, source):
    template, samples = _load("qwen3")
    case = next(c for c in samples["cases"] if c["name"] == "content_before_call")
    renamed = _thinking(template)
    tokenizer = _Tokenizer([case["prefix"] + case["output"]], renamed)
    if source == "environment":  # a template file named by RESPC_TEMPLATE, the tokenizer without one
        path = tmp_path / "thinking.json"
        path.write_text(json.dumps(renamed), encoding="utf-8")
        tokenizer.response_template = None
        monkeypatch.setenv(plugin.ENV, str(path))
    expected = _plain(_respc_message(template, case["prefix"], case["output"], samples["tools"]))
    assert expected.get("reasoning_content")
    deltas = driver.stream(_deltas(tokenizer, case["output"], 4), tokenizer=tokenizer, prefix=case["prefix"],
                           tools=copy.deepcopy(samples["tools"]))
    assert _plain(_accumulate(deltas)) == expected
    got = driver.whole(case["output"], tokenizer=tokenizer, prefix=case["prefix"],
                       tools=copy.deepcopy(samples["tools"]))
    assert _plain(got) == expected


def test_a_template_that_does_not_compile_says_where_it_came_from(monkeypatch, tmp_path):
    class Bare:
        init_kwargs: dict = {}

    monkeypatch.setenv(plugin.ENV, str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match=plugin.ENV):
        plugin.choose_template(Bare())


# -- the structural tag where SGLang's chat server applies it ------------------------------
#
# SGLang 0.5.23 (serving_chat.py `_process_messages`) asks the tool parser for the tool-call
# constraint before the prompt is rendered (`get_structure_constraint`, no prefix,
# `thinking_mode=False` whenever a reasoning parser is configured) and writes it into the
# sampling parameters with `model_dump(by_alias=True)` (protocol.py `to_sampling_params`).
# The scheduler then applies it after the reasoning parser's `think_end_token` ids
# (ReasonerGrammarBackend: the grammar gets the tokens after that sequence) when the request
# reasons, or from the first token. Where the prompt leaves the output at the message start
# (`starts_message(prefix)` of a response-template reasoning detector) it asks again with
# `message_start=True, thinking_mode=require_reasoning` and applies that tag from the first
# token (`_fit_tool_call_grammar_to_prefix`). SGLang's grammar backends import triton, so
# the tests below follow them with xgrammar's matcher over the same token ids.


def _xgr():
    try:
        import xgrammar as xgr
    except Exception as error:  # noqa: BLE001 - xgrammar needs torch
        pytest.skip(f"xgrammar (it needs torch) is not importable: {error}")
    return xgr


def _matcher(tokenizer: _Tokenizer, tag_json: str):
    """xgrammar's matcher of the tag over the test tokenizer's vocabulary (markers are
    special tokens there), as SGLang's xgrammar backend compiles it."""
    from transformers import PreTrainedTokenizerFast

    xgr = _xgr()
    hf = PreTrainedTokenizerFast(tokenizer_object=tokenizer._tok)
    info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=tokenizer._tok.get_vocab_size())
    return xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_structural_tag(tag_json))


def _accepts(tokenizer: _Tokenizer, tag_json: str, text: str) -> bool:
    """Whether the tag takes ``text`` whole: each of its tokens (the markers special
    tokens), and the text as a complete output (xgrammar's string-level check)."""
    xgr = _xgr()
    matcher = _matcher(tokenizer, tag_json)
    if not all(matcher.accept_token(i) for i in tokenizer.encode(text)):
        return False
    return xgr.testing._is_grammar_accept_string(xgr.Grammar.from_structural_tag(tag_json), text)


def _sampling_tag(tokenizer: Any, tools: list[dict], choice: Any = "required", parallel: bool = True) -> str:
    """The structural tag SGLang's chat server puts in the sampling parameters: the tool
    parser's constraint as `_process_messages` asks for it (a reasoning parser configured:
    `thinking_mode=False`), through `ChatCompletionRequest.to_sampling_params`."""
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    parser = FunctionCallParser(driver.tools_of(tools), "respc", tokenizer=tokenizer)
    constraint = parser.get_structure_constraint(choice, parallel_tool_calls=parallel, thinking_mode=False)
    assert constraint is not None and constraint[0] == "structural_tag", constraint
    request = driver.request_of("", tools)
    request.tool_choice = choice
    request.parallel_tool_calls = parallel
    params = request.to_sampling_params(stop=[], model_generation_config={}, tool_call_constraint=constraint)
    return params["structural_tag"]


def _message_start_tag(tokenizer: Any, tools: list[dict], require_reasoning: bool, prefix: str = "") -> str:
    """The tag `_message_start_tool_call_constraint` asks for and `_fit_tool_call_grammar_to_prefix`
    writes (`model_dump(by_alias=True)`), applied from the first token."""
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    parser = FunctionCallParser(driver.tools_of(tools), "respc", tokenizer=tokenizer, prefix=prefix)
    tag = parser.detector.get_structural_tag(
        tools=parser.structural_tag_tools(), tool_choice="required", thinking_mode=require_reasoning,
        parallel_tool_calls=True, message_start=True,
    )
    return json.dumps(tag.model_dump(by_alias=True))


def _case(samples: dict, name: str) -> dict:
    return next(c for c in samples["cases"] if c["name"] == name)


#: one call of get_weather as each family writes it (from its samples)
_CALLS = {
    "qwen3": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>',
    "deepseek-r1": ('<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n'
                    '{"city": "Paris", "days": 3}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'),
}


def _call_text(name: str, samples: dict) -> str:
    call = _CALLS[name]
    assert any(call in c["output"] for c in samples["cases"]), "the call must be one of the samples'"
    return call


@pytest.mark.parametrize("name", QUICK)
@pytest.mark.parametrize("choice", ["required", "named", "one"])
def test_forced_calls_reach_the_sampling_parameters(name, choice):
    """SGLang writes the tool parser's structural tag with `model_dump(by_alias=True)`: the
    tag is a dict with it (a plain dict raised AttributeError there, so every required or
    named call through the chat server failed), and what is written is the tag itself."""
    from sglang.srt.entrypoints.openai.protocol import ToolChoice

    template, samples = _load(name)
    tokenizer = _Tokenizer([c["prefix"] + c["output"] for c in samples["cases"]], template)
    names = [t["function"]["name"] for t in samples["tools"]]
    tool_choice = ToolChoice(function={"name": names[0]}) if choice == "named" else "required"
    written = json.loads(_sampling_tag(tokenizer, samples["tools"], tool_choice, parallel=choice != "one"))
    compiled = respc.load(name)
    after = plugin._after_reasoning(compiled, "")
    markers = plugin._special_markers(tokenizer, compiled)
    expected = compiled.grammar(samples["tools"], format="structural_tag",
                                tool_choice=names[0] if choice == "named" else "required",
                                parallel_tool_calls=choice != "one", prefix=after, special_tokens=markers or None)
    assert written == plugin.end_calls_at_stop(expected, plugin.stop_texts(tokenizer))
    _xgr().Grammar.from_structural_tag(json.dumps(written))  # xgrammar compiles it


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in FAMILIES if name not in QUICK])
def test_every_family_forced_calls_reach_the_sampling_parameters(name):
    """The same for every other family with a tool-call field: SGLang writes the tag it gets
    for a required call (or, for a family without a structural tag, SGLang's JSON-schema
    fallback), and xgrammar compiles what is written."""
    template, samples = _load(name)
    if "tool_calls" not in template.get("fields", {}):
        pytest.skip("no tool_calls field")
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    tokenizer = _Tokenizer([c["prefix"] + c["output"] for c in samples["cases"]], template)
    parser = FunctionCallParser(driver.tools_of(samples["tools"]), "respc", tokenizer=tokenizer)
    kind, value = parser.get_structure_constraint("required", thinking_mode=False)
    request = driver.request_of("", samples["tools"])
    request.tool_choice = "required"
    params = request.to_sampling_params(stop=[], model_generation_config={}, tool_call_constraint=(kind, value))
    if kind == "json_schema":  # (no structural tag for python calls and JSON dialects)
        with pytest.raises(respc.GrammarUnsupported):
            respc.load(name).grammar(samples["tools"], format="structural_tag", tool_choice="required")
        return
    assert kind == "structural_tag"
    _xgr().Grammar.from_structural_tag(params["structural_tag"])


@pytest.mark.parametrize("name, case", [("qwen3", "reasoning_tool_call"), ("qwen3", "parallel_calls"),
                                        ("deepseek-r1", "reasoning_tool_call"), ("deepseek-r1", "parallel_calls")])
def test_the_tag_sglang_applies_after_the_reasoning_starts_there(name, case):
    """Without the message start (deepseek-r1's prompt pre-opens `<think>`; qwen3's with
    another reasoning parser), SGLang applies the tag after the reasoning parser's end
    tokens: the tag starts after the reasoning (its first element is the text before the
    calls, not the optional reasoning block it had), and the output's tokens after
    `</think>` are accepted. With `parallel_tool_calls=False`, qwen3's `<think>` with a call
    in it after the gate, then another call, is refused: its parser reads both as calls
    (a `<tool_call>` closes its reasoning), which the optional reasoning block the tag had
    first let through."""
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    template, samples = _load(name)
    sample = _case(samples, case)
    tokenizer = _Tokenizer([c["prefix"] + c["output"] for c in samples["cases"]], template)
    tag = _sampling_tag(tokenizer, samples["tools"])
    reasoner = ReasoningParser(model_type="respc" if name == "deepseek-r1" else "qwen3", stream_reasoning=False,
                               tokenizer=tokenizer)
    if name == "deepseek-r1":
        assert not reasoner.detector.starts_message(sample["prefix"])  # (so the gated tag stays)
    end = reasoner.detector.get_think_end_token_ids(tokenizer)
    ids = tokenizer.encode(sample["output"])
    at = next(i + len(end) for i in range(len(ids)) if ids[i:i + len(end)] == end)
    matcher = _matcher(tokenizer, tag)
    assert all(matcher.accept_token(i) for i in ids[at:]), tokenizer.decode(ids[at:])
    first = json.loads(tag)["format"]["elements"][0]
    assert first["type"] == "any_text", first
    one = _sampling_tag(tokenizer, samples["tools"], parallel=False)
    call = _call_text(name, samples)
    assert _accepts(tokenizer, one, "\n\n" + call)
    if name == "qwen3":
        twice = "<think>\n" + call + "\n</think>\n\n" + call
        assert not _accepts(tokenizer, one, twice)
        gated = sample["prefix"] + tokenizer.decode(ids[:at])
        assert len(respc.load(name).parse(twice, prefix=gated, tools=samples["tools"])["tool_calls"]) == 2


def test_a_thinking_off_prompt_forbids_reasoning_from_the_first_token():
    """qwen3 with thinking off: the prompt closed an empty `<think>`, SGLang's request does
    not reason (the grammar applies from the first token) and the prompt does not start the
    message (`starts_message` is false): the tag SGLang applies starts after the reasoning.
    With `parallel_tool_calls=False`, `<think>` with a call in it, then a call, is refused
    (the parser reads `<think>` as content there, and both calls); the optional reasoning
    block the tag had first took it."""
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    template, samples = _load("qwen3")
    sample = _case(samples, "thinking_off_tool_call")
    tokenizer = _Tokenizer([c["prefix"] + c["output"] for c in samples["cases"]], template)
    assert not ReasoningParser(model_type="respc", tokenizer=tokenizer).detector.starts_message(sample["prefix"])
    tag = _sampling_tag(tokenizer, samples["tools"])
    assert _accepts(tokenizer, tag, sample["output"])
    one = _sampling_tag(tokenizer, samples["tools"], parallel=False)
    call = _call_text("qwen3", samples)
    assert _accepts(tokenizer, one, sample["output"])
    twice = "<think>\n" + call + "\n</think>\n\n" + call
    assert not _accepts(tokenizer, one, twice)
    assert len(respc.load("qwen3").parse(twice, prefix=sample["prefix"], tools=samples["tools"])["tool_calls"]) == 2


@pytest.mark.parametrize("require_reasoning", [True, False])
def test_the_message_start_tag_covers_the_reasoning(require_reasoning):
    """A prompt that ends where the message starts (qwen3's generation prompt): SGLang asks
    for the tag with `message_start=True` and applies it from the first token (with the
    reasoning when the request reasons): the whole output, reasoning included, is
    accepted, and so is a call without reasoning."""
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    template, samples = _load("qwen3")
    sample = _case(samples, "reasoning_tool_call")
    tokenizer = _Tokenizer([c["prefix"] + c["output"] for c in samples["cases"]], template)
    assert ReasoningParser(model_type="respc", tokenizer=tokenizer).detector.starts_message(sample["prefix"])
    tag = _message_start_tag(tokenizer, samples["tools"], require_reasoning)
    assert _accepts(tokenizer, tag, sample["output"])
    assert _accepts(tokenizer, tag, _case(samples, "thinking_off_tool_call")["output"])
    assert not _accepts(tokenizer, tag, "<think>\nno call</think>\n\nJust text.<|im_end|>")


def test_a_prompt_that_pre_opened_the_reasoning_starts_the_tag_inside_it():
    """A tool parser given the prompt (`FunctionCallParser(..., prefix=prompt)`) whose tag is
    applied from the first token: deepseek-r1's prompt pre-opened `<think>`, so the tag
    starts inside the reasoning (the output's reasoning, then `</think>`, then the call). A
    call written before `</think>` is reasoning to the parser, so it does not count as the
    required call: built without the prompt, the tag took it as one."""
    template, samples = _load("deepseek-r1")
    sample = _case(samples, "reasoning_tool_call")
    tokenizer = _Tokenizer([c["prefix"] + c["output"] for c in samples["cases"]], template)
    tag = _message_start_tag(tokenizer, samples["tools"], True, prefix=sample["prefix"])
    assert _accepts(tokenizer, tag, sample["output"])
    inside = "I will look it up." + _call_text("deepseek-r1", samples)
    assert not respc.load("deepseek-r1").parse(inside, prefix=sample["prefix"], tools=samples["tools"]).get("tool_calls")
    assert not _accepts(tokenizer, tag, inside)
    without = _message_start_tag(tokenizer, samples["tools"], True)
    assert _accepts(tokenizer, without, inside)


def test_markers_that_are_special_tokens_are_read_from_the_detectors_tokenizer():
    """As the vLLM plugin does, the grammar is given the template's markers that are the
    tokenizer's special tokens (`_common.special_markers`), read from the tokenizer SGLang
    gives the detector; xgrammar then takes each marker as its special token."""
    template, samples = _load("qwen3")
    texts = [c["prefix"] + c["output"] for c in samples["cases"]]

    class Special(_Tokenizer):
        def get_added_vocab(self) -> dict:
            return {t: self._tok.token_to_id(t) for t in sorted({m for x in texts for m in _MARKER.findall(x)})}

    tokenizer = Special(texts, template)
    compiled = respc.load("qwen3")
    markers = plugin._special_markers(tokenizer, compiled)
    assert {"<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_end|>"} <= set(markers)
    tag = json.loads(_sampling_tag(tokenizer, samples["tools"]))
    assert tag == compiled.grammar(samples["tools"], format="structural_tag", tool_choice="required",
                                   prefix=plugin._after_reasoning(compiled, ""), special_tokens=markers)
    output = _case(samples, "thinking_off_tool_call")["output"]
    ids = tokenizer.encode(output)
    assert tokenizer._tok.id_to_token(ids[0]) == "<tool_call>"  # one special token
    assert _accepts(tokenizer, json.dumps(tag), output)
