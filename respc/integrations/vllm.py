"""respc inside vLLM: ``vllm serve MODEL --enable-auto-tool-choice --tool-call-parser respc
--reasoning-parser respc``.

Importing this module (or calling :func:`register`, which the ``vllm.general_plugins`` entry
point ``respc`` does in every vLLM process once ``respc[vllm]`` is installed) registers:

* a tool parser and a reasoning parser named ``respc`` with vLLM's ``ToolParserManager``
  and ``ReasoningParserManager``;
* where vLLM composes the two through its unified ``Parser`` (``ParserManager``, vLLM 0.32,
  0.33 and 0.34), :class:`RespcParser`: one parser per request that parses the output once,
  reasoning, content and tool calls together, with :class:`respc.openai.DeltaParser`.

The same code serves vLLM 0.32, 0.33 and 0.34 (tests/test_vllm.py runs on 0.33 and 0.34):
the interfaces it uses did not change between them; see docs/engines.md for what did.

The template: the tokenizer's ``response_template`` (attribute or ``init_kwargs``), else
``$RESPC_TEMPLATE`` (a bundled name or a path), else ``respc.for_model(tokenizer)`` where
respc has it; else the server fails at startup saying to set ``RESPC_TEMPLATE``. A
template's reasoning field named ``thinking`` streams as reasoning. See docs/engines.md.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.parser.abstract_parser import Parser
from vllm.reasoning import ReasoningParser, ReasoningParserManager
from vllm.tool_parsers import ToolParser, ToolParserManager

from ..api import CompiledTemplate
from ..openai import DeltaParser
from ..runtime.deltas import TextField, message_dict
from ._common import (
    decode,
    end_calls_at_stop,
    reasoning_literals,
    resolve,
    special_markers,
    stop_texts,
    stream_tools,
    tool_dicts,
)

__all__ = ["NAME", "RespcParser", "RespcReasoningParser", "RespcToolParser", "register", "template_for"]

logger = logging.getLogger("respc.integrations.vllm")

#: the name of both parsers: --tool-call-parser respc --reasoning-parser respc
NAME = "respc"
_REASONING = "reasoning"  # vLLM's delta and message key for reasoning
_TOOLS = "tool_calls"  # respc's tool-call field


def template_for(tokenizer: Any) -> CompiledTemplate:
    """The compiled template a vLLM tokenizer's model writes with (see the module doc),
    resolved once per tokenizer."""
    cached = getattr(tokenizer, "_respc_template", None)
    if isinstance(cached, CompiledTemplate):
        return cached
    compiled = resolve(tokenizer, who=f"--tool-call-parser/--reasoning-parser {NAME}")
    try:
        tokenizer._respc_template = compiled
    except Exception:  # a tokenizer that takes no attributes: resolved each time
        pass
    return compiled


# --- what the engine hands over as token ids -------------------------------------------------
#: ids decoded first from the end of a prompt; doubled until the current turn's start is in them
_TAIL = 64
#: characters a tail's decoded text keeps before the turn start it cuts at: the first tokens
#: of a tail may decode unlike the same tokens in the whole (a partial UTF-8 sequence, a
#: leading-space rule), so a cut that close to the tail's start is not trusted
_MARGIN = 16


def prompt_text(tokenizer: Any, compiled: CompiledTemplate, ids: Sequence[int]) -> str:
    """The text of a prompt's ids as respc's parser needs it: the ids from a little before
    the current turn's start (the template's last start anchor) decoded, not the whole
    history (decoding a long prompt costs far more than parsing its turn); all of them when
    no start anchor is found. The parser cuts the prompt at the same anchor either way."""
    n = len(ids)
    cut = compiled.Parser.cut_prefix
    decoded = _decoder(tokenizer)
    take = _TAIL
    while take < n:
        text = decoded(ids[n - take :])
        rest = cut(text)
        if len(text) - len(rest) >= _MARGIN:  # the anchor is in the tail, clear of its start
            return text
        take *= 4
    return decoded(ids)


def _decoder(tokenizer: Any) -> Any:
    """``ids -> text`` for ``tokenizer`` as the engine decodes output (``_common.decode``:
    special tokens kept, no clean-up), cached per tokenizer. For transformers' tokenizers
    over the ``tokenizers`` library that is its backend's ``decode(ids,
    skip_special_tokens=False)``, which transformers' own ``decode`` calls after some 30 µs
    of its own (checking each id's type): called straight, once checked to decode a
    sample of ids as ``_common.decode`` does."""
    found = tokenizer.__dict__.get("_respc_decoder") if hasattr(tokenizer, "__dict__") else None
    if found is not None:
        return found

    def slow(ids: Any) -> str:
        return decode(tokenizer, ids)

    found = slow
    backend = getattr(tokenizer, "_tokenizer", None)
    cls = type(tokenizer)
    if (
        type(backend).__module__.partition(".")[0] == "tokenizers"
        and callable(getattr(backend, "decode", None))
        and all(getattr(getattr(cls, name, None), "__module__", "").startswith("transformers.") for name in ("decode", "_decode"))
    ):
        raw = backend.decode

        def fast(ids: Any) -> str:
            return raw(ids if type(ids) is list else list(ids), skip_special_tokens=False)

        try:
            sample = list(range(min(len(tokenizer), 512)))
            if fast(sample) == slow(sample) and fast(sample[-7:]) == slow(sample[-7:]):
                found = fast
        except Exception:
            pass
    try:
        tokenizer._respc_decoder = found
    except Exception:  # a tokenizer that takes no attributes: checked each time
        pass
    return found


def _token_text(tokenizer: Any, token_id: int) -> str:
    """One token's text (special tokens kept), cached per tokenizer."""
    cache = tokenizer.__dict__.setdefault("_respc_token_texts", {}) if hasattr(tokenizer, "__dict__") else {}
    text = cache.get(token_id)
    if text is None:
        text = cache[token_id] = _decoder(tokenizer)([token_id])
    return text


def _unvalidated(cls: type, keys: tuple[str, ...] | None = None) -> Any:
    """A maker of ``cls`` instances (pydantic models) that skips validation: the values are
    respc's, of the fields' types already, and validating a DeltaMessage (vLLM's models log
    unknown fields in a wrap validator) costs more per chunk than respc's parse of the chunk.
    ``model_construct`` is no way out: it inspects each default factory on every call.
    ``make(**values)``; with ``keys``, ``make(*values)``: an instance with those fields set
    (a chunk's text delta, an argument fragment), made without a keyword dict. Use it
    through :func:`_checked`."""
    fields = cls.model_fields
    base = {name: field.get_default(call_default_factory=False) for name, field in fields.items()}
    factories = tuple((name, field.default_factory) for name, field in fields.items() if field.default_factory is not None)
    new = cls.__new__
    set_attribute = object.__setattr__
    extra = cls.model_config.get("extra") == "allow"

    def make(**values: Any) -> Any:
        made = new(cls)
        state = base.copy()
        for name, factory in factories:
            if name not in values:
                state[name] = factory()
        state.update(values)
        set_attribute(made, "__dict__", state)
        set_attribute(made, "__pydantic_fields_set__", set(values))
        set_attribute(made, "__pydantic_extra__", {} if extra else None)
        set_attribute(made, "__pydantic_private__", None)
        return made

    if keys is None:
        return make
    fresh = tuple((name, factory) for name, factory in factories if name not in keys)
    if len(keys) == 1:
        (key,) = keys

        def make_one(value: Any) -> Any:
            made = new(cls)
            state = base.copy()
            for name, factory in fresh:
                state[name] = factory()
            state[key] = value
            set_attribute(made, "__dict__", state)
            set_attribute(made, "__pydantic_fields_set__", {key})
            set_attribute(made, "__pydantic_extra__", {} if extra else None)
            set_attribute(made, "__pydantic_private__", None)
            return made

        return make_one

    def make_these(*values: Any) -> Any:
        made = new(cls)
        state = base.copy()
        for name, factory in fresh:
            state[name] = factory()
        state.update(zip(keys, values))
        set_attribute(made, "__dict__", state)
        set_attribute(made, "__pydantic_fields_set__", set(keys))
        set_attribute(made, "__pydantic_extra__", {} if extra else None)
        set_attribute(made, "__pydantic_private__", None)
        return made

    return make_these


def _same(made: Any, validated: Any) -> bool:
    return made.model_dump() == validated.model_dump() and made.model_dump_json(
        exclude_unset=True
    ) == validated.model_dump_json(exclude_unset=True)


def _checked(cls: type, *samples: dict, keys: tuple[str, ...] | None = None) -> Any:
    """:func:`_unvalidated`'s maker, checked once against the validating constructor on
    ``samples`` (the same ``model_dump`` and ``model_dump_json(exclude_unset=True)``);
    where this pydantic builds models otherwise, or a field's default is mutable (pydantic
    copies it per instance, the makers would share it), the validating constructor."""
    make = _unvalidated(cls, keys)
    defaults = [field.default for field in cls.model_fields.values() if field.default_factory is None and not field.is_required()]
    shared = any(not isinstance(value, (type(None), str, int, float, bool, tuple, frozenset)) for value in defaults)
    try:
        if not shared and all(_same(make(*(sample[k] for k in keys)) if keys else make(**sample), cls(**sample)) for sample in samples):
            return make
    except Exception:
        pass
    if keys is None:
        return cls
    return lambda *values: cls(**dict(zip(keys, values)))


_function_of = _checked(DeltaFunctionCall, {"name": "f", "arguments": "{"}, {"arguments": "{"})
_tool_call_of = _checked(DeltaToolCall, {"index": 0, "id": "c", "type": "function", "function": _function_of(name="f")}, {"index": 1})
_message_of = _checked(DeltaMessage, {"content": "a", "reasoning": "b", "tool_calls": [_tool_call_of(index=0)]}, {"content": "a"})
#: a chunk's one text delta: ``DeltaMessage(content=text)`` / ``DeltaMessage(reasoning=text)``
_content_of = _checked(DeltaMessage, {"content": "a"}, keys=("content",))
_reasoning_of = _checked(DeltaMessage, {_REASONING: "a"}, keys=(_REASONING,))
#: an argument fragment: ``DeltaToolCall(index=i, function=DeltaFunctionCall(arguments=text))``
_arguments_of = _checked(DeltaFunctionCall, {"arguments": "{"}, keys=("arguments",))
_fragment_of = _checked(DeltaToolCall, {"index": 0, "function": _arguments_of("{")}, keys=("index", "function"))
_calls_of = _checked(DeltaMessage, {"tool_calls": [_fragment_of(0, _arguments_of("{"))]}, keys=("tool_calls",))


# --- request helpers --------------------------------------------------------------------


def _named_tool(request: Any) -> str | None:
    choice = getattr(request, "tool_choice", None)
    if choice is None or isinstance(choice, str):
        return None
    function = getattr(choice, "function", None)
    name = getattr(function, "name", None) or getattr(choice, "name", None)
    if name is None and isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
    return name if isinstance(name, str) else None


def _is_strict(tool: dict) -> bool:
    return bool(tool.get("strict") or (tool.get("function") or {}).get("strict"))


def _guarantee(request: Any, tools: list[dict] | None) -> str | None:
    """What the request asks the output to guarantee that only a grammar can (None: nothing)."""
    if not tools or getattr(request, "tool_choice", None) == "none":
        return None
    if getattr(request, "tool_choice", None) == "required":
        return "tool_choice='required'"
    if _named_tool(request) is not None:
        return "a named tool_choice"
    if any(_is_strict(tool) for tool in tools):
        return "strict tools"
    if getattr(request, "parallel_tool_calls", True) is False:
        return "parallel_tool_calls=False"
    return None


def _tools_enabled(request: Any, auto: bool) -> bool:
    choice = getattr(request, "tool_choice", None)
    if choice == "none":
        return False
    if choice == "required" or _named_tool(request) is not None:
        return True
    return auto and choice in (None, "auto")


class _ToolText:
    """With tool parsing off (``tool_choice="none"``, auto tool choice off, no tool parser,
    or the reasoning parser on its own) the content a stream shows: the content as respc
    streams it with each tool region's text, as the model wrote it (delimiters included), in
    its place. vLLM's own ``response_template`` parser and its legacy tool parsers show
    such a call as content too (the server never returns calls then); nothing is lost.

    Fed the events of a ``DeltaParser(spans=True)``: the content field's chunks go through
    a ``TextField`` (stripped as the field strips, joined as it joins, but with no join
    right after a tool region, whose text already parts the blocks); a tool region's chunks
    as they are, its delimiters from their offsets in the text fed, less the whitespace at
    the content's start and end (where the content field strips): the content of an output
    without calls is the message's."""

    def __init__(self, compiled: CompiledTemplate, prefix: str) -> None:
        field = compiled.template.get("fields", {}).get("content")
        self.field = TextField("content", field) if field is not None else None
        #: where the output starts in the parser's input (the prompt's cut tail before it)
        self.base = len(compiled.Parser.cut_prefix(prefix)) if prefix else 0
        self.parts: list[str] = []  # the output fed (joined when a delimiter is read)
        self.strip = self.field is None or self.field.strip
        self.out: list[str] = []
        self.after_tool = False
        self.shown = False  # any content shown yet
        self.held = ""  # whitespace that ends the tool text shown so far: shown if more follows

    def fed(self, text: str) -> None:
        self.parts.append(text)

    def take(self, events: Iterable[dict]) -> str | None:
        """The content of ``events`` (None: none)."""
        out = self.out
        base = self.base
        for event in events:
            name = event.get("field")
            if name == _TOOLS:
                kind = event["type"]
                if kind == "region_chunk":
                    text = event["text"]
                    before = base - event.get("start", base)
                    if before > 0:  # (a region the prompt opened: its text there is the prompt's)
                        text = text[before:]
                else:  # a delimiter (open, close; malformed: the close or the rest read)
                    text = self._input(event.get("start", base), event.get("end", base))
                if text:
                    self._tool(text)
            elif name == "content" and self.field is not None:
                self._content(event)
        if not out:
            return None
        text = "".join(out)
        out.clear()
        return text

    def _input(self, start: int, end: int) -> str:
        parts = self.parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        base = self.base
        return parts[0][max(start - base, 0) : max(end - base, 0)] if parts else ""

    def _tool(self, text: str) -> None:
        self.after_tool = True
        if not self.strip:
            self.out.append(text)
            self.shown = True
            return
        if not self.shown:
            text = text.lstrip()
        core = text.rstrip()
        if not core:
            self.held += text
            return
        self.out.append(self.held + core if self.held else core)
        self.held = text[len(core) :]
        self.shown = True

    def _add(self, text: str) -> None:
        if not text:
            return
        field = self.field
        out = self.out
        if self.held:
            out.append(self.held)
            self.held = ""
        if field.join_due:
            out.append(field.join)
            field.join_due = False
        out.append(text)
        self.after_tool = False
        self.shown = True

    def _content(self, event: dict) -> None:
        field = self.field
        kind = event["type"]
        if kind == "region_chunk":
            if field.stream:
                self._add(field.piece(event["text"]))
        elif kind == "region_open":
            field.started = False
            field.ws = ""
            field.join_due = field.join is not None and field.blocks > 0 and not self.after_tool
        elif kind == "region_close":
            if field.join_due:  # (a block with nothing to send: its join still parts the blocks)
                field.join_due = False
                self._add(field.join)
            value = event.get("value")
            if not field.stream and isinstance(value, str):
                self._add(value)
            field.blocks += 1


class _Stream:
    """One generation through a DeltaParser, its deltas as vLLM ``DeltaMessage``s
    (:meth:`step`, which has ``Parser.parse_delta``'s signature).

    The text is fed as vLLM detokenized it, plus the stop token it stripped (``<|call|>``,
    a closer, an end-of-turn token: the last token id's text when the text does not end
    with it). Keeps a tool parser's ``prev_tool_call_arr`` / ``streamed_args_for_tool`` /
    ``current_tool_id`` as what was sent. With ``parse_tools`` off, tool calls are shown
    as content (:class:`_ToolText`)."""

    def __init__(self, compiled, tokenizer, prefix: str, tools, *, tool_parser=None, parse_tools=True):
        self.tokenizer = tokenizer
        shown = not parse_tools and _TOOLS in compiled.template.get("fields", {})
        self.deltas = DeltaParser(
            compiled, prefix=prefix, tools=tools, reasoning_key=_REASONING, on_malformed="event", spans=shown
        )
        self.tool_text = _ToolText(compiled, prefix) if shown else None
        if shown:
            self.tool_text.take(self.deltas.events)  # the prompt's events (its own text shows nothing)
        self.tool_parser = tool_parser
        self.done = False
        self.before = ""  # the text of the chunk before the last (a stop token's text may end it)
        self.args: dict[int, list[str]] = {}  # each call's argument fragments as sent

    def restored(self, text: str, token_ids: Sequence[int]) -> str:
        """``text`` with the stop token vLLM left out of it put back."""
        return _restored(self.tokenizer, text, token_ids, self.before)

    def step(
        self,
        delta_text: str,
        delta_token_ids: Sequence[int] = (),
        request: Any = None,
        prompt_token_ids: Any = None,
        *,
        finished: bool = False,
    ) -> DeltaMessage | None:
        """One engine output's delta; the parser's ``parse_delta`` once its stream runs."""
        if finished:
            return self._finish(delta_text, delta_token_ids)
        if not delta_text or self.done:
            return None
        self.before = delta_text
        shown = self.tool_text
        if shown is not None:  # tool calls shown as content
            shown.fed(delta_text)
            out = self.deltas.feed(delta_text)
            return self._shown(out, shown.take(self.deltas.events))
        out = self.deltas.feed(delta_text)
        if not out:
            return None
        if len(out) == 1:  # most chunks: one text delta
            delta = out[0]
            piece = delta.get("content")
            if piece is not None:
                return _content_of(piece)
            piece = delta.get(_REASONING)
            if piece is not None:
                return _reasoning_of(piece)
            calls = delta.get("tool_calls")
            if calls is not None and len(calls) == 1:  # one call's delta (an argument fragment)
                return _calls_of([self._call(calls[0])])
        return self._message(out)

    def _finish(self, text: str, token_ids: Sequence[int]) -> DeltaMessage | None:
        if self.done:
            return None
        self.done = True
        text = self.restored(text, token_ids)
        deltas = self.deltas
        shown = self.tool_text
        if shown is None:
            out = deltas.feed(text) if text else []
            out += deltas.finish(length=True)[0]
            message = self._message(out)
            self._settle()
            return message
        out, content = [], []
        if text:
            shown.fed(text)
            out = deltas.feed(text)
            content.append(shown.take(deltas.events))
        out += deltas.finish(length=True)[0]
        content.append(shown.take(deltas.events))
        return self._shown(out, "".join(c for c in content if c) or None)

    @staticmethod
    def _shown(deltas: list[dict], content: str | None) -> DeltaMessage | None:
        reasoning = [delta[_REASONING] for delta in deltas if _REASONING in delta]
        if not reasoning:
            return None if content is None else _content_of(content)
        if content is None:
            return _reasoning_of("".join(reasoning))
        return _message_of(reasoning="".join(reasoning), content=content)

    def _settle(self) -> None:
        """The tool parser's ``streamed_args_for_tool`` / ``prev_tool_call_arr`` made what
        was sent (the server may read them once the stream ends:
        ``get_remaining_unstreamed_args()`` then has nothing left to add)."""
        parser = self.tool_parser
        if parser is None:
            return
        for index, parts in self.args.items():
            text = parser.streamed_args_for_tool[index] = "".join(parts)
            parser.prev_tool_call_arr[index]["arguments"] = text

    def _message(self, deltas: list[dict]) -> DeltaMessage | None:
        content: list[str] = []
        reasoning: list[str] = []
        calls: list[DeltaToolCall] = []
        for delta in deltas:
            if "content" in delta:
                content.append(delta["content"])
            elif _REASONING in delta:
                reasoning.append(delta[_REASONING])
            elif "tool_calls" in delta:
                for call in delta["tool_calls"]:
                    calls.append(self._call(call))
        if not (content or reasoning):
            return _calls_of(calls) if calls else None
        fields: dict[str, Any] = {}
        if reasoning:
            fields["reasoning"] = "".join(reasoning)
        if content:
            fields["content"] = "".join(content)
        if calls:
            fields["tool_calls"] = calls
        return _message_of(**fields)

    def _call(self, call: dict) -> DeltaToolCall:
        function = call.get("function") or {}
        index = call["index"]
        arguments = function.get("arguments")
        parser = self.tool_parser
        if parser is not None:
            while len(parser.prev_tool_call_arr) <= index:
                parser.prev_tool_call_arr.append({"name": "", "arguments": ""})
                parser.streamed_args_for_tool.append("")
            if "name" in function:
                parser.prev_tool_call_arr[index]["name"] = function["name"]
                parser.current_tool_id = index
                parser.current_tool_name_sent = True
            if arguments:
                # kept as fragments, joined into the parser's lists when the stream ends:
                # adding each to a growing string copies the argument per chunk
                self.args.setdefault(index, []).append(arguments)
        if len(call) == 2 and len(function) == 1 and arguments is not None:  # most: an argument fragment
            return _fragment_of(index, _arguments_of(arguments))
        # the fields the delta has, no more (as the validating constructors leave the
        # others unset, and the server's exclude_unset leaves them out of the chunk)
        return _tool_call_of(
            **{key: call[key] for key in ("index", "id", "type") if call.get(key) is not None},
            function=_function_of(**{key: value for key, value in function.items() if value is not None}),
        )


def _restored(tokenizer: Any, text: str, token_ids: Sequence[int], before: str = "") -> str:
    """``text`` (after ``before``, the output streamed so far) with the stop token vLLM left
    out of it put back: the last token's text where the output does not end with it."""
    if len(token_ids):
        last = _token_text(tokenizer, token_ids[-1])
        if last and not (before + text).endswith(last):
            return text + last
    return text


def _whole(
    compiled, tokenizer, prefix: str, output: str, token_ids: Sequence[int], tools, *, parse_tools: bool = True
) -> tuple[str | None, str | None, list[dict]]:
    """A whole output as the stream adds up to (stop token restored): its reasoning, its
    content and its calls (OpenAI message dicts; with ``parse_tools`` off, none: they are
    in the content as written)."""
    if not parse_tools and _TOOLS in compiled.template.get("fields", {}):  # calls shown as content
        stream = _Stream(compiled, tokenizer, prefix, tools, parse_tools=False)
        delta = stream.step(output, token_ids, finished=True)
        return (None, None, []) if delta is None else (delta.reasoning, delta.content, [])
    text = _restored(tokenizer, output, token_ids)
    # one parse of the whole text, what the stream's message is (a region the text leaves
    # open or that fails to parse left out, as the stream's finish(length=True) leaves it)
    message = message_dict(compiled.Parser.parse_whole(prefix or "", text, tools, []), _REASONING)
    return message.get(_REASONING), message.get("content"), message.get("tool_calls") or []


# --- reasoning: where it ends ------------------------------------------------------------
def _reasoning_ended(compiled: CompiledTemplate, text: str) -> bool:
    """Whether the current turn of ``text`` (a prompt, or a prompt and output) is past its
    reasoning: the reasoning field closed, or another field begun; False while reasoning is
    open or may still open."""
    if "reasoning_content" not in compiled.template.get("fields", {}):
        return True
    parser = compiled.parser(prefix=text, on_malformed="event")
    return _ended(parser.initial_events, None) is True


def _ended(events: Iterable[dict], state: bool | None) -> bool | None:
    """Follow events: True once reasoning ended, False inside reasoning, None before either."""
    for event in events:
        kind, field = event.get("type"), event.get("field")
        if field == "reasoning_content":
            if kind == "region_open":
                state = False
            elif kind in ("region_close", "region_malformed"):
                state = True
        elif state is not True and kind in ("region_open", "region_chunk") and field is not None:
            if kind == "region_chunk" and not str(event.get("text", "")).strip():
                continue
            if state is None or kind == "region_open":
                state = True
    return state


class _ReasoningCount:
    """The reasoning tokens of one growing output (``count_reasoning_tokens``): each token's
    text fed once to a parser that starts where the prompt leaves it; a token counts when
    its text overlaps the inside of a reasoning region (between its delimiters; a region
    still open reaches to the end). A token is counted once the parser's events cover its
    text, so the count only grows as the output does (text the parser holds, a closer that
    may be starting, is counted once it is decided)."""

    def __init__(self, compiled: CompiledTemplate, prefix: str, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.parser = compiled.parser(prefix=prefix, spans=True, on_malformed="event")
        self.at = self.start = len(type(self.parser).cut_prefix(prefix)) if prefix else 0
        self.ids: list[int] = []
        self.ends: list[int] = []  # each token's end in the parser's input
        self.spans: list[tuple[int, float]] = []  # reasoning insides, closed
        self.open: int | None = None  # where the open reasoning region's inside starts
        self.known = 0  # the parser's events cover its input up to here
        self.settled = 0  # tokens counted for good ...
        self.settled_count = 0  # ... and how many of them are reasoning
        self._track(self.parser.initial_events)

    def continues(self, token_ids: Sequence[int]) -> bool:
        n = len(self.ids)
        return len(token_ids) >= n and list(token_ids[:n]) == self.ids

    def count(self, token_ids: Sequence[int]) -> int:
        new = list(token_ids[len(self.ids) :])
        if new:
            texts = [_token_text(self.tokenizer, token) for token in new]
            for text in texts:
                self.at += len(text)
                self.ends.append(self.at)
            self.ids.extend(new)
            self._track(self.parser.feed("".join(texts)))
        spans = self.spans if self.open is None else [*self.spans, (self.open, float("inf"))]
        known, ends = self.known, self.ends
        k, count = self.settled, self.settled_count
        previous = ends[k - 1] if k else self.start
        # the tokens the parser's events cover (past them it holds text a closer may start):
        # each counts when [previous, end) overlaps a reasoning inside, once and for good
        while k < len(ends) and ends[k] <= known:
            end = ends[k]
            count += any(a < end and previous < b for a, b in spans)
            previous = end
            k += 1
        self.settled, self.settled_count = k, count
        return count

    def _track(self, events: Iterable[dict]) -> None:
        for event in events:
            end = event.get("end")
            if end is None and event.get("type") == "region_chunk":
                end = event.get("start", 0) + len(event.get("text", ""))
            if end is not None and end > self.known:
                self.known = end
            if event.get("field") != "reasoning_content" or event.get("type") == "region_chunk":
                continue
            if event["type"] == "region_open":
                self.open = event["end"]
            elif self.open is not None:  # region_close / region_malformed
                self.spans.append((self.open, event["start"] if event["type"] == "region_close" else self.known))
                self.open = None


class RespcReasoningParser(ReasoningParser):
    """The ``respc`` reasoning parser: where reasoning ends (for structured outputs and the
    server), and, on its own, reasoning and content from the output. Served together with
    the ``respc`` tool parser, :class:`RespcParser` parses the output once for both."""

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self.compiled = template_for(tokenizer)
        self._prefix = ""
        self._stream: _Stream | None = None

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        return _reasoning_ended(self.compiled, prompt_text(self.model_tokenizer, self.compiled, input_ids))

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Iterable[int]) -> bool:
        # input_ids: any sequence (vLLM 0.34's structured outputs pass a TokenIdsView, 0.33 a list)
        return self.is_reasoning_end(input_ids)

    # (vLLM 0.34 asks a reasoner for ``reasoning_end_token_ids`` / ``find_reasoning_end``
    # first: the base class's "none" is right, a template's reasoning need not end at one
    # token, so vLLM falls back on is_reasoning_end_streaming as 0.33 does)

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        """The ids after the reasoning of the current turn ends (all of them when it ended
        in the prompt, none while it goes on): from the token where its closer ends."""
        if "reasoning_content" not in self.compiled.template.get("fields", {}):
            return list(input_ids)
        parser = self.compiled.parser(prefix=self._prefix, spans=True, on_malformed="event")
        if _ended(parser.initial_events, None) is True:
            return list(input_ids)
        at = len(type(parser).cut_prefix(self._prefix)) if self._prefix else 0
        ends = []  # each token's end in the parser's input
        state = None
        for k, token in enumerate(input_ids):
            text = _token_text(self.model_tokenizer, token)
            at += len(text)
            ends.append(at)
            events = parser.feed(text)
            state = _ended(events, state)
            if state is True:
                close = next((e["end"] for e in events if e.get("field") == "reasoning_content" and "end" in e and e["type"] != "region_chunk"), None)
                first = k + 1 if close is None else next((j for j, end in enumerate(ends) if end > close), k + 1)
                return list(input_ids[first:])
        return []

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        self._prefix = prompt_text(self.model_tokenizer, self.compiled, prompt_token_ids)
        self._stream = None
        self._counter = None

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """As :meth:`RespcParser.count_reasoning_tokens`."""
        if "reasoning_content" not in self.compiled.template.get("fields", {}):
            return 0
        counter = getattr(self, "_counter", None)
        if counter is None or not counter.continues(token_ids):
            counter = self._counter = _ReasoningCount(self.compiled, self._prefix, self.model_tokenizer)
        return counter.count(token_ids)

    # vLLM's thinking-token budget (its ReasoningConfig reads these at startup) counts the
    # tokens after the start text and forces the end text: given where the template's
    # reasoning opens and closes with one literal each (respc.integrations._common.
    # reasoning_literals), None where it may open or close otherwise (a lookahead close, a
    # pattern), since then the budget would count or force at the wrong place
    @property
    def reasoning_start_str(self) -> str | None:
        return reasoning_literals(self.compiled)[0]

    @property
    def reasoning_end_str(self) -> str | None:
        return reasoning_literals(self.compiled)[1]

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        # on its own a reasoning parser leaves the calls to a tool parser: in the content, as written
        reasoning, content, _ = _whole(self.compiled, self.model_tokenizer, self._prefix, model_output, (), None, parse_tools=False)
        return reasoning, content

    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> DeltaMessage | None:
        if self._stream is None or not previous_text:
            self._stream = _Stream(self.compiled, self.model_tokenizer, self._prefix, None, parse_tools=False)
        return self._stream.step(delta_text)


class RespcToolParser(ToolParser):
    """The ``respc`` tool parser. Served with vLLM's unified ``Parser``,
    :class:`RespcParser` does the work (and keeps this parser's ``prev_tool_call_arr`` /
    ``streamed_args_for_tool`` as what it sent); on its own it parses the text it is given
    after the prompt it was told (``set_prompt_token_ids``)."""

    supports_required_and_named = False  # respc parses the model's own format, never a JSON list

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, tools)
        self.compiled = template_for(tokenizer)
        self.request_tools = tools
        self._prefix = ""
        self._stream: _Stream | None = None

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        self._prefix = prompt_text(self.model_tokenizer, self.compiled, prompt_token_ids)
        self._stream = None

    def adjust_request(self, request: Any) -> Any:
        return _adjust(self.compiled, self.model_tokenizer, self._prefix, request, tool_parser=True)

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        tools = stream_tools(getattr(request, "tools", None) or self.request_tools)
        _, content, found = _whole(self.compiled, self.model_tokenizer, self._prefix, model_output, (), tools)
        calls = [ToolCall(id=call["id"], type="function", function=FunctionCall(**call["function"])) for call in found]
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=content)

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> DeltaMessage | None:
        if self._stream is None or not previous_text:
            tools = stream_tools(getattr(request, "tools", None) or self.request_tools)
            self._stream = _Stream(self.compiled, self.model_tokenizer, self._prefix, tools, tool_parser=self)
        return self._stream.step(delta_text)


# --- adjust_request: special tokens and the grammar's guarantees -------------------------
def _structured(request: Any, tag: dict, *, from_start: bool) -> None:
    from vllm.sampling_params import StructuredOutputsParams

    params = StructuredOutputsParams(structural_tag=json.dumps(tag))
    if hasattr(request, "_parser_structured_outputs") and not hasattr(request, "response_format"):
        request._parser_structured_outputs = params  # a Responses API request
    else:
        request.structured_outputs = params
        if hasattr(request, "response_format"):
            request.response_format = None
    if from_start and hasattr(request, "_grammar_from_parser"):
        request._grammar_from_parser = True  # the tag covers the reasoning too


def _adjust(compiled: CompiledTemplate, tokenizer: Any, prefix: str, request: Any, *, tool_parser: bool) -> Any:
    markers = special_markers(tokenizer, compiled)
    if markers and hasattr(request, "skip_special_tokens"):
        request.skip_special_tokens = False  # the format's markers are special tokens: keep them
        if hasattr(request, "spaces_between_special_tokens"):
            request.spaces_between_special_tokens = False
    if not tool_parser:
        return request
    tools = tool_dicts(getattr(request, "tools", None))
    wanted = _guarantee(request, tools)
    if wanted is None:
        return request
    from vllm.exceptions import VLLMValidationError

    grammar = getattr(compiled, "grammar", None)
    if grammar is None:
        raise VLLMValidationError(
            f"--tool-call-parser {NAME}: this respc has no template grammar (CompiledTemplate.grammar), "
            f"so it cannot guarantee {wanted}; upgrade respc",
            parameter="tool_choice",
        )
    choice = getattr(request, "tool_choice", None)
    named = _named_tool(request)
    try:
        tag = grammar(
            tools,
            format="structural_tag",
            tool_choice=named if named is not None else (choice if isinstance(choice, str) else "auto"),
            parallel_tool_calls=getattr(request, "parallel_tool_calls", True) is not False,
            prefix=prefix,
            special_tokens=markers or None,
        )
    except Exception as error:  # respc.GrammarUnsupported, a tool the grammar cannot take
        raise VLLMValidationError(
            f"--tool-call-parser {NAME}: cannot guarantee {wanted} for this template: {error}",
            parameter="tool_choice",
        ) from error
    tag = end_calls_at_stop(tag, stop_texts(tokenizer, getattr(request, "stop_token_ids", None)))
    _structured(request, tag, from_start=True)
    return request


# --- the unified parser --------------------------------------------------------------------
class RespcParser(Parser):
    """One request's parser: the output parsed once, reasoning, content and tool calls, with
    respc's DeltaParser (``parse_delta`` streams, ``parse`` the whole output)."""

    reasoning_parser_cls = RespcReasoningParser
    tool_parser_cls = RespcToolParser
    always_adjust_request = True
    _enable_auto_tools = True

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, enable_auto_tools: bool | None = None, **kwargs: Any):
        self.compiled = template_for(tokenizer)
        super().__init__(tokenizer, tools, *args, **kwargs)
        if enable_auto_tools is not None:
            self._enable_auto_tools = enable_auto_tools
        self._tools_given = tools  # as the server gives them (request.tools): read once, when a stream starts
        self._tools: list[dict] | None = None
        self._prompt_ids: Sequence[int] | None = None
        self._prefix = ""
        self._stream: _Stream | None = None
        self._counter: _ReasoningCount | None = None

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        known = self._prompt_ids
        if known is not None and (
            prompt_token_ids is known or (len(prompt_token_ids) == len(known) and list(prompt_token_ids) == list(known))
        ):
            return
        self._prompt_ids = prompt_token_ids  # (kept as given: a long prompt is not copied)
        self._prefix = prompt_text(self.model_tokenizer, self.compiled, prompt_token_ids)
        self._stream = None
        self.__dict__.pop("parse_delta", None)  # (the last stream's step, see parse_delta)
        self._counter = None
        for split in (self._reasoning_parser, self._tool_parser):
            if split is not None:
                split._prefix = self._prefix

    def adjust_request(self, request: Any) -> Any:
        return _adjust(self.compiled, self.model_tokenizer, self._prefix, request, tool_parser=self._tool_parser is not None)

    def is_reasoning_end(self, input_ids: list[int]) -> bool:
        if self._reasoning_parser is None:
            return True
        return _reasoning_ended(self.compiled, prompt_text(self.model_tokenizer, self.compiled, input_ids))

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """The output tokens the template parses as reasoning (usage's
        ``reasoning_tokens``), reasoning the prompt opened included; the server calls it with
        the output so far, so each token is parsed once."""
        if self._reasoning_parser is None or "reasoning_content" not in self.compiled.template.get("fields", {}):
            return 0
        counter = self._counter
        if counter is None or not counter.continues(token_ids):
            counter = self._counter = _ReasoningCount(self.compiled, self._prefix, self.model_tokenizer)
        return counter.count(token_ids)

    def _request_tools(self, request: Any) -> list[dict] | None:
        """The request's tools as respc types arguments by (those the parser was made with,
        read once)."""
        tools = getattr(request, "tools", None)
        if tools is not None and tools is not self._tools_given:
            return stream_tools(tools) or self._given_tools()
        return self._given_tools()

    def _given_tools(self) -> list[dict] | None:
        if self._tools is None and self._tools_given:
            self._tools = stream_tools(self._tools_given)
        return self._tools

    def _new_stream(self, request: Any, auto: bool) -> _Stream:
        return _Stream(
            self.compiled,
            self.model_tokenizer,
            self._prefix,
            self._request_tools(request),
            tool_parser=self._tool_parser,
            parse_tools=self._tool_parser is not None and _tools_enabled(request, auto),
        )

    def _route(self, delta: DeltaMessage | None, request: Any) -> DeltaMessage | None:
        """Reasoning without a reasoning parser is content, and so is reasoning the request
        does not include."""
        if delta is None:
            return None
        if delta.reasoning and (self._reasoning_parser is None):
            delta.content = delta.reasoning + (delta.content or "")
            delta.reasoning = None
        if delta.reasoning and not getattr(request, "include_reasoning", True):
            delta.reasoning = None
        if delta.reasoning is None and delta.content is None and not delta.tool_calls:
            return None
        return delta

    def parse(
        self,
        model_output: str,
        request: Any,
        enable_auto_tools: bool = False,
        model_output_token_ids: Sequence[int] = (),
    ) -> tuple[str | None, str | None, list[FunctionCall] | None]:
        self._initialize_history_tool_call_cnt(request)
        reasoning, content, found = _whole(
            self.compiled,
            self.model_tokenizer,
            self._prefix,
            model_output,
            model_output_token_ids if model_output_token_ids is not None else (),
            self._request_tools(request),
            parse_tools=self._tool_parser is not None and _tools_enabled(request, enable_auto_tools),
        )
        if self._reasoning_parser is None and reasoning:
            content, reasoning = reasoning + (content or ""), None
        calls = [FunctionCall(id=call["id"], **call["function"]) for call in found]
        return reasoning, content, calls or None

    def parse_delta(
        self,
        delta_text: str,
        delta_token_ids: list[int],
        request: Any,
        prompt_token_ids: list[int] | None = None,
        *,
        finished: bool,
    ) -> DeltaMessage | None:
        stream = self._stream
        if stream is None:  # the first delta: the prompt, the stream, how its deltas are routed
            self._initialize_history_tool_call_cnt(request)
            if self._prompt_ids is None and prompt_token_ids is not None:
                self.set_prompt_token_ids(prompt_token_ids)
            stream = self._stream = self._new_stream(request, self._enable_auto_tools)
            self._as_sent = self._reasoning_parser is not None and getattr(request, "include_reasoning", True)
            if self._as_sent:
                # the deltas go out as the stream makes them: from the next chunk on the
                # server calls the stream's step itself (one call less per chunk)
                self.parse_delta = stream.step
        delta = stream.step(delta_text, delta_token_ids, finished=finished)
        if delta is None or self._as_sent:
            return delta
        return self._route(delta, request)


# --- registration ----------------------------------------------------------------------------
_PATCHED = "_respc_compose"


def _compose_with_respc() -> None:
    """Make vLLM's ParserManager compose the ``respc`` parsers into :class:`RespcParser`
    (vLLM's own composition would drive them one after the other, parsing twice)."""
    try:
        from vllm.parser.parser_manager import ParserManager
    except ImportError:  # a vLLM without the unified Parser: the split parsers serve
        return
    original = ParserManager.__dict__.get("_compose_parser")
    if original is None or getattr(original, _PATCHED, False):
        return
    compose = original.__func__

    def _compose_parser(cls, *args, **kwargs):
        names = {kwargs.get("tool_parser_name"), kwargs.get("reasoning_parser_name")}
        if NAME not in names:
            return compose(cls, *args, **kwargs)
        reasoning_name = kwargs.get("reasoning_parser_name")
        tool_name = kwargs.get("tool_parser_name")
        reasoning_cls = ParserManager.get_reasoning_parser(reasoning_name) if reasoning_name else None
        tool_cls = ParserManager.get_tool_parser(tool_name, kwargs.get("enable_auto_tools", False), kwargs.get("model_name"))
        for chosen, flag in ((reasoning_cls, f"--reasoning-parser {reasoning_name}"), (tool_cls, f"--tool-call-parser {tool_name}")):
            if chosen is not None and not issubclass(chosen, (RespcReasoningParser, RespcToolParser)):
                raise TypeError(f"{flag} cannot be combined with the {NAME} parser: use {NAME} for both")
        if reasoning_cls is None and tool_cls is None:
            return None
        tokenizer = kwargs.get("tokenizer")
        if tokenizer is not None:
            try:
                template_for(tokenizer)
            except Exception as error:
                raise TypeError(str(error)) from error
        return type(
            "RespcParser",
            (RespcParser,),
            {
                "reasoning_parser_cls": reasoning_cls,
                "tool_parser_cls": tool_cls,
                "_enable_auto_tools": bool(kwargs.get("enable_auto_tools", False)),
            },
        )

    setattr(_compose_parser, _PATCHED, True)
    ParserManager._compose_parser = classmethod(_compose_parser)


def register() -> None:
    """Register the ``respc`` tool and reasoning parsers with vLLM (idempotent). The
    ``vllm.general_plugins`` entry point calls it in every vLLM process."""
    ToolParserManager.tool_parsers[NAME] = RespcToolParser
    ReasoningParserManager.reasoning_parsers[NAME] = RespcReasoningParser
    _compose_with_respc()


register()
