"""respc inside SGLang: ``--tool-call-parser respc --reasoning-parser respc``.

::

    pip install respc            # the plugin is an ``sglang.srt.plugins`` entry point
    sglang serve --model-path MODEL --tool-call-parser respc --reasoning-parser respc

SGLang loads its general plugins before it parses its arguments, so installing respc is
enough: :func:`register` adds a tool-call detector (to ``FunctionCallParser``'s table) and a
reasoning detector (to ``ReasoningParser``'s table), both named ``respc``. Calling
``register()`` yourself (or importing this module and calling it) does the same, any
number of times.

**The template** (:func:`choose_template`): the tokenizer's ``response_template`` (an
attribute, or ``init_kwargs["response_template"]``: a template dict, a bundled name or a
path), else the environment variable ``RESPC_TEMPLATE`` (a bundled name or a path to a
template JSON or a ``tokenizer_config.json``), else ``respc.for_model(tokenizer)`` where this
respc has it (the bundled family detected from the chat template); else the server stops at
startup with an error that names ``RESPC_TEMPLATE``.

**One parse per output.** SGLang runs the reasoning parser on each delta first and hands the
text it calls normal to the tool-call parser. The respc reasoning detector parses the output
once with the whole template (:class:`respc.openai.DeltaParser`: reasoning, content and tool
calls) and leaves its tool-call deltas for the respc tool detector that SGLang calls next in
the same request (a context variable, checked against the text SGLang passes between them);
the tool detector parses the output itself only when no respc reasoning detector ran before
it (``--reasoning-parser`` another one or none, or ``separate_reasoning=False``).

What SGLang does around the detectors (0.5.23, read in its ``serving_chat.py``): the prompt
reaches them as text decoded with special tokens kept (the ``prefix``), output is detokenized
with special tokens kept (the detectors are of SGLang's response-template kind, for which it
turns ``skip_special_tokens`` off), and ``tool_choice="required"``, a named tool, ``strict``
tools and ``parallel_tool_calls=False`` take the template's structural tag
(``CompiledTemplate.grammar(..., format="structural_tag")``) where respc has the grammar.
SGLang 0.5.22 has no response-template detectors: there the detectors are plain ones (no
prompt prefix reaches them, and output keeps special tokens only where the request asks).
"""

from __future__ import annotations

import contextvars
import json
import os
import re
from typing import Any

from ..api import CompiledTemplate, compile_template, resolve_template
from ..openai import DeltaParser
from ..runtime.deltas import arguments_text, function_name
from ._common import tool_dicts

__all__ = ["NAME", "ENV", "register", "choose_template", "TemplateNotChosen"]

#: the name both parsers are registered under (``--tool-call-parser respc``)
NAME = "respc"
#: the environment variable that names the template when the tokenizer has none
ENV = "RESPC_TEMPLATE"


class TemplateNotChosen(ValueError):
    """No response template for the served model: the tokenizer has none, ``RESPC_TEMPLATE``
    is not set, and respc could not tell the model's family."""


# -- the template ------------------------------------------------------------------------

_CHOSEN: dict[tuple, CompiledTemplate] = {}


def _template_of(value: Any, where: str) -> CompiledTemplate:
    try:
        if isinstance(value, (str, os.PathLike)):
            value = resolve_template(value)
        return compile_template(value)
    except Exception as error:
        raise type(error)(f"{where}: {error}") if isinstance(error, ValueError) else error


def choose_template(tokenizer: Any = None) -> CompiledTemplate:
    """The response template respc parses the served model's output with (see the module
    docstring for the order); compiled once per tokenizer and setting."""
    env = os.environ.get(ENV) or None
    key = (id(tokenizer), env)
    found = _CHOSEN.get(key)
    if found is not None and (tokenizer is None or getattr(tokenizer, "_respc_template", None) is found):
        return found
    template = getattr(tokenizer, "response_template", None) if tokenizer is not None else None
    where = "tokenizer.response_template"
    if template is None and tokenizer is not None:
        template = (getattr(tokenizer, "init_kwargs", None) or {}).get("response_template")
        where = "tokenizer init_kwargs['response_template']"
    if template is not None:
        compiled = _template_of(template, where)
    elif env is not None:
        compiled = _template_of(env, f"{ENV}={env!r}")
    else:
        for_model = None
        if tokenizer is not None:
            import respc

            for_model = getattr(respc, "for_model", None)
        compiled = None
        if for_model is not None:
            try:
                compiled = for_model(tokenizer)
            except Exception as error:  # the family could not be told: say what to do
                raise TemplateNotChosen(
                    f"respc could not tell the model's response template ({error}); set {ENV} to a "
                    "bundled name (`respc list`) or a path to a template JSON"
                ) from error
        if compiled is None:
            raise TemplateNotChosen(
                f"respc has no response template for this model: the tokenizer has no "
                f"response_template; set {ENV} to a bundled name (`respc list`, e.g. {ENV}=qwen3) "
                "or a path to a template JSON or tokenizer_config.json"
            )
    if tokenizer is not None:
        try:
            tokenizer._respc_template = compiled
        except Exception:  # a tokenizer that takes no attributes: choose again next time
            return compiled
    if len(_CHOSEN) > 64:
        _CHOSEN.clear()
    _CHOSEN[key] = compiled
    return compiled


def _literal(pattern: str | None) -> str:
    """The literal text a delimiter pattern starts with (leading whitespace skipped; its
    first alternative), or "" when it starts with no literal."""
    if not pattern:
        return ""
    try:
        import re._parser as sre  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import sre_parse as sre  # type: ignore[no-redef]
    try:
        items = list(sre.parse(pattern))
    except Exception:
        return ""
    if len(items) == 1 and str(items[0][0]) == "BRANCH":
        items = list(items[0][1][1][0])
    out = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif not out and name in ("MAX_REPEAT", "MIN_REPEAT"):
            continue  # leading \s* and the like
        else:
            break
    return "".join(out)


def _delimiter(field: dict | None, key: str) -> str:
    if not field:
        return ""
    literal = field.get(key)
    if isinstance(literal, str):
        return literal
    if isinstance(literal, list) and literal and isinstance(literal[0], str):
        return literal[0]
    return _literal(field.get(f"{key}_pattern"))


# -- the shared parse ----------------------------------------------------------------------


class _Handoff:
    """What a respc reasoning detector read of one delta, for the respc tool detector SGLang
    calls next with the normal text: the content it returned as normal and the call deltas."""

    __slots__ = ("source", "normal", "calls", "taken")

    def __init__(self, source: Any, normal: str, calls: list):
        self.source = source
        self.normal = normal
        self.calls = calls
        self.taken = False


_HANDOFF: contextvars.ContextVar[_Handoff | None] = contextvars.ContextVar("respc_sglang_handoff", default=None)


def _hand_over(source: Any, normal: str, calls: list, add: bool = False) -> None:
    """Leave what ``source`` read for the tool detector; with ``add`` (the end of the
    stream), added to what its last chunk left when that was not taken yet (SGLang calls
    the reasoning parser's chunk and end parses, then the tool parser once with both)."""
    handoff = _HANDOFF.get()
    if add and handoff is not None and handoff.source is source and not handoff.taken:
        handoff.normal += normal
        handoff.calls += calls
    else:
        _HANDOFF.set(_Handoff(source, normal, calls))


class _Stream:
    """One output through ``DeltaParser``: each feed's reasoning text, content text and call
    deltas ``(index, name or None, arguments fragment)``."""

    __slots__ = ("parser", "finished")

    def __init__(self, compiled: CompiledTemplate, prefix: str | None, tools: list[dict] | None):
        self.parser = DeltaParser(compiled, prefix=prefix, tools=tools, on_malformed="event")
        self.finished = False

    def _split(self, deltas: list[dict]) -> tuple[str, str, list[tuple[int, str | None, str]]]:
        reasoning = content = ""
        calls = []
        for delta in deltas:
            text = delta.get("content")
            if text:
                content += text
            text = delta.get("reasoning_content")
            if text:
                reasoning += text
            for call in delta.get("tool_calls") or ():
                index = call["index"]
                function = call.get("function") or {}
                name = function.get("name")
                fragment = function.get("arguments") or ""
                if calls and calls[-1][0] == index and name is None and calls[-1][2] is not None:
                    calls[-1] = (index, calls[-1][1], calls[-1][2] + fragment)
                else:
                    calls.append((index, name, fragment))
        return reasoning, content, calls

    def feed(self, text: str):
        if self.finished or not text:
            return "", "", []
        return self._split(self.parser.feed(text))

    def finish(self):
        if self.finished:
            return "", "", []
        self.finished = True
        deltas, _ = self.parser.finish()
        return self._split(deltas)


def _whole(compiled: CompiledTemplate, text: str, prefix: str | None, tools: list[dict] | None) -> tuple:
    """A whole output: ``(reasoning, content, calls)``, the calls as ``(index, name,
    arguments text)``, as ``respc.openai.to_message`` writes them (SGLang makes the ids)."""
    message, _errors = compiled.parse(text, prefix=prefix or "", tools=tools, on_malformed="collect")
    reasoning = message.get("reasoning_content")
    content = message.get("content")
    calls = message.get("tool_calls")
    return (
        reasoning if isinstance(reasoning, str) else "",
        content if isinstance(content, str) else "",
        [
            (index, function_name(call.get("function") if isinstance(call, dict) else None),
             arguments_text(call.get("function") if isinstance(call, dict) else call))
            for index, call in enumerate(calls)
        ] if isinstance(calls, list) else [],
    )


# -- the detectors -------------------------------------------------------------------------


def _constructor(model: type, names: tuple[str, ...]):
    """``f(*values)``: an instance of the pydantic model ``model`` with these fields, as
    ``model.model_construct`` makes it (no validation), made directly; ``model_construct``
    itself where the direct one does not give the same instance (another pydantic)."""
    new, put = object.__new__, object.__setattr__
    fields = set(names)

    def direct(*values: Any) -> Any:
        obj = new(model)
        put(obj, "__dict__", dict(zip(names, values)))
        put(obj, "__pydantic_fields_set__", fields)
        put(obj, "__pydantic_extra__", None)
        put(obj, "__pydantic_private__", None)
        return obj

    def constructed(*values: Any) -> Any:
        return model.model_construct(**dict(zip(names, values)))

    try:
        defaults = [model.model_fields[name].default for name in names]
        sample = tuple(
            0 if name == "tool_index" else "" if value.__class__.__name__ == "PydanticUndefinedType" else value
            for name, value in zip(names, defaults)
        )
        a, b = direct(*sample), constructed(*sample)
        same = a == b and a.model_dump() == b.model_dump() and a.__dict__ == b.__dict__
    except Exception:
        same = False
    return direct if same else constructed


def _make_classes() -> tuple[type, type]:
    """Build the two detector classes on the installed SGLang's bases."""
    from sglang.srt.function_call.base_format_detector import BaseFormatDetector
    from sglang.srt.function_call.core_types import StreamingParseResult, StructureInfo, ToolCallItem

    try:  # SGLang >= 0.5.23: the response-template kind, which the server plumbs
        from sglang.srt.parser.response_template import (
            ResponseTemplateReasoningDetector as ReasoningBase,
            ResponseTemplateToolDetector as ToolBase,
        )

        plumbed = True
    except ImportError:  # 0.5.22
        from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector as ReasoningBase

        ToolBase = BaseFormatDetector
        plumbed = False
    from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult

    def reasoning_result(normal: str, reasoning: str):
        return ReasoningResult(normal_text=normal, reasoning_text=reasoning)

    # the results as SGLang's pydantic models, made without validating what respc made
    # (validation, even model_construct, costs more than a chunk's parse)
    result = _constructor(StreamingParseResult, ("normal_text", "calls"))
    item = _constructor(ToolCallItem, ("tool_index", "name", "parameters"))

    class RespcReasoningDetector(ReasoningBase):
        """SGLang reasoning detector ``respc``: parses the whole output with the template once
        and hands its tool calls to the respc tool detector."""

        thinks_internally = False

        def __init__(
            self,
            stream_reasoning: bool = True,
            tokenizer: Any = None,
            prefix: str | None = None,
            tools: Any = None,
            force_nonempty_content: bool = False,
            **_ignored: Any,
        ):
            compiled = choose_template(tokenizer)
            fields = compiled.template.get("fields", {})
            thinking = fields.get("reasoning_content")
            start, end = _delimiter(thinking, "open"), _delimiter(thinking, "close")
            if not plumbed:
                ReasoningBase.__init__(self, start, end, stream_reasoning=stream_reasoning)
            self.compiled = compiled
            self.response_template = compiled.template
            self.think_start_token = start
            self.think_end_token = end
            self.think_excluded_tokens = None
            self.think_start_self_label = ""
            self.message_start_think_openers = [start] if start else []
            self.stream_reasoning = stream_reasoning
            self.answer_started = False
            self._prefix = prefix or ""
            self._tools = tool_dicts(tools)
            self._force_nonempty_content = force_nonempty_content
            self._stream: _Stream | None = None
            self._held_reasoning: list[str] = []

        # what the server asks of the response-template kind
        def get_think_end_token_ids(self, tokenizer: Any) -> list[int]:
            return tokenizer.encode(self.think_end_token, add_special_tokens=False) if self.think_end_token else []

        def get_self_opened_think_start_token_ids(self, tokenizer: Any) -> None:
            return None

        def starts_message(self, prefix: str) -> bool:
            anchor = self.compiled.template.get("start_anchor")
            return not anchor or (isinstance(anchor, str) and prefix.endswith(anchor))

        def answer_opener(self, prefix: str) -> str:
            return ""

        def answer_rest_structural_tag(self, prefix: str) -> None:
            return None

        def json_answer_structural_tag(self, json_schema: Any, **_kwargs: Any) -> None:
            return None

        def json_output_started(self, text: str) -> bool:
            return False

        def get_answer_frame(self) -> None:
            return None

        def _handoff(self, reasoning: str, content: str, calls: list, add: bool = False):
            if not self.stream_reasoning:
                if reasoning:
                    self._held_reasoning.append(reasoning)
                reasoning = ""
            _hand_over(self, content, calls, add)
            return reasoning_result(content, reasoning)

        def detect_and_parse(self, text: str):
            reasoning, content, calls = _whole(self.compiled, text, self._prefix, self._tools)
            if self._force_nonempty_content and not content:
                content, reasoning = reasoning, ""
            _hand_over(self, content, calls)
            return reasoning_result(content, reasoning)

        def parse_streaming_increment(self, new_text: str):
            if self._stream is None:
                self._stream = _Stream(self.compiled, self._prefix, self._tools)
            return self._handoff(*self._stream.feed(new_text))

        def finish(self):
            if self._stream is None:
                self._stream = _Stream(self.compiled, self._prefix, self._tools)
            reasoning, content, calls = self._stream.finish()
            if not self.stream_reasoning:
                reasoning, self._held_reasoning = "".join(self._held_reasoning) + reasoning, []
                self.stream_reasoning = True
            return self._handoff(reasoning, content, calls, add=True)

    class RespcToolDetector(ToolBase):
        """SGLang tool-call detector ``respc``: the calls the respc reasoning detector read of
        this output, or (without one before it) its own parse of the output."""

        constrains_every_turn = False
        strict_arguments = False

        def __init__(
            self,
            tokenizer: Any = None,
            prefix: str | None = None,
            tools: Any = None,
            constrained: bool = False,
            **_ignored: Any,
        ):
            BaseFormatDetector.__init__(self)
            compiled = choose_template(tokenizer)
            self.compiled = compiled
            self.response_template = compiled.template
            tool_field = compiled.template.get("fields", {}).get("tool_calls")
            if tool_field is None:
                raise ValueError(
                    f"respc: the template {compiled.name or compiled.hash[:12]!r} has no tool_calls field: "
                    "serve it without --tool-call-parser respc"
                )
            close = _delimiter(tool_field, "close")
            self.tool_close_literals = [close] if close else []
            self.bot_token = _delimiter(tool_field, "open")
            self.eot_token = close
            self.incomplete_tool_call_indices: set[int] = set()
            self._prefix = prefix or ""
            self._tools = tool_dicts(tools)
            self._constrained = constrained
            self._stream: _Stream | None = None
            self._pieces: list[list[str]] = []  # per call, the argument fragments sent
            self._paired: Any = None  # the reasoning detector whose parse this one takes
            self._last: tuple[str, dict] | None = None  # (text, message) of a whole parse

        @classmethod
        def parses_without_tools(cls) -> bool:
            return True  # calls are the message's, declared or not (respc's message)

        # -- one-shot
        def _message(self, text: str) -> tuple:
            if self._last is None or self._last[0] != text:
                self._last = (text, _whole(self.compiled, text, self._prefix, self._tools))
            return self._last[1]

        def _from_reasoning(self, text: str) -> _Handoff | None:
            handoff = _HANDOFF.get()
            if (
                handoff is not None
                and not handoff.taken
                and handoff.normal == text
                and (self._paired is None or handoff.source is self._paired)
            ):
                return handoff
            return None

        def has_tool_call(self, text: str) -> bool:
            handoff = self._from_reasoning(text)
            if handoff is not None:
                return bool(handoff.calls)
            return bool(self._message(text)[2])

        def detect_and_parse(self, text: str, tools: Any):
            handoff = self._from_reasoning(text)
            if handoff is not None:
                handoff.taken = True
                calls = handoff.calls
                normal = text
            else:
                reasoning, content, calls = self._message(text)
                normal = reasoning + content
            return result(normal, [item(index, name, args) for index, name, args in calls])

        # -- streaming
        def _items(self, calls: list) -> list:
            # the fragments sent are kept as pieces and joined at the end (_settle): adding
            # each to a growing string would copy the argument per chunk (not flat)
            items = []
            pieces = self._pieces
            for index, name, fragment in calls:
                while len(self.streamed_args_for_tool) <= index:
                    self.streamed_args_for_tool.append("")
                    self.prev_tool_call_arr.append({})
                    pieces.append([])
                if name is not None:
                    self.prev_tool_call_arr[index] = {"name": name, "arguments": ""}
                    self.incomplete_tool_call_indices.add(index)
                    self.current_tool_id = index
                    self.current_tool_name_sent = True
                if fragment:
                    pieces[index].append(fragment)
                items.append(item(index, name, fragment))
            return items

        def _step(self, new_text: str, final: bool):
            handoff = self._from_reasoning(new_text)
            if handoff is not None and self._stream is None:
                handoff.taken = True
                self._paired = handoff.source
                normal, calls = new_text, handoff.calls
            elif self._paired is not None:  # the paired parse did not hand this text over
                normal, calls = new_text, []
            else:
                if self._stream is None:
                    self._stream = _Stream(self.compiled, self._prefix, self._tools)
                # (unseparated: the reasoning stays text, without its delimiters)
                reasoning, content, calls = self._stream.finish() if final else self._stream.feed(new_text)
                normal = reasoning + content
            items = self._items(calls)
            if final:
                self._settle()
            return result(normal, items)

        def _settle(self) -> None:
            """At the end, the arguments the server reads (prev_tool_call_arr) as values where
            the text sent is their canonical JSON: what was sent, nothing more to send."""
            self.incomplete_tool_call_indices.clear()
            for index, parts in enumerate(self._pieces):
                text = self.streamed_args_for_tool[index] = "".join(parts)
                call = self.prev_tool_call_arr[index]
                call["arguments"] = text
                try:
                    value = json.loads(text)
                except ValueError:
                    continue
                if json.dumps(value, ensure_ascii=False) == text:
                    call["arguments"] = value

        def parse_streaming_increment(self, new_text: str, tools: Any):
            return self._step(new_text, False)

        def finish(self, tools: Any):
            return self._step("", True)

        # -- constrained decoding
        def _grammar(self, tools: Any, tool_choice: Any, parallel_tool_calls: bool):
            grammar = getattr(self.compiled, "grammar", None)
            if grammar is None:
                return None
            if hasattr(tool_choice, "function"):  # a named tool: SGLang's ToolChoice
                tool_choice = tool_choice.function.name
            elif isinstance(tool_choice, dict):
                tool_choice = (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
            import respc

            unsupported = getattr(respc, "GrammarUnsupported", ())
            try:
                return grammar(
                    tool_dicts(tools) or [],
                    format="structural_tag",
                    tool_choice=tool_choice,
                    parallel_tool_calls=parallel_tool_calls,
                )
            except unsupported:  # type: ignore[misc]
                return None

        def supports_structural_tag(self) -> bool:
            return getattr(self.compiled, "grammar", None) is not None

        def structure_info(self):
            begin, end = self.bot_token, self.eot_token

            def info(name: str):
                return StructureInfo(begin=begin, end=end, trigger=begin)

            return info

        def get_structural_tag(self, tools=None, tool_choice="auto", thinking_mode=False, parallel_tool_calls=True, **_kw):
            if tool_choice == "auto" and parallel_tool_calls and not any(_strict(tool) for tool in tools or ()):
                return None
            return self._grammar(tools, tool_choice, parallel_tool_calls)

        def validate_structure_constraint_request(
            self, tool_choice, parallel_tool_calls, strict_requested, *, tools, thinking_mode=False
        ):
            if tool_choice == "auto" and parallel_tool_calls and not strict_requested:
                return None
            tag = self._grammar(tools, tool_choice, parallel_tool_calls)
            if tag is None and tool_choice == "auto":
                raise ValueError(
                    "respc: this respc has no structural tag for the template, so strict tools and "
                    "parallel_tool_calls=False cannot be enforced with automatic tool choice"
                )
            return tag

        def open_call_closer(self, text: str) -> str | None:
            """The closer of a call ``text`` leaves open at its end (a stop token the engine
            stripped), or None."""
            if not self.eot_token:
                return None
            parser = self.compiled.parser(prefix=self._prefix, tools=self._tools, spans=False, on_malformed="event")
            opened = False
            for event in list(parser.initial_events) + list(parser.feed(text)):
                if event.get("field") == "tool_calls":
                    if event["type"] == "region_open":
                        opened = True
                    elif event["type"] in ("region_close", "region_malformed"):
                        opened = False
            return self.eot_token if opened else None

    RespcReasoningDetector.__name__ = RespcReasoningDetector.__qualname__ = "RespcReasoningDetector"
    RespcToolDetector.__name__ = RespcToolDetector.__qualname__ = "RespcToolDetector"
    return RespcReasoningDetector, RespcToolDetector


def _strict(tool: Any) -> bool:
    function = getattr(tool, "function", None)
    if function is not None:
        return bool(getattr(function, "strict", False))
    return bool(isinstance(tool, dict) and (tool.get("function") or tool).get("strict"))


_CLASSES: tuple[type, type] | None = None


def detectors() -> tuple[type, type]:
    """``(RespcReasoningDetector, RespcToolDetector)`` built on the installed SGLang."""
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _make_classes()
    return _CLASSES


def register(name: str = NAME) -> None:
    """Register respc's detectors with SGLang under ``name``: ``--tool-call-parser respc``
    and ``--reasoning-parser respc``. Idempotent; the ``sglang.srt.plugins`` entry point."""
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    reasoning, tool = detectors()
    FunctionCallParser.ToolCallParserEnum[name] = tool
    ReasoningParser.DetectorMap[name] = reasoning
    for module, attr in (
        ("sglang.srt.function_call.parser_names", "TOOL_CALL_PARSER_NAMES"),
        ("sglang.srt.parser.reasoning_parser_names", "REASONING_PARSER_NAMES"),
    ):
        try:
            names = getattr(__import__(module, fromlist=[attr]), attr)
        except (ImportError, AttributeError):
            continue
        if isinstance(names, list) and name not in names:
            names.append(name)
        elif isinstance(names, set):
            names.add(name)
