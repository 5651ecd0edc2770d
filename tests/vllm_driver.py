"""Drive vLLM's parser layer the way its OpenAI chat server does (tests/test_vllm.py,
bench/engines.py).

vLLM 0.33's and 0.34's ``serving.py`` (the same parser calls in both) make one parser per
choice (``parser_cls(tokenizer, request.tools, chat_template_kwargs=..., model_config=...)``)
and stream each engine output through ``ChatStreamProcessor.step(delta_text, token_ids,
finish_reason, prompt_token_ids)``; the non-streaming response is ``parser.set_prompt_token_ids(prompt)``,
``parser.parse(text, request, enable_auto_tools, token_ids)`` and
``assemble_chat_message_fields``. vLLM 0.32 has neither helper class: its ``serving.py``
calls ``Parser.parse_delta`` / ``Parser.parse`` inline, which the fallbacks here follow.

The detokenizer leaves the stop token's text out of the last delta (its id stays in the
delta's token ids): ``steps_of(..., stop=True)`` does the same.
"""

from __future__ import annotations

import json
from typing import Any

try:  # vLLM 0.33 and 0.34 stream and assemble through these; 0.32's serving.py does the same inline
    from vllm.entrypoints.openai.chat_completion.message_assembly import assemble_chat_message_fields
    from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
except ImportError:
    ChatStreamProcessor = assemble_chat_message_fields = None


def request_of(tools, **extra):
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    return ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools, **extra)


def stop_token(data: dict, case: dict, tools) -> str:
    """The end token the model stops with: "" when the output ends with one, else the first
    whose text after the output leaves the message as it is (gpt-oss: <|call|> after a call)."""
    import respc

    ends = data.get("end_tokens") or []
    for end in ends:
        if case["output"].endswith(end):
            return ""
    want = respc.parse_response(case["output"], data["family"], prefix=case["prefix"], tools=tools)
    calls = [e for e in ends if "call" in e] if want.get("tool_calls") else []
    for end in calls + ends:
        if respc.parse_response(case["output"] + end, data["family"], prefix=case["prefix"], tools=tools) == want:
            return end
    return ""


def call_texts(family: str, prefix: str, output: str) -> list[str]:
    """Each tool region of ``output`` as written (delimiters included, stripped), from
    respc's events with offsets."""
    import respc

    compiled = respc.load(family)
    parser = compiled.parser(prefix=prefix, spans=True, on_malformed="event")
    base = len(compiled.Parser.cut_prefix(prefix)) if prefix else 0
    events = [*parser.initial_events, *parser.feed(output), *parser.finalize()[1]]
    texts, start = [], None
    for event in events:
        if event.get("field") != "tool_calls":
            continue
        if event["type"] == "region_open":
            start = event["start"]
        elif event["type"] in ("region_close", "region_malformed") and start is not None:
            texts.append(output[max(start - base, 0) : event["end"] - base].strip())
            start = None
    return texts


def shown_problem(got: dict, family: str, case: dict, stop: str) -> str | None:
    """What is wrong with ``got`` (an accumulated message, see :func:`accumulate`) for an
    output whose calls are shown as content (tool parsing off: tool_choice="none"), None if
    nothing: no calls, reasoning as respc parses it, each tool region's text as written
    in the content in order, and the rest of the content respc's (whitespace aside)."""
    import respc
    from respc.openai import to_message

    message = to_message(respc.parse_response(case["output"], family, prefix=case["prefix"]))
    if got["tool_calls"]:
        return "calls returned"
    if got["reasoning"] != (message.get("reasoning_content") or None):
        return "reasoning differs"
    rest, at = got["content"] or "", 0
    for text in call_texts(family, case["prefix"], case["output"] + stop):
        found = rest.find(text, at)
        if found < 0:
            return f"call text not in the content: {text!r}"
        rest = rest[:found] + " " + rest[found + len(text) :]
        at = found
    if rest.split() != (message.get("content") or "").split():
        return f"content other than respc's: {rest!r}"
    return None


def steps_of(tok, output_ids: list[int], stop: bool, per_delta: int) -> list[tuple[str, list[int], str | None]]:
    """The engine's outputs for ``output_ids``, ``per_delta`` tokens each: (text, ids, finish_reason)."""
    out = []
    for start in range(0, len(output_ids), per_delta):
        ids = output_ids[start : start + per_delta]
        last = start + per_delta >= len(output_ids)
        text_ids = ids[:-1] if (last and stop) else ids  # vLLM leaves the stop token's text out
        text = "".join(tok.decode([i], skip_special_tokens=False) for i in text_ids)
        out.append((text, list(ids), "stop" if last else None))
    return out


def new_parser(tok, parser_cls, request):
    """One choice's parser, as ``OpenAIServingChat._make_parser`` makes it."""
    return parser_cls(tok, request.tools, model_config=None, chat_template_kwargs={})


def new_stream(tok, parser_cls, request):
    """One choice's stream: ``ChatStreamProcessor`` (0.33, 0.34), or the bare parser (0.32)."""
    parser = new_parser(tok, parser_cls, request)
    if ChatStreamProcessor is None:
        return parser
    return ChatStreamProcessor(request, parser, enable_auto_tools=True, parser_cls=parser_cls)


def run_steps(stream, request, prompt_ids: list[int], steps) -> list[tuple[Any, str | None]]:
    """Each step through the stream: the (DeltaMessage or None, finish_reason) pairs."""
    out = []
    if ChatStreamProcessor is not None:
        for text, ids, finish in steps:
            step = stream.step(text, ids, finish, prompt_ids)
            out.append((step.delta, step.finish_reason))
        return out
    for text, ids, finish in steps:  # vLLM 0.32's serving.py: calls kept with tools and auto
        delta = stream.parse_delta(text, ids, request, prompt_ids, finished=finish is not None)
        if delta is not None and delta.tool_calls and not request.tools:
            delta.tool_calls = []
        out.append((delta, finish))
    return out


def accumulate(results) -> dict:
    """The deltas added up by the ``openai`` package: content, reasoning, calls (name, arguments)."""
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state = ChatCompletionStreamState()
    reasoning = []
    for delta, finish_reason in results:
        if delta is None and finish_reason is None:
            continue
        delta = delta.model_dump(exclude_none=True) if delta is not None else {}
        if delta.get("reasoning"):
            reasoning.append(delta["reasoning"])
        chunk = {
            "id": "chatcmpl-x",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    message = state.get_final_completion().choices[0].message
    return {
        "content": message.content or None,
        "reasoning": "".join(reasoning) or None,
        "tool_calls": [(c.function.name, _loads(c.function.arguments)) for c in message.tool_calls or []],
    }


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text  # an engine parser's invalid JSON: kept, so the comparison fails on it


def stream(tok, parser_cls, request, prompt_ids, output_ids, stop: bool, per_delta: int) -> dict:
    """A streamed choice's message (see :func:`accumulate`)."""
    steps = steps_of(tok, output_ids, stop, per_delta)
    return accumulate(run_steps(new_stream(tok, parser_cls, request), request, list(prompt_ids), steps))


def parse_whole(parser, request, prompt_ids, text: str, output_ids):
    """The non-streaming response's parse of one choice."""
    parser.set_prompt_token_ids(prompt_ids)
    return parser.parse(text, request, enable_auto_tools=True, model_output_token_ids=output_ids)


def whole(tok, parser_cls, request, prompt_ids, output_ids, stop: bool) -> dict:
    """A non-streamed choice's message, as the server assembles it."""
    parser = new_parser(tok, parser_cls, request)
    text = tok.decode(output_ids[:-1] if stop else output_ids, skip_special_tokens=False)
    reasoning, content, calls = parse_whole(parser, request, prompt_ids, text, output_ids)
    if assemble_chat_message_fields is None:  # vLLM 0.32: serving.py keeps calls with tools and auto
        calls = [c for c in calls or [] if request.tools]
        return {
            "content": content or None,
            "reasoning": reasoning or None,
            "tool_calls": [(c.name, _loads(c.arguments)) for c in calls],
        }
    fields = assemble_chat_message_fields(request, reasoning, content, calls, enable_auto_tools=True, parser_cls=parser_cls)
    return {
        "content": fields.content or None,
        "reasoning": fields.reasoning or None,
        "tool_calls": [(c.function.name, _loads(c.function.arguments)) for c in fields.tool_calls],
    }
