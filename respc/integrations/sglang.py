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
startup with an error that names ``RESPC_TEMPLATE``. It is resolved by
``respc.integrations._common.resolve``, as the vLLM plugin resolves it: a reasoning field
named ``thinking`` streams as reasoning.

As SGLang's own detectors do, a call to a tool the request does not declare is dropped
unless ``SGLANG_FORWARD_UNKNOWN_TOOLS`` is set (a request without tools keeps every call).

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
import inspect
import json
import os
from typing import Any

from ..api import CompiledTemplate
from ..openai import DeltaParser
from ..runtime.deltas import arguments_text, function_name
from ._common import (
    end_calls_at_stop,
    resolve,
    special_markers,
    stop_texts,
    stream_tools,
    tokenizer_template,
    tool_dicts,
)

__all__ = ["NAME", "ENV", "register", "choose_template", "TemplateNotChosen"]

#: the name both parsers are registered under (``--tool-call-parser respc``)
NAME = "respc"
#: the environment variable that names the template when the tokenizer has none
ENV = "RESPC_TEMPLATE"


# -- the template ------------------------------------------------------------------------


class TemplateNotChosen(ValueError):
    """No response template for the served model: the tokenizer has none, ``RESPC_TEMPLATE``
    is not set, and respc could not tell the model's family."""


_CHOSEN: dict[tuple, CompiledTemplate] = {}


def _tokenizer_value(tokenizer: Any) -> Any:
    """The tokenizer's own ``response_template``: a dict (see ``_common.tokenizer_template``),
    or a bundled name or a path as a str (the attribute or ``init_kwargs``), or None."""
    if tokenizer is None:
        return None
    found = tokenizer_template(tokenizer)
    if found is not None:
        return found
    for value in (getattr(tokenizer, "response_template", None),
                  (getattr(tokenizer, "init_kwargs", None) or {}).get("response_template")):
        if isinstance(value, (str, os.PathLike)):
            return value
    return None


def _placed(error: ValueError, where: str) -> ValueError:
    """``error`` of the same class, its message starting with ``where`` (a TemplateError
    keeps its path and problem); a plain ValueError where the class cannot be remade."""
    path = getattr(error, "path", None)
    problem = getattr(error, "problem", None)
    try:
        if isinstance(path, str) and isinstance(problem, str):  # respc's TemplateError
            return type(error)(f"{where}: {path}" if path else where, problem, getattr(error, "parts", ()))
        return type(error)(f"{where}: {error}")
    except Exception:  # a class that takes other arguments
        return ValueError(f"{where}: {error}")


def choose_template(tokenizer: Any = None) -> CompiledTemplate:
    """The response template respc parses the served model's output with (see the module
    docstring for the order; ``respc.integrations._common.resolve``, as the vLLM plugin
    resolves it), compiled once per tokenizer and value of ``RESPC_TEMPLATE``. A reasoning
    field named ``thinking`` streams as reasoning. Raises :class:`TemplateNotChosen` when
    nothing names a template."""
    env = os.environ.get(ENV) or None
    key = (id(tokenizer), env)
    found = _CHOSEN.get(key)
    if found is not None and (tokenizer is None or getattr(tokenizer, "_respc_template", None) is found):
        return found
    value = _tokenizer_value(tokenizer)
    try:
        compiled = resolve(tokenizer, value, who="--tool-call-parser/--reasoning-parser respc")
    except ValueError as error:
        if value is None and env is None:  # nothing named a template: say what to do
            raise TemplateNotChosen(str(error)) from error
        where = "the tokenizer's response_template" if value is not None else f"{ENV}={env!r}"
        raise _placed(error, where) from error
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


#: per template hash: (reasoning open, reasoning close, tool-call open, tool-call close or
#: None without a tool_calls field): read once, not per request
_DELIMITERS: dict[str, tuple[str, str, str, str | None]] = {}


def _delimiters(compiled: CompiledTemplate) -> tuple[str, str, str, str | None]:
    found = _DELIMITERS.get(compiled.hash)
    if found is None:
        fields = compiled.template.get("fields", {})
        thinking, tools = fields.get("reasoning_content"), fields.get("tool_calls")
        found = (
            _delimiter(thinking, "open"),
            _delimiter(thinking, "close"),
            _delimiter(tools, "open") if tools is not None else "",
            _delimiter(tools, "close") if tools is not None else None,
        )
        if len(_DELIMITERS) > 256:
            _DELIMITERS.clear()
        _DELIMITERS[compiled.hash] = found
    return found


# -- where SGLang applies the structural tag ----------------------------------------------


class _StructuralTag(dict):
    """A structural tag (the dict ``CompiledTemplate.grammar`` gives) that SGLang can also
    read as its pydantic ``StructuralTag``: the chat server writes a tool-call constraint into
    the sampling parameters with ``model_dump(by_alias=True)`` (``to_sampling_params``,
    ``_fit_tool_call_grammar_to_prefix``), which a plain dict does not have."""

    def model_dump(self, **_kwargs: Any) -> dict:
        return json.loads(json.dumps(self))

    def model_dump_json(self, **_kwargs: Any) -> str:
        return json.dumps(self)


def _anchor_text(compiled: CompiledTemplate) -> str:
    """A text of the template's start anchor (the first of a list), or "" (none, or a
    pattern only)."""
    anchor = compiled.template.get("start_anchor")
    if isinstance(anchor, list):
        anchor = next((a for a in anchor if isinstance(a, str)), None)
    return anchor if isinstance(anchor, str) else ""


def _reasoning_done(compiled: CompiledTemplate, text: str, end: str) -> bool:
    r"""Whether the parser, after the prompt ``text``, is past the reasoning: the field
    used and not open (the grammar then starts with the field used: a field that does not
    repeat opens once; text the parser holds, qwen3's ``\n\n`` after ``</think>``, is
    passed on by ``CompiledTemplate.grammar``), or the close ``end`` is what it holds (a
    close the parser keeps until more text comes: the grammar starts after it)."""
    import warnings

    from ..runtime.base import PrefixWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrefixWarning)
        parser = compiled.Parser(text)
    if parser._opened and parser._name == "reasoning_content":
        return parser._held.lstrip().startswith(end)
    return "reasoning_content" in parser._out


def _closes(field: Any, end: str) -> bool:
    """Whether ``end`` (the reasoning close's literal, SGLang's ``think_end_token``) is a
    whole close of the reasoning ``field``: ``</think>`` of qwen3's ``</think>|(?=<tool_call>)``,
    not gpt-oss's ``<|``, the literal start of ``<\\|end\\|>|<\\|call\\|>|...``."""
    if not end or not isinstance(field, dict):
        return False
    close = field.get("close")
    if isinstance(close, str):
        return close == end
    if isinstance(close, list):
        return end in close
    pattern = field.get("close_pattern")
    if not isinstance(pattern, str):
        return False
    import regex

    try:
        return regex.fullmatch(pattern, end) is not None
    except regex.error:
        return False


#: per (template hash, prompt): the text the grammar starts after when SGLang applies it
#: after the reasoning (see _after_reasoning)
_AFTER_REASONING: dict[tuple[str, str], str | None] = {}


def _after_reasoning(compiled: CompiledTemplate, prefix: str) -> str | None:
    """The prompt as SGLang's reasoning gate leaves it: SGLang applies a tag built without
    the reasoning (``thinking_mode=False``) once the reasoning parser's end
    (``think_end_token``, the reasoning close's literal) is written (ReasonerGrammarBackend),
    or from the first token where nothing is reasoned (then the reasoning is over too). So
    the grammar starts where the output after the prompt has closed the reasoning: the
    prompt itself when it closed it (thinking off), else the prompt with the close (a
    pre-opened ``<think>``), else with an open and the close (at the message start). The
    prompt alone where none of these closes it (a close that is not one literal); None for
    the message start (no prompt) of a template without reasoning."""
    key = (compiled.hash, prefix) if len(prefix) <= 4096 else None  # (a long prompt: not kept)
    found = _AFTER_REASONING.get(key, False) if key is not None else False
    if found is not False:
        return found  # type: ignore[return-value]
    start, end, _open, _close = _delimiters(compiled)
    found = prefix or None
    if _closes(compiled.template.get("fields", {}).get("reasoning_content"), end):
        base = prefix or _anchor_text(compiled)
        for text in (base, base + end, base + start + end):
            if _reasoning_done(compiled, text, end):
                found = text
                break
    if key is not None:
        if len(_AFTER_REASONING) > 1024:
            _AFTER_REASONING.clear()
        _AFTER_REASONING[key] = found
    return found


#: per template hash: whether the template has a structural tag (see _has_structural_tag)
_TAGGED: dict[str, bool] = {}
_PROBE_TOOL = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]


def _has_structural_tag(compiled: CompiledTemplate) -> bool:
    """Whether ``compiled.grammar(..., format="structural_tag")`` writes calls (a tool's
    call required), read once per template."""
    found = _TAGGED.get(compiled.hash)
    if found is None:
        grammar = getattr(compiled, "grammar", None)
        found = False
        if grammar is not None:
            try:
                grammar(_PROBE_TOOL, format="structural_tag", tool_choice="required")
                found = True
            except ValueError:  # respc.GrammarUnsupported (a ValueError)
                found = False
        if len(_TAGGED) > 256:
            _TAGGED.clear()
        _TAGGED[compiled.hash] = found
    return found


#: per (tokenizer, template hash): the template's markers that are the tokenizer's special
#: (or added) tokens, written as special tokens in the grammar (as the vLLM plugin does)
_MARKERS: dict[tuple[int, str], tuple[Any, list[str]]] = {}


def _special_markers(tokenizer: Any, compiled: CompiledTemplate) -> list[str]:
    if tokenizer is None:
        return []
    key = (id(tokenizer), compiled.hash)
    found = _MARKERS.get(key)
    if found is None or found[0] is not tokenizer:
        found = (tokenizer, special_markers(tokenizer, compiled))
        if len(_MARKERS) > 64:
            _MARKERS.clear()
        _MARKERS[key] = found
    return found[1]


# -- the shared parse ----------------------------------------------------------------------

#: the respc reasoning detector that read the current choice's last delta, for the respc
#: tool detector SGLang calls next with the normal text it returned (set once per stream
#: and context; the detector itself holds what it read: ``_normal``, ``_calls``, ``_taken``)
_HANDOFF: contextvars.ContextVar[Any] = contextvars.ContextVar("respc_sglang_handoff", default=None)

#: ``json.dumps(value, ensure_ascii=False)``, its encoder made once (json makes one per call
#: with any argument)
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode
#: the same through json's C encoder, made once (``JSONEncoder.encode`` makes one per call;
#: without its check for circular references: what it writes here is decoded JSON)
_C_ENCODER = (
    json.encoder.c_make_encoder(
        None, _ENCODE.__self__.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )
    if json.encoder.c_make_encoder is not None
    else None
)
#: reads one JSON value at an index, as ``json.loads`` reads it (its C scanner, without the
#: Python-level wrapper)
_SCAN_ONCE = json.scanner.make_scanner(json.JSONDecoder())


def _canonical_value(text: str) -> Any:
    """The value of ``text`` when ``text`` is exactly ``json.dumps(value,
    ensure_ascii=False)`` of what ``json.loads`` reads of it, else ``_NOT_CANONICAL``."""
    try:
        value, end = _SCAN_ONCE(text, 0)
    except (StopIteration, ValueError):  # (text with whitespace around it is not canonical)
        return _NOT_CANONICAL
    if end != len(text):
        return _NOT_CANONICAL
    encoded = "".join(_C_ENCODER(value, 0)) if _C_ENCODER is not None else _ENCODE(value)
    return value if encoded == text else _NOT_CANONICAL


_NOT_CANONICAL = object()

#: a chunk's calls when it has none (never changed: SGLang's wrappers copy what they keep)
_NO_CALLS: list = []


def _split(deltas: list[dict]) -> tuple[str, str, list]:
    """DeltaParser deltas as ``(reasoning, content, calls)``, the calls as ``(index, name
    or None, arguments fragment)`` (a call's fragments in one feed joined)."""
    if len(deltas) == 1:  # the common chunk: one delta of one kind
        delta = deltas[0]
        if len(delta) == 1:
            text = delta.get("content")
            if text is not None:
                return "", text, _NO_CALLS
            text = delta.get("reasoning_content")
            if text is not None:
                return text, "", _NO_CALLS
    reasoning = content = ""
    calls = _NO_CALLS
    for delta in deltas:
        text = delta.get("content")
        if text:
            content += text
        text = delta.get("reasoning_content")
        if text:
            reasoning += text
        for call in delta.get("tool_calls") or ():
            if calls is _NO_CALLS:
                calls = []
            index = call["index"]
            function = call.get("function") or {}
            name = function.get("name")
            fragment = function.get("arguments") or ""
            if calls and calls[-1][0] == index and name is None:
                calls[-1] = (index, calls[-1][1], calls[-1][2] + fragment)
            else:
                calls.append((index, name, fragment))
    return reasoning, content, calls


def _whole(compiled: CompiledTemplate, text: str, prefix: str | None, tools: list[dict] | None) -> tuple:
    """A whole output: ``(reasoning, content, calls)``, the calls as ``(index, name,
    arguments text)``, as ``respc.openai.to_message`` writes them (SGLang makes the ids):
    one parse of the whole text (``CompiledTemplate.parse``), no streaming machinery."""
    # (CompiledTemplate.parse(..., on_malformed="collect") without its checks: the text, the
    # prefix and the tools list are the detector's own)
    message = compiled.Parser.parse_whole(prefix or "", text, tools, [])
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
        ] if isinstance(calls, list) and calls else _NO_CALLS,
    )


# -- the detectors -------------------------------------------------------------------------


def _constructor(model: type, names: tuple[str, ...]):
    """``f(*values)``: an instance of the pydantic model ``model`` with these fields, as
    ``model.model_construct`` makes it (no validation), made directly for a model of 2 or 3
    fields; ``model_construct`` itself for others, or where the direct one does not give the
    same instance (another pydantic)."""
    new, put = object.__new__, object.__setattr__
    fields = set(names)
    # the values passed one by one, not packed and zipped with the names (a third of the
    # cost, per call of a message): the models made here have 2 or 3 fields
    first, second, third = (*names, None)[:3] if len(names) in (2, 3) else (None, None, None)

    def direct(a: Any, b: Any, c: Any = None) -> Any:
        obj = new(model)
        put(obj, "__dict__", {first: a, second: b} if third is None else {first: a, second: b, third: c})
        put(obj, "__pydantic_fields_set__", fields)
        put(obj, "__pydantic_extra__", None)
        put(obj, "__pydantic_private__", None)
        return obj

    def constructed(*values: Any) -> Any:
        return model.model_construct(**dict(zip(names, values)))

    if first is None:
        return constructed
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


class _ReasoningChunk:
    """A streaming result of the respc reasoning detector: what SGLang's ``ReasoningParser``
    reads of its ``StreamingParseResult`` (``normal_text``, ``reasoning_text``), made
    without SGLang's class. SGLang's wrapper reads a chunk's result at once and drops it, so
    each detector returns one object of its own, set anew per chunk (making one per chunk
    cost as much as the rest of the glue)."""

    __slots__ = ("normal_text", "reasoning_text")

    def __init__(self, normal_text: str, reasoning_text: str):
        self.normal_text = normal_text
        self.reasoning_text = reasoning_text


class _ToolChunk:
    """A streaming result of the respc tool detector: what SGLang's ``FunctionCallParser``
    reads of its ``StreamingParseResult`` (``normal_text``, ``calls``). SGLang's pydantic
    model costs more to make than respc's parse of a chunk; the one-shot results
    (``detect_and_parse``, whose calls the server may ``model_dump``) are SGLang's own. As
    ``_ReasoningChunk``: one per detector, set anew per chunk (SGLang's wrapper copies the
    calls into a list of its own at once)."""

    __slots__ = ("normal_text", "calls")

    def __init__(self, normal_text: str, calls: list):
        self.normal_text = normal_text
        self.calls = calls


class _CallDelta:
    """A streamed call delta: what the server reads of SGLang's ``ToolCallItem``
    (``tool_index``, ``name``, ``parameters``), with the ``model_copy`` and ``model_dump``
    SGLang calls on them (``parse_non_stream(preserve_incomplete=True)``)."""

    __slots__ = ("tool_index", "name", "parameters")

    def __init__(self, tool_index: int, name: str | None, parameters: str):
        self.tool_index = tool_index
        self.name = name
        self.parameters = parameters

    def model_copy(self, *, update: dict | None = None, deep: bool = False) -> _CallDelta:
        copy = _CallDelta(self.tool_index, self.name, self.parameters)
        for key, value in (update or {}).items():
            setattr(copy, key, value)
        return copy

    def model_dump(self, **_kwargs: Any) -> dict:
        return {"tool_index": self.tool_index, "name": self.name, "parameters": self.parameters}

    def __eq__(self, other: Any) -> bool:
        return all(getattr(other, key, None) == getattr(self, key) for key in self.__slots__)

    def __repr__(self) -> str:
        return f"ToolCallItem(tool_index={self.tool_index!r}, name={self.name!r}, parameters={self.parameters!r})"


_EMPTY_REASONING = _ReasoningChunk("", "")


def _tool_names(tools: Any) -> set[str]:
    """The names of a request's function tools (SGLang's ``Tool`` models or dicts, Chat
    Completions or Responses API shapes), without converting them."""
    names = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else getattr(tool, "function", None)
        if function is None:
            name = tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", None)
        else:
            name = function.get("name") if isinstance(function, dict) else getattr(function, "name", None)
        if isinstance(name, str):
            names.add(name)
    return names


#: SGLANG_FORWARD_UNKNOWN_TOOLS read through SGLang, by the variable's raw value (SGLang's
#: reading is a function of it: os.getenv, then its parse): SGLang's ``envs`` lookup costs
#: more than the rest of a short output's tool detector
_FORWARD: dict[str | None, bool] = {}


def _forward_unknown() -> bool:
    """SGLang's ``SGLANG_FORWARD_UNKNOWN_TOOLS`` (its detectors drop a call to a tool the
    request does not declare unless it is set)."""
    raw = os.environ.get("SGLANG_FORWARD_UNKNOWN_TOOLS")
    found = _FORWARD.get(raw)
    if found is None:
        found = _read_forward_unknown()
        if len(_FORWARD) > 16:
            _FORWARD.clear()
        _FORWARD[raw] = found
    return found


def _read_forward_unknown() -> bool:
    try:
        from sglang.srt.environ import envs

        return bool(envs.SGLANG_FORWARD_UNKNOWN_TOOLS.get())
    except Exception:  # an SGLang without it
        return os.environ.get("SGLANG_FORWARD_UNKNOWN_TOOLS", "").strip().lower() in ("1", "true", "yes", "y")


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

    # the one-shot results as SGLang's pydantic models, made without validating what respc
    # made (validation, even model_construct, costs more than the parse)
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
            start, end, _open, _close = _delimiters(compiled)
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
            self._tools = stream_tools(tools)  # (names and parameters: what types arguments)
            self._force_nonempty_content = force_nonempty_content
            # the stream's parser, made at the first chunk (SGLang makes a detector per choice,
            # for a request that does not stream too, which only calls detect_and_parse)
            self._parser: Any = None
            self._feed: Any = None  # its feed, once made
            self._done = False
            self._held_reasoning: list[str] = []
            # what the last parse read, for the respc tool detector SGLang calls next
            self._normal: str | None = None
            self._calls: list = _NO_CALLS
            self._taken = True
            self._claimed = False  # a tool detector paired with this one: no hand-over var
            self._out = _ReasoningChunk("", "")  # the chunk's result (see _ReasoningChunk)

        def _stream_parser(self) -> DeltaParser:
            """The stream's DeltaParser, made when the stream needs it first."""
            parser = self._parser
            if parser is None:
                parser = self._parser = DeltaParser(
                    self.compiled, prefix=self._prefix, tools=self._tools, on_malformed="event"
                )
                self._feed = parser.feed
            return parser

        # what the server asks of the response-template kind
        def get_think_end_token_ids(self, tokenizer: Any) -> list[int]:
            return tokenizer.encode(self.think_end_token, add_special_tokens=False) if self.think_end_token else []

        def get_self_opened_think_start_token_ids(self, tokenizer: Any) -> None:
            return None

        def starts_message(self, prefix: str) -> bool:
            anchor = self.compiled.template.get("start_anchor")
            if isinstance(anchor, list):
                return any(isinstance(a, str) and a and prefix.endswith(a) for a in anchor)
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

        def _hand_over(self, normal: str, calls: list, add: bool = False) -> None:
            """Leave what this parse read for the tool detector; with ``add`` (the end of
            the stream), added to what the last chunk left when that was not taken yet
            (SGLang calls the reasoning parser's chunk and end parses, then the tool
            parser once with both)."""
            if not self._claimed and _HANDOFF.get() is not self:
                _HANDOFF.set(self)
            if add and not self._taken:
                normal = self._normal + normal
                calls = self._calls + calls if calls else self._calls
            self._normal = normal
            self._calls = calls
            self._taken = False

        def detect_and_parse(self, text: str):
            reasoning, content, calls = _whole(self.compiled, text, self._prefix, self._tools)
            if self._force_nonempty_content and not content:
                content, reasoning = reasoning, ""
            self._hand_over(content, calls)
            return ReasoningResult(normal_text=content, reasoning_text=reasoning)

        def parse_streaming_increment(self, new_text: str):
            # (the hand-over inlined: this runs once per chunk)
            if not self._claimed and _HANDOFF.get() is not self:
                _HANDOFF.set(self)
            self._taken = False
            if self._done or not new_text:
                deltas = None
            else:
                feed = self._feed
                deltas = (feed if feed is not None else self._stream_parser().feed)(new_text)
            if not deltas:
                self._normal = ""
                self._calls = _NO_CALLS
                return _EMPTY_REASONING
            if len(deltas) == 1:  # the common chunks: one delta of one kind
                delta = deltas[0]
                if len(delta) == 1:
                    text = delta.get("content")
                    if text is not None:
                        self._normal = text
                        self._calls = _NO_CALLS
                        out = self._out
                        out.normal_text = text
                        out.reasoning_text = ""
                        return out
                    text = delta.get("reasoning_content")
                    if text is not None and self.stream_reasoning:
                        self._normal = ""
                        self._calls = _NO_CALLS
                        out = self._out
                        out.normal_text = ""
                        out.reasoning_text = text
                        return out
                    calls = delta.get("tool_calls")
                    if calls is not None and len(calls) == 1:  # an argument fragment
                        call = calls[0]
                        function = call.get("function")
                        if len(call) == 2 and function is not None and len(function) == 1:
                            self._normal = ""
                            self._calls = [(call["index"], None, function.get("arguments") or "")]
                            return _EMPTY_REASONING
            reasoning, content, calls = _split(deltas)
            self._normal = content
            self._calls = calls
            if reasoning and not self.stream_reasoning:
                self._held_reasoning.append(reasoning)
                reasoning = ""
            out = self._out
            out.normal_text = content
            out.reasoning_text = reasoning
            return out

        def finish(self):
            if self._done:
                self._hand_over("", _NO_CALLS, add=True)
                return _EMPTY_REASONING
            self._done = True
            reasoning, content, calls = _split(self._stream_parser().finish()[0])
            if not self.stream_reasoning:
                reasoning, self._held_reasoning = "".join(self._held_reasoning) + reasoning, []
                self.stream_reasoning = True
            self._hand_over(content, calls, add=True)
            return _ReasoningChunk(content, reasoning)

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
            _start, _end, opener, close = _delimiters(compiled)
            if close is None:
                raise ValueError(
                    f"respc: the template {compiled.name or compiled.hash[:12]!r} has no tool_calls field: "
                    "serve it without --tool-call-parser respc"
                )
            self.tool_close_literals = [close] if close else []
            self.bot_token = opener
            self.eot_token = close
            self.incomplete_tool_call_indices: set[int] = set()
            self._prefix = prefix or ""
            self._request_tools = tools
            self._tool_list: list[dict] | None | bool = False  # (stream_tools, made when needed)
            self._constrained = constrained
            self._tokenizer = tokenizer  # (its stop tokens: see _grammar)
            self._stream: Any = None  # the own parse (DeltaParser), without a paired one
            self._pieces: list[list[str]] = []  # per call, the argument fragments sent
            self._index: dict[int, int] = {}  # respc's call index -> the index sent (-1: dropped)
            self._paired: Any = None  # the reasoning detector whose parse this one takes
            self._last: tuple[str, tuple] | None = None  # (text, parse) of a whole parse
            self._out = _ToolChunk("", _NO_CALLS)  # the chunk's result (see _ToolChunk)

        @property
        def _tools(self) -> list[dict] | None:
            """The request's tools as dicts, made when this detector parses itself (a paired
            one never does: the reasoning detector's parse types the arguments)."""
            if self._tool_list is False:
                self._tool_list = stream_tools(self._request_tools)
            return self._tool_list

        @property
        def _known(self) -> set[str] | None:
            """The declared tools' names, unless SGLANG_FORWARD_UNKNOWN_TOOLS (or no tools:
            then every call is the message's, as respc's message has them); read once, when
            the first call needs it (most outputs have none)."""
            known = self._known_names
            if known is False:
                tools = self._request_tools
                known = self._known_names = (_tool_names(tools) or None) if tools and not _forward_unknown() else None
            return known

        _known_names: set[str] | None | bool = False

        @classmethod
        def parses_without_tools(cls) -> bool:
            return True  # calls are the message's, declared or not (respc's message)

        # -- one-shot
        def _message(self, text: str) -> tuple:
            if self._last is None or self._last[0] != text:
                self._last = (text, _whole(self.compiled, text, self._prefix, self._tools))
            return self._last[1]

        def _from_reasoning(self, text: str) -> Any:
            """The paired reasoning detector (or, before one is paired and without an own
            parse, the one of the hand-over variable) when it handed over ``text``."""
            handoff = self._paired
            if handoff is None:
                if self._stream is not None:
                    return None
                handoff = _HANDOFF.get()
                if handoff is None:
                    return None
            if not handoff._taken and (handoff._normal is text or handoff._normal == text):
                return handoff
            return None

        def _known_calls(self, calls: list) -> list:
            """Whole calls without those to undeclared tools (see ``_known``), renumbered."""
            if not calls:
                return calls
            known = self._known
            if known is None:
                return calls
            kept = [call for call in calls if call[1] in known]
            return [(index, name, args) for index, (_i, name, args) in enumerate(kept)]

        def has_tool_call(self, text: str) -> bool:
            handoff = self._from_reasoning(text)
            if handoff is not None:
                return bool(handoff._calls)
            return bool(self._message(text)[2])

        def detect_and_parse(self, text: str, tools: Any):
            handoff = self._from_reasoning(text)
            if handoff is not None:
                handoff._taken = True
                calls = handoff._calls
                normal = text
            else:
                reasoning, content, calls = self._message(text)
                normal = reasoning + content
            return result(normal, [item(index, name, args) for index, name, args in self._known_calls(calls)])

        # -- streaming
        def _items(self, calls: list) -> list:
            # the fragments sent are kept as pieces and joined at the end (_settle): adding
            # each to a growing string would copy the argument per chunk (not flat)
            items = []
            pieces = self._pieces
            remap = self._index
            for index, name, fragment in calls:
                if name is not None:  # a call's first delta
                    known = self._known
                    if known is not None and name not in known:
                        remap[index] = -1  # a call to an undeclared tool: not sent
                        continue
                    remap[index] = sent = len(pieces)
                    index = sent
                    self.streamed_args_for_tool.append("")
                    self.prev_tool_call_arr.append({"name": name, "arguments": ""})
                    pieces.append([])
                    self.incomplete_tool_call_indices.add(index)
                    self.current_tool_id = index
                    self.current_tool_name_sent = True
                else:
                    index = remap.get(index, -1)
                    if index < 0:
                        continue
                if fragment:
                    pieces[index].append(fragment)
                items.append(_CallDelta(index, name, fragment))
            return items

        def _own(self, new_text: str, final: bool) -> tuple[str, list]:
            """This detector's own parse of the raw output (no respc reasoning detector
            before it): the reasoning stays text, without its delimiters."""
            stream = self._stream
            if stream is None:
                stream = self._stream = DeltaParser(
                    self.compiled, prefix=self._prefix, tools=self._tools, on_malformed="event"
                )
            if final:
                if self._settled:
                    return "", _NO_CALLS
                deltas = stream.finish()[0]
            elif not new_text or self._settled:
                return "", _NO_CALLS
            else:
                deltas = stream.feed(new_text)
                if not deltas:
                    return "", _NO_CALLS
            reasoning, content, calls = _split(deltas)
            return reasoning + content, calls

        def parse_streaming_increment(self, new_text: str, tools: Any):
            paired = self._paired
            if (
                paired is not None
                and not paired._taken
                and (paired._normal is new_text or paired._normal == new_text)
            ):  # the paired parse handed this text over: its calls (most chunks)
                paired._taken = True
                calls = paired._calls
                out = self._out
                out.normal_text = new_text
                out.calls = self._items(calls) if calls else _NO_CALLS
                return out
            return self._step(new_text, False)

        def _step(self, new_text: str, final: bool):
            handoff = self._from_reasoning(new_text)
            if handoff is not None:
                handoff._taken = True
                handoff._claimed = True
                self._paired = handoff
                normal, calls = new_text, handoff._calls
            elif self._paired is not None:  # the paired parse did not hand this text over
                normal, calls = new_text, _NO_CALLS
            else:
                normal, calls = self._own(new_text, final)
            items = self._items(calls) if calls else _NO_CALLS
            if final:
                self._settle()
                items = list(items)  # (the server adds other lists to it)
            return _ToolChunk(normal, items)

        _settled = False

        def _settle(self) -> None:
            """At the end, the arguments the server reads (prev_tool_call_arr) as values where
            the text sent is their canonical JSON: what was sent, nothing more to send."""
            self._settled = True
            self.incomplete_tool_call_indices.clear()
            for index, parts in enumerate(self._pieces):
                text = self.streamed_args_for_tool[index] = "".join(parts)
                call = self.prev_tool_call_arr[index]
                value = _canonical_value(text)
                call["arguments"] = text if value is _NOT_CANONICAL else value

        def finish(self, tools: Any):
            return self._step("", True)

        # -- constrained decoding
        def _grammar(self, tools: Any, tool_choice: Any, parallel_tool_calls: bool, from_start: bool):
            """The template's structural tag for the request, from where SGLang applies it:
            ``from_start`` (a tag with the reasoning, ``thinking_mode``, or one for output
            that starts the message, ``message_start``) from the prompt's end, in the state
            the prompt leaves (a pre-opened ``<think>``: inside the reasoning; thinking off:
            none); otherwise after the reasoning (``_after_reasoning``: SGLang's reasoning
            parser owns it). The markers that are the tokenizer's special tokens are given
            as such."""
            grammar = getattr(self.compiled, "grammar", None)
            if grammar is None:
                return None
            if hasattr(tool_choice, "function"):  # a named tool: SGLang's ToolChoice
                tool_choice = tool_choice.function.name
            elif isinstance(tool_choice, dict):
                tool_choice = (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
            import respc

            unsupported = getattr(respc, "GrammarUnsupported", ())
            prefix = (self._prefix or None) if from_start else _after_reasoning(self.compiled, self._prefix)
            markers = _special_markers(self._tokenizer, self.compiled)
            try:
                tag = grammar(
                    tool_dicts(tools) or [],
                    format="structural_tag",
                    tool_choice=tool_choice,
                    parallel_tool_calls=parallel_tool_calls,
                    prefix=prefix,
                    special_tokens=markers or None,
                )
            except unsupported:  # type: ignore[misc]
                return None
            # a call whose close is a stop token (gpt-oss's <|call|>) ends where its body does,
            # the turn ending there, as in vLLM: xgrammar's matcher takes a stop token only
            # where the grammar may end, so a tag writing it as the close fails on it
            return _StructuralTag(end_calls_at_stop(tag, stop_texts(self._tokenizer)))

        def supports_structural_tag(self) -> bool:
            """Whether the template has a structural tag: else SGLang's fallback for required
            or named calls is its JSON-schema one (with True it built its legacy tag from
            ``structure_info``, a JSON body between the call's open and close literals,
            which python-call-list and JSON-dialect templates do not write)."""
            return _has_structural_tag(self.compiled)

        def structure_info(self):
            begin, end = self.bot_token, self.eot_token

            def info(name: str):
                return StructureInfo(begin=begin, end=end, trigger=begin)

            return info

        def get_structural_tag(
            self, tools=None, tool_choice="auto", thinking_mode=False, parallel_tool_calls=True, message_start=False, **_kw
        ):
            if tool_choice == "auto" and parallel_tool_calls and not any(_strict(tool) for tool in tools or ()):
                return None
            return self._grammar(tools, tool_choice, parallel_tool_calls, bool(thinking_mode or message_start))

        def validate_structure_constraint_request(
            self, tool_choice, parallel_tool_calls, strict_requested, *, tools, thinking_mode=False
        ):
            if tool_choice == "auto" and parallel_tool_calls and not strict_requested:
                return None
            tag = self._grammar(tools, tool_choice, parallel_tool_calls, bool(thinking_mode))
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
    # SGLang reads each detector class's signature per request (inspect.signature, which
    # takes longer than making the detector): given once here
    for cls in (RespcReasoningDetector, RespcToolDetector):
        cls.__signature__ = inspect.signature(cls)
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
