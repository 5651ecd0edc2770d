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
