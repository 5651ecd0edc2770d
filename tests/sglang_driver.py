"""Drive SGLang's parser layer the way its OpenAI chat server does (tests/test_sglang.py,
bench/engines.py).

SGLang's ``serving_chat.py`` (0.5.23) cannot be imported without the whole server (FastAPI,
OpenTelemetry, the tokenizer manager...), so its per-request parser logic is followed here
step by step: ``_generate_stream_content`` -> ``_process_reasoning_stream`` (a
``ReasoningParser`` per choice, ``parse_stream_chunk`` per delta and ``parse_stream_end`` on
the last) -> ``_process_tool_call_stream`` (a ``FunctionCallParser`` per choice, with the
prompt as ``prefix``, ``parse_stream_chunk`` and ``parse_stream_end``) ->
``_check_for_unstreamed_tool_args``; and ``_build_chat_response`` -> ``parse_non_stream``
of both, for the non-streaming response. Tool-call ids are made as the server makes them.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
import uuid
from typing import Any


def import_sglang() -> str | None:
    """Import SGLang's parser layer; return why it cannot be, or None. ``sglang/__init__.py``
    imports the runtime (torch kernels, triton, the frontend language): when that fails the
    package is loaded bare, so that only the parser modules and what they import load."""
    if importlib.util.find_spec("sglang") is None:
        return "sglang is not installed: pip install --no-deps -r tests/requirements-sglang.txt"
    try:
        import sglang.srt.function_call.function_call_parser  # noqa: F401
    except Exception:
        for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
            del sys.modules[name]
        spec = importlib.util.find_spec("sglang")
        bare = types.ModuleType("sglang")
        bare.__path__ = list(spec.submodule_search_locations or [])
        sys.modules["sglang"] = bare
        try:
            import sglang.srt.function_call.function_call_parser  # noqa: F401
            import sglang.srt.parser.reasoning_parser  # noqa: F401
        except Exception as error:  # a missing module of the set
            return f"SGLang's parser layer does not import ({error!r}): pip install --no-deps -r tests/requirements-sglang.txt"
    return None


def tools_of(tools: list[dict] | None) -> list:
    from sglang.srt.entrypoints.openai.protocol import Tool

    return [Tool.model_validate(tool) for tool in tools or []]


def request_of(prefix: str, tools: list[dict] | None):
    """A ChatCompletionRequest as the server holds it after rendering the prompt."""
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest

    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools or None)
    for name, value in (
        ("_response_parser_prefix", prefix),
        ("_response_parser_grammar_start", None),
        ("_response_parser_tool_grammar", False),
    ):
        try:
            setattr(request, name, value)
        except Exception:
            object.__setattr__(request, name, value)
    return request


def _prompt(prefix: str) -> dict:
    """The prompt arguments this SGLang's FunctionCallParser takes (0.5.22 takes none)."""
    import inspect

    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    accepted = inspect.signature(FunctionCallParser).parameters
    return {k: v for k, v in (("prefix", prefix), ("constrained", False)) if k in accepted}


def _tool_call_id(name: str | None) -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def stream(deltas: list[str], *, tokenizer: Any, prefix: str, tools: list[dict] | None,
           reasoning_parser: str | None = "respc", tool_call_parser: str | None = "respc") -> list[dict]:
    """The ``choices[0].delta`` dicts the server streams for these text deltas (the last
    one ends the generation)."""
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    request = request_of(prefix, tools)
    effective = tools_of(tools)
    out: list[dict] = [{"role": "assistant", "content": ""}]
    rp = fcp = None
    for position, delta in enumerate(deltas):
        final = position == len(deltas) - 1
        if reasoning_parser:
            if rp is None:
                rp = ReasoningParser(reasoning_parser, True, None, request, tokenizer=tokenizer,
                                     tool_call_parser_active=bool(tool_call_parser))
            reasoning_text, delta = rp.parse_stream_chunk(delta)
            if final:
                end_reasoning, end_normal = rp.parse_stream_end()
                if end_reasoning:
                    reasoning_text = (reasoning_text or "") + end_reasoning
                if end_normal:
                    delta = (delta or "") + end_normal
            if reasoning_text:
                out.append({"reasoning_content": reasoning_text})
        active = bool(tool_call_parser) and (
            bool(effective) or FunctionCallParser.ToolCallParserEnum[tool_call_parser].parses_without_tools()
        )
        if active:
            if fcp is None:
                fcp = FunctionCallParser(tools=effective, tool_call_parser=tool_call_parser, tokenizer=tokenizer,
                                         **_prompt(prefix))
            normal, calls = fcp.parse_stream_chunk(delta)
            if final:
                end_text, end_calls = fcp.parse_stream_end()
                normal = (normal or "") + end_text
                calls = list(calls) + end_calls
            if normal:
                out.append({"content": normal})
            for call in calls:
                out.append({"tool_calls": [{
                    "index": call.tool_index,
                    "id": _tool_call_id(call.name) if call.name else None,
                    "type": "function" if call.name else None,
                    "function": {"name": call.name if call.name else None, "arguments": call.parameters},
                }]})
            if final:
                detector = fcp.detector
                if detector.prev_tool_call_arr and detector.streamed_args_for_tool:
                    index = len(detector.prev_tool_call_arr) - 1
                    if index < len(detector.streamed_args_for_tool):
                        expected = detector.prev_tool_call_arr[index].get("arguments", {})
                        expected = expected if isinstance(expected, str) else json.dumps(expected, ensure_ascii=False)
                        actual = detector.streamed_args_for_tool[index]
                        rest = expected[len(actual):] if expected.startswith(actual) else ""
                        if rest:
                            out.append({"tool_calls": [{"index": index, "function": {"arguments": rest}}]})
        elif delta:
            out.append({"content": delta})
    return out


def whole(text: str, *, tokenizer: Any, prefix: str, tools: list[dict] | None,
          reasoning_parser: str | None = "respc", tool_call_parser: str | None = "respc") -> dict:
    """The message of the server's non-streaming response."""
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    request = request_of(prefix, tools)
    effective = tools_of(tools)
    reasoning = None
    if reasoning_parser:
        rp = ReasoningParser(reasoning_parser, False, None, request, tokenizer=tokenizer,
                             tool_call_parser_active=bool(tool_call_parser))
        reasoning, text = rp.parse_non_stream(text)
    tool_calls = None
    active = bool(tool_call_parser) and (
        bool(effective) or FunctionCallParser.ToolCallParserEnum[tool_call_parser].parses_without_tools()
    )
    if active:
        parser = FunctionCallParser(effective, tool_call_parser, tokenizer=tokenizer, tool_choice="auto",
                                    **_prompt(prefix))
        if parser.has_tool_call(text):
            text, infos = parser.parse_non_stream(text)
            tool_calls = [
                {"id": _tool_call_id(info.name), "type": "function",
                 "function": {"name": info.name, "arguments": info.parameters}}
                for info in infos
            ] or None
    message: dict = {"role": "assistant", "content": text if text else None}
    if reasoning:
        message["reasoning_content"] = reasoning
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message
