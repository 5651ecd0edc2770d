"""respc inside vLLM (respc.integrations.vllm), driven as vLLM's OpenAI chat server drives it.

For every bundled family and each of its samples: the server's parser class from
``ParserManager.get_parser(tool_parser_name="respc", reasoning_parser_name="respc", ...)``; a
request parser that is told the prompt's token ids and adjusts the request (as the renderer
does); then one parser per response, fed through vLLM's own ``ChatStreamProcessor`` one
token per delta and four tokens per delta (speculative decoding), the stop token's text
left out as vLLM's detokenizer leaves it out, the chunks accumulated by the ``openai``
package's ``ChatCompletionStreamState``; and the non-streaming ``Parser.parse`` through
``assemble_chat_message_fields``. Both must give respc's own message
(``to_message(parse_response(...))``). The tokenizers are built here (tests/local_tokenizer.py).

vLLM installs without its dependencies: ``pip install --no-deps -r tests/requirements-vllm.txt``
(see docs/engines.md); without it these tests skip.
"""

from __future__ import annotations

import json

import pytest
from optional import needs

needs("openai", "transformers", "vllm.parser")

from local_tokenizer import families, samples, tokenizer_for
import vllm_driver as driver
from vllm.parser import ParserManager

import respc
from respc.integrations import vllm as plugin
from respc.openai import to_message

QUICK = ("qwen3", "gpt-oss", "deepseek-v3.1", "mistral-small-3.2", "qwen3-coder", "kimi-k2")


def _cases(names):
    out = []
    for family in names:
        for case in samples(family)["cases"]:
            if not case.get("cut"):
                out.append(pytest.param(family, case["name"], id=f"{family}-{case['name']}"))
    return out


def _tokenizer(family: str):
    tok = tokenizer_for(family)
    tok.response_template = respc.load(family).template
    return tok


def _case(family: str, name: str) -> tuple[dict, dict]:
    data = samples(family)
    return data, next(c for c in data["cases"] if c["name"] == name)


def _server(family: str, auto: bool = True):
    tok = _tokenizer(family)
    parser_cls = ParserManager.get_parser(
        tool_parser_name="respc",
        reasoning_parser_name="respc",
        enable_auto_tools=auto,
        model_name=family,
        tokenizer=tok,
    )
    return tok, parser_cls


def _request(tools, **extra):
    return driver.request_of(tools, **extra)


def _render(tok, parser_cls, request, prompt_ids):
    """What vLLM's OnlineRenderer does with the parser before generating."""
    parser = parser_cls(tok, request.tools, model_config=None, chat_template_kwargs={})
    parser.set_prompt_token_ids(prompt_ids)
    return parser.adjust_request(request=request)


_stream = driver.stream
_whole = driver.whole


def _expected(family: str, case: dict, tools) -> dict:
    """respc's own message (without tools in the request vLLM's server returns no calls:
    tool_choice is "none", and :func:`_check_shown` checks a call the model writes anyway)."""
    message = to_message(respc.parse_response(case["output"], family, prefix=case["prefix"], tools=tools))
    calls = message.get("tool_calls") or [] if tools else []
    return {
        "content": message.get("content") or None,
        "reasoning": message.get("reasoning_content") or None,
        "tool_calls": [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls],
    }


def _check_shown(got: dict, family: str, case: dict, stop: str, label) -> None:
    problem = driver.shown_problem(got, family, case, stop)
    assert problem is None, (label, problem, got)


def _check(family: str, name: str) -> None:
    data, case = _case(family, name)
    tools = data["tools"] if case.get("tools", True) else None
    tok, parser_cls = _server(family)
    assert parser_cls is not None and issubclass(parser_cls, plugin.RespcParser)
    prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
    stop = driver.stop_token(data, case, tools)
    output_ids = tok.encode(case["output"] + stop, add_special_tokens=False)
    want = _expected(family, case, tools)
    shown = not tools and bool(respc.parse_response(case["output"], family, prefix=case["prefix"]).get("tool_calls"))
    request = _render(tok, parser_cls, _request(tools, stream=True), prompt_ids)
    assert request.skip_special_tokens is False  # the format's markers are special tokens here
    has_stop = bool(stop) or any(case["output"].endswith(e) for e in data.get("end_tokens") or [])
    results = {per_delta: _stream(tok, parser_cls, request, prompt_ids, output_ids, has_stop, per_delta) for per_delta in (1, 4)}
    results["whole"] = _whole(tok, parser_cls, request, prompt_ids, output_ids, has_stop)
    for label, got in results.items():
        if shown:
            _check_shown(got, family, case, stop, (family, name, label))
        else:
            assert got == want, (family, name, label, got, want)
    assert results[1] == results[4] == results["whole"], (family, name, results)


@pytest.mark.parametrize("family,name", _cases(QUICK))
def test_quick_families_through_vllm(family, name):
    _check(family, name)


@pytest.mark.slow
@pytest.mark.parametrize("family,name", _cases([f for f in families() if f not in QUICK]))
def test_every_family_through_vllm(family, name):
    _check(family, name)


def test_registered_names():
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    assert ToolParserManager.get_tool_parser("respc") is plugin.RespcToolParser
    assert ReasoningParserManager.get_reasoning_parser("respc") is plugin.RespcReasoningParser
    plugin.register()  # idempotent
    _, parser_cls = _server("qwen3")
    assert parser_cls.tool_parser_cls is plugin.RespcToolParser
    assert parser_cls.reasoning_parser_cls is plugin.RespcReasoningParser
    # another pair still composes as vLLM composes it
    other = ParserManager.get_parser(reasoning_parser_name="deepseek_r1")
    assert not issubclass(other, plugin.RespcParser)


def test_template_from_the_environment(monkeypatch):
    fresh = tokenizer_for("hermes3", extra="env")
    fresh.__dict__.pop("_respc_template", None)
    fresh.response_template = None
    monkeypatch.delenv("RESPC_TEMPLATE", raising=False)
    if getattr(respc, "for_model", None) is None:
        with pytest.raises(TypeError, match="RESPC_TEMPLATE"):
            ParserManager.get_parser(tool_parser_name="respc", reasoning_parser_name="respc", enable_auto_tools=True, tokenizer=fresh)
    monkeypatch.setenv("RESPC_TEMPLATE", "hermes3")
    parser_cls = ParserManager.get_parser(tool_parser_name="respc", enable_auto_tools=True, tokenizer=fresh)
    assert parser_cls(fresh).compiled.hash == respc.load("hermes3").hash


def test_thinking_field_streams_as_reasoning():
    template = json.loads(json.dumps(respc.load("qwen3").template))
    template["fields"] = {("thinking" if k == "reasoning_content" else k): v for k, v in template["fields"].items()}
    tok = tokenizer_for("qwen3", extra="thinking")
    tok.response_template = template
    tok.__dict__.pop("_respc_template", None)
    parser_cls = ParserManager.get_parser(tool_parser_name="respc", reasoning_parser_name="respc", enable_auto_tools=True, tokenizer=tok)
    data, case = _case("qwen3", "reasoning_answer")
    prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
    output_ids = tok.encode(case["output"] + "<|im_end|>", add_special_tokens=False)
    got = _stream(tok, parser_cls, _request(data["tools"], stream=True), prompt_ids, output_ids, True, 4)
    assert got == _expected("qwen3", case, data["tools"]) and got["reasoning"]


def test_stripped_stop_token_closes_the_call():
    """gpt-oss stops at <|call|>: vLLM leaves its text out, the plugin puts it back."""
    data, case = _case("gpt-oss", "recipient_first_no_reasoning")
    tok, parser_cls = _server("gpt-oss")
    prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
    output_ids = tok.encode(case["output"] + "<|call|>", add_special_tokens=False)
    request = _request(data["tools"], stream=True)
    got = _stream(tok, parser_cls, request, prompt_ids, output_ids, True, 1)
    assert got["tool_calls"] == [("get_weather", {"city": "Paris", "days": 3})]
    parser = parser_cls(tok, request.tools)
    parser.set_prompt_token_ids(prompt_ids)
    _, _, calls = parser.parse(tok.decode(output_ids[:-1], skip_special_tokens=False), request, True, output_ids)
    assert [c.name for c in calls] == ["get_weather"]


def test_tool_parser_state_is_what_was_sent():
    data, case = _case("qwen3", "reasoning_tool_call")
    tok, parser_cls = _server("qwen3")
    prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
    output_ids = tok.encode(case["output"] + "<|im_end|>", add_special_tokens=False)
    parser = parser_cls(tok, data["tools"])
    request = _request(data["tools"], stream=True)
    sent: dict[int, str] = {}
    for k in range(0, len(output_ids), 4):
        ids = output_ids[k : k + 4]
        last = k + 4 >= len(output_ids)
        text = "".join(tok.decode([i], skip_special_tokens=False) for i in (ids[:-1] if last else ids))
        delta = parser.parse_delta(text, ids, request, prompt_ids, finished=last)
        for call in (delta.tool_calls if delta else []):
            sent[call.index] = sent.get(call.index, "") + (call.function.arguments or "")
    tool = parser.tool_parser
    assert tool.streamed_args_for_tool == [sent[0]]
    assert json.loads(tool.prev_tool_call_arr[0]["arguments"]) == {"city": "Paris", "days": 3}
    assert tool.prev_tool_call_arr[0]["name"] == "get_weather"
    assert tool.get_remaining_unstreamed_args() == ""


def test_argument_fragments_carry_only_their_fields():
    """What the server serializes (``exclude_unset``): a call's first delta has its id, type
    and name, each later fragment only its index and arguments (no ``"id": null``), as
    vLLM's own parsers and the OpenAI API send them."""
    data, case = _case("qwen3", "reasoning_tool_call")
    tok, parser_cls = _server("qwen3")
    prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
    output_ids = tok.encode(case["output"] + "<|im_end|>", add_special_tokens=False)
    request = _request(data["tools"], stream=True)
    sent = []
    for delta, _ in driver.run_steps(driver.new_stream(tok, parser_cls, request), request, prompt_ids, driver.steps_of(tok, output_ids, True, 1)):
        if delta is not None and delta.tool_calls:
            sent += json.loads(delta.model_dump_json(exclude_unset=True))["tool_calls"]
    assert sent[0]["id"] and sent[0]["type"] == "function" and sent[0]["function"]["name"] == "get_weather"
    assert len(sent) > 2 and all(set(call) == {"index", "function"} and set(call["function"]) == {"arguments"} for call in sent[1:])


def test_prompt_decoded_as_the_tokenizer_decodes():
    """The prompt's tail goes through the tokenizers backend (transformers' decode only wraps
    it): the same text as the tokenizer's own decode with special tokens kept."""
    from respc.integrations._common import decode

    tok = _tokenizer("qwen3")
    _, case = _case("qwen3", "multi_turn")
    ids = tok.encode(case["prefix"], add_special_tokens=False)
    decoded = plugin._decoder(tok)
    assert decoded.__name__ == "fast"  # (a transformers tokenizer over the tokenizers library)
    assert decoded(ids) == decode(tok, ids) == case["prefix"]
    assert plugin.prompt_text(tok, respc.load("qwen3"), ids) == decode(tok, ids[-plugin._TAIL :])  # the turn is in the tail


def test_reasoning_end_looks_at_the_current_turn():
    tok, parser_cls = _server("qwen3")
    _, case = _case("qwen3", "reasoning_answer")
    parser = parser_cls(tok, None)
    history = case["prefix"].replace(
        "<|im_start|>user\n", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\nx\n</think>\n\nhello<|im_end|>\n<|im_start|>user\n", 1
    )
    assert not parser.is_reasoning_end(tok.encode(history, add_special_tokens=False))  # the old </think> is history
    assert not parser.is_reasoning_end(tok.encode(case["prefix"] + "<think>\n", add_special_tokens=False))
    assert parser.is_reasoning_end(tok.encode(case["prefix"] + "<think>\nx\n</think>\n\n", add_special_tokens=False))
    reasoning = parser.reasoning_parser
    reasoning.set_prompt_token_ids(tok.encode(case["prefix"], add_special_tokens=False))
    out = tok.encode("<think>\nhm\n</think>\n\nParis", add_special_tokens=False)
    assert tok.decode(reasoning.extract_content_ids(out)) == "\n\nParis"


@pytest.mark.parametrize("ask", ["required", "named", "strict", "single"])
def test_guarantees_get_the_template_grammar(ask):
    data, case = _case("qwen3", "reasoning_tool_call")
    tools = json.loads(json.dumps(data["tools"]))
    extra: dict = {}
    if ask == "required":
        extra["tool_choice"] = "required"
    elif ask == "named":
        extra["tool_choice"] = {"type": "function", "function": {"name": "get_weather"}}
    elif ask == "strict":
        tools[0]["function"]["strict"] = True
    else:
        extra["parallel_tool_calls"] = False
    tok, parser_cls = _server("qwen3")
    prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
    request = _request(tools, **extra)
    if not hasattr(respc.CompiledTemplate, "grammar"):
        from vllm.exceptions import VLLMValidationError

        with pytest.raises(VLLMValidationError, match="grammar"):
            _render(tok, parser_cls, request, prompt_ids)
        pytest.skip("this respc has no CompiledTemplate.grammar (the grammar issue): the guarantee is refused, as checked")
    request = _render(tok, parser_cls, request, prompt_ids)
    tag = json.loads(request.structured_outputs.structural_tag)
    assert tag == respc.load("qwen3").grammar(
        tools,
        format="structural_tag",
        tool_choice="get_weather" if ask == "named" else ("required" if ask == "required" else "auto"),
        parallel_tool_calls=ask != "single",
        prefix=case["prefix"],
        special_tokens=plugin.special_markers(tok, respc.load("qwen3")),
    )
    assert request.response_format is None
    assert request.resolve_reasoning_ended(parser_cls(tok, tools), prompt_ids) is True
    from vllm.parser.abstract_parser import structured_outputs_to_format

    assert structured_outputs_to_format(request.structured_outputs) is not None  # xgrammar's model takes it


def test_tool_choice_none_shows_calls_as_content():
    """tool_choice="none": vLLM's server returns no calls, and the call the model writes
    anyway reaches the client as content, as written (as vLLM's own response_template and
    legacy parsers show it), streamed or not; so it does without a tool parser."""
    data, case = _case("qwen3", "text_around_calls")
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'
    want = {
        "content": f"Let me check the forecast.\n{call}\nI will report back once it returns.",
        "reasoning": "The user wants a 3-day forecast for Paris. I should call get_weather with city Paris and days 3.",
        "tool_calls": [],
    }
    tok, parser_cls = _server("qwen3")
    alone = ParserManager.get_parser(reasoning_parser_name="respc", model_name="qwen3", tokenizer=tok)
    prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
    output_ids = tok.encode(case["output"] + "<|im_end|>", add_special_tokens=False)
    for cls, extra in ((parser_cls, {"tool_choice": "none"}), (alone, {})):
        request = _request(data["tools"], stream=True, **extra)
        for per_delta in (1, 4):
            assert _stream(tok, cls, request, prompt_ids, output_ids, True, per_delta) == want, (cls, per_delta)
        assert _whole(tok, cls, request, prompt_ids, output_ids, True) == want, cls
    # the same output with tool_choice="auto" is a call
    request = _request(data["tools"], stream=True)
    assert _stream(tok, parser_cls, request, prompt_ids, output_ids, True, 4)["tool_calls"] == [("get_weather", {"city": "Paris", "days": 3})]


@pytest.mark.parametrize("family", QUICK)
def test_tool_choice_none_every_call_sample(family):
    """Each sample with a call, requested with tools and tool_choice="none": shown as
    content (see _check_shown), the same streamed (1 and 4 tokens per delta) and whole."""
    data = samples(family)
    tok, parser_cls = _server(family)
    for case in data["cases"]:
        if case.get("cut") or not respc.parse_response(case["output"], family, prefix=case["prefix"]).get("tool_calls"):
            continue
        prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
        stop = driver.stop_token(data, case, data["tools"])
        output_ids = tok.encode(case["output"] + stop, add_special_tokens=False)
        has_stop = bool(stop) or any(case["output"].endswith(e) for e in data.get("end_tokens") or [])
        request = _render(tok, parser_cls, _request(data["tools"], stream=True, tool_choice="none"), prompt_ids)
        results = [_stream(tok, parser_cls, request, prompt_ids, output_ids, has_stop, n) for n in (1, 4)]
        results.append(_whole(tok, parser_cls, request, prompt_ids, output_ids, has_stop))
        for label, got in zip((1, 4, "whole"), results):
            _check_shown(got, family, case, stop, (family, case["name"], label))
        assert results[0] == results[1] == results[2], (family, case["name"], results)


@pytest.mark.slow
def test_installing_respc_is_enough():
    """vLLM's own plugin loader (every vLLM process runs it) finds the entry point and registers both parsers."""
    import subprocess
    import sys

    code = (
        "from vllm.plugins import load_general_plugins; load_general_plugins(); "
        "from vllm.tool_parsers import ToolParserManager; from vllm.reasoning import ReasoningParserManager; "
        "print(ToolParserManager.get_tool_parser('respc').__name__, ReasoningParserManager.get_reasoning_parser('respc').__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.stdout.split() == ["RespcToolParser", "RespcReasoningParser"], out.stderr[-2000:]


def test_split_parsers_on_their_own():
    """The registered classes used one at a time (as vLLM's DelegatingParser or its
    structured-output reasoner would): whole outputs as respc parses them."""
    data, case = _case("qwen3", "reasoning_tool_call")
    tok = _tokenizer("qwen3")
    prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
    want = _expected("qwen3", case, data["tools"])
    request = _request(data["tools"])
    tool = plugin.RespcToolParser(tok, request.tools)
    tool.set_prompt_token_ids(prompt_ids)
    info = tool.extract_tool_calls(case["output"], request)
    assert info.tools_called and [(c.function.name, json.loads(c.function.arguments)) for c in info.tool_calls] == want["tool_calls"]
    reasoning = plugin.RespcReasoningParser(tok)
    reasoning.set_prompt_token_ids(prompt_ids)
    assert reasoning.extract_reasoning(case["output"], request)[0] == want["reasoning"]
    assert not reasoning.is_reasoning_end(prompt_ids + tok.encode("<think>\nhm", add_special_tokens=False))
    assert reasoning.is_reasoning_end(tok.encode(case["prefix"] + case["output"], add_special_tokens=False))


@pytest.mark.parametrize("family", ["qwen3", "deepseek-r1", "gpt-oss", "kimi-k2-thinking", "mistral-small-3.2"])
def test_reasoning_tokens_counted(family):
    """``count_reasoning_tokens`` (usage's reasoning_tokens): the output tokens inside the
    reasoning respc parses, the same whether the server asks once at the end or after each
    chunk (continuous usage), and 0 without reasoning."""
    data = samples(family)
    tok, parser_cls = _server(family)
    for case in data["cases"]:
        if case.get("cut"):
            continue
        tools = data["tools"] if case.get("tools", True) else None
        prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
        output_ids = tok.encode(case["output"], add_special_tokens=False)
        message = respc.parse_response(case["output"], family, prefix=case["prefix"], tools=tools)
        parser = parser_cls(tok, tools)
        parser.set_prompt_token_ids(prompt_ids)
        whole = parser.count_reasoning_tokens(output_ids)
        growing = [parser.count_reasoning_tokens(output_ids[: k + 3]) for k in range(0, len(output_ids), 3)]
        assert growing[-1] == whole, (family, case["name"])
        assert growing == sorted(growing), (family, case["name"])
        reasoning = message.get("reasoning_content") or ""
        if not reasoning:
            assert whole == 0 or not reasoning.strip(), (family, case["name"], whole)
        else:  # one character per token here: at least the reasoning's own (less the newlines
            # that join its blocks, gpt-oss's analysis messages), at most the output's
            assert len(reasoning) - reasoning.count("\n") <= whole <= len(output_ids), (family, case["name"], whole, len(reasoning))


def test_reasoning_end_from_any_token_sequence():
    """vLLM 0.34's structured outputs ask the reasoner for its single reasoning-end tokens
    first (none here: a template's reasoning need not end at one token) and then call
    ``is_reasoning_end_streaming`` with a ``TokenIdsView`` over the request's ids, not a
    list (0.33 passes a list copy): the answer is the same for either."""
    from collections.abc import Sequence

    _, case = _case("qwen3", "reasoning_answer")
    tok = _tokenizer("qwen3")
    reasoning = plugin.RespcReasoningParser(tok)
    prompt = tok.encode(case["prefix"], add_special_tokens=False)
    try:
        from vllm.v1.token_buffer import TokenIdsView  # vLLM 0.34
    except ImportError:  # vLLM 0.33: a Sequence of our own stands in for it
        class TokenIdsView(Sequence):
            def __init__(self, tokens, suffix=()):
                self._ids = [*tokens, *suffix]

            def __len__(self):
                return len(self._ids)

            def __getitem__(self, index):
                return self._ids[index]

    if hasattr(plugin.ReasoningParser, "reasoning_end_token_ids"):  # vLLM 0.34
        assert reasoning.reasoning_end_token_ids == frozenset()
        assert reasoning.find_reasoning_end(prompt) is None
    for output, ended in (("<think>\nhm", False), ("<think>\nhm\n</think>\n\nParis", True)):
        ids = tok.encode(output, add_special_tokens=False)
        for given in (prompt + ids, TokenIdsView(prompt, ids), TokenIdsView(prompt + ids)):
            assert reasoning.is_reasoning_end_streaming(given, ids[-1:]) is ended, (output, type(given))


@pytest.mark.parametrize("family,literals", [
    ("deepseek-r1", ("<think>", "</think>")),
    ("step-3.5-flash", ("<think>", "</think>")),
    ("magistral", ("[THINK]", "[/THINK]")),
    ("qwen3", (None, None)),  # its reasoning may also end where a <tool_call> begins
    ("gpt-oss", (None, None)),  # it closes at any of three markers
    ("kimi-k2-thinking", (None, None)),
])
def test_reasoning_start_and_end_strings(family, literals):
    """vLLM's thinking-token budget (ReasoningConfig, read at startup) counts from the
    reasoning parser's ``reasoning_start_str`` and forces its ``reasoning_end_str``: given
    where the template's reasoning opens and closes with one literal each, and then the
    forced end does end the reasoning as respc parses it; None where it may end otherwise."""
    import respc

    tok = _tokenizer(family)
    reasoning = plugin.RespcReasoningParser(tok)
    assert (reasoning.reasoning_start_str, reasoning.reasoning_end_str) == literals
    if literals[0] is not None:
        start, end = literals
        message = respc.parse_response(f"{start}weighing it{end}Paris", family, prefix="")
        assert message.get("reasoning_content") == "weighing it", message
        assert message.get("content") == "Paris", message


def test_empty_tools_array():
    """``tools: []``: vLLM 0.34 reads it as no tools (tool_choice "none"), so a call the
    model writes anyway is shown as content, as with tool_choice="none"; vLLM 0.33 refuses
    the request before any parser sees it."""
    from vllm.exceptions import VLLMValidationError

    data, case = _case("qwen3", "text_around_calls")
    try:
        request = _request([], stream=True)
    except VLLMValidationError as error:  # vLLM 0.33
        assert error.parameter == "tools"
        return
    assert request.tools is None and request.tool_choice == "none"
    tok, parser_cls = _server("qwen3")
    prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
    output_ids = tok.encode(case["output"] + "<|im_end|>", add_special_tokens=False)
    request = _render(tok, parser_cls, request, prompt_ids)
    results = [_stream(tok, parser_cls, request, prompt_ids, output_ids, True, n) for n in (1, 4)]
    results.append(_whole(tok, parser_cls, request, prompt_ids, output_ids, True))
    for label, got in zip((1, 4, "whole"), results):
        _check_shown(got, "qwen3", case, "<|im_end|>", label)
