"""OpenAI Chat Completions streaming: a model's raw output as ``chat.completion.chunk`` deltas.

::

    from respc.openai import DeltaParser
    p = DeltaParser(template, prefix=prompt, tools=tools)
    for text in stream:
        for delta in p.feed(text):               # each is a chunk's choices[0].delta
            send(delta)
    deltas, finish_reason = p.finish()           # finish(length=True) when the output was cut
    message = p.to_message()                     # the same message, as a ChatCompletionMessage dict

The deltas are those of the Chat Completions API: ``{"role": "assistant"}`` first, then
``{"content": ...}`` and ``{"reasoning_content": ...}`` (the key is ``reasoning_key``) as the
text arrives, and per tool call a first delta ``{"tool_calls": [{"index": i, "id": ...,
"type": "function", "function": {"name": ..., "arguments": ""}}]}`` once its name is known,
then ``{"tool_calls": [{"index": i, "function": {"arguments": fragment}}]}`` as the
arguments are written.

How it works: a :class:`DeltaParser` runs the template's own streaming parser and turns its
events into deltas (its streaming core, compiled with the rest of the runtime, is
``respc/runtime/deltas.py``; this module reads the template and is the public face). Text fields stream as they are (stripped at both ends as the field's
``text`` parser strips, joined as the field joins). Tool calls stream as the model writes
them, by the shape of the call's body (read from the template's ``content`` and
``transform``, see ``_plan``):

* a JSON body (the arguments, an object with ``name`` and ``arguments``, or a list of such
  objects) goes through :class:`JsonScanner`, an incremental JSON scanner that carries its
  state from chunk to chunk and re-encodes what it reads as canonical JSON text (each
  character read once): a string's characters are sent as they arrive, a number or a
  literal once it is complete, and an argument that tool typing may change (``"3"`` for an
  ``integer`` parameter) once it is complete and typed;
* an ``xml-inline`` body sends each parameter as it completes (parsed by the field's own
  content parser), and a ``python-call-list`` body each parameter of each call;
* anything else (a JSON dialect, a transform of another shape) is sent whole when its
  region closes: correct, only later.

Whatever was sent, the region's close settles the call against the value the parser gives
(after its content parser, transform and tool typing): the rest of the canonical text is
sent then, so the fragments of a call always concatenate to the arguments of the message
(see ``arguments_text``).

The function name and id of formats that write them in the open delimiter (``to=functions.
NAME``, ``<function=NAME>``) come from the open event's ``captures``, which the template's
parser gives with ``spans=True`` (always on underneath; ``DeltaParser(..., spans=True)``
also hands out those events, offsets included, as ``events``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from typing import Any

import regex

from .api import _tool_list, compile_template
from .compiler.regexinfo import lazy_group_split, may_backtrack, regex_only, word_key_head
from .runtime.content import make_parser
from .runtime.deltas import (
    DeltaStream,
    JsonScanner,
    Plan,
    TextField,
    arguments_text,
    call_id,
    message_dict,
    new_id,
)

__all__ = ["DeltaParser", "JsonScanner", "arguments_text", "to_message"]

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def to_message(message: dict, *, reasoning_key: str = "reasoning_content", id_seed: Any = None) -> dict:
    """A parsed message (``respc.parse_response``'s) as an OpenAI ``ChatCompletionMessage`` dict.

    ``content`` (None when there is none), ``reasoning_key`` (left out when there is no
    reasoning), and ``tool_calls`` with ``id``, ``type`` and ``function`` (``name``, and
    ``arguments`` as a JSON string: see :func:`arguments_text`). A call keeps the id its
    format wrote; any other gets ``call_`` and 24 random alphanumerics from
    ``random.Random(id_seed)``, in order (a :class:`DeltaParser` with the same seed gives
    the same ids).
    """
    if not isinstance(message, dict):
        raise TypeError(f"to_message: message must be a dict (a parsed message), got {type(message).__name__}")
    if id_seed is None:  # the format's ids, else new ones from the shared generator
        return message_dict(message, reasoning_key)  # (seeding one of its own would take 13 µs)
    made: list[random.Random] = []  # the seed's generator, made when a call needs an id

    def ids(index: int, call: Any) -> str:
        found = call_id(call)
        if found:
            return found
        if not made:
            made.append(random.Random(id_seed))
        return new_id(made[0])

    return message_dict(message, reasoning_key, ids)


def _placeholder(value: Any) -> str | None:
    match = _PLACEHOLDER.fullmatch(value) if isinstance(value, str) else None
    return match.group(1) if match else None


#: each template's tool-call plan by template hash (a plan is only read once made); reading
#: one costs more than a short stream (an xml body's content parser and regexes)
_PLANS: dict[str, Plan | None] = {}
_PLANS_KEPT = 256


def _template_plan(compiled: Any) -> Plan | None:
    """The plan of ``compiled``'s tool-call field (None without one), read once per template."""
    try:
        return _PLANS[compiled.hash]
    except KeyError:
        pass
    fields = compiled.template.get("fields", {})
    plan = _plan(fields["tool_calls"]) if "tool_calls" in fields else None
    if len(_PLANS) >= _PLANS_KEPT:
        _PLANS.clear()
    _PLANS[compiled.hash] = plan
    return plan


def _plan(field: dict) -> Plan:
    """Read how a tool-call field's body and transform lay out its calls (see ``Plan``)."""
    content = field.get("content", "text")
    args = field.get("content_args") or {}
    each = bool(field.get("transform_each"))
    transform = field.get("transform")
    plan = Plan(None, each)
    if not isinstance(transform, dict) or set(transform) - {"id", "type", "function"}:
        return plan
    function = transform.get("function")
    source = "member" if each else "caps"
    if "id" in transform:
        key = _placeholder(transform["id"])
        if key is None:
            return plan
        plan.id = (source, key)
    if function == "{content}" and not each:
        shape, plan.name, plan.args = "object", ("member", "name"), ("member", "arguments")
    elif isinstance(function, dict) and set(function) == {"name", "arguments"}:
        name, arguments = _placeholder(function["name"]), _placeholder(function["arguments"])
        if name is None or arguments is None:
            return plan
        plan.name = (source, name)
        if each:
            shape, plan.args = "each", ("member", arguments)
        elif arguments == "content":
            shape, plan.args = "args", ("content", "")
        else:
            return plan
    else:
        return plan
    plan.shape = shape
    if content == "json" and not args.get("unquoted_keys") and not args.get("string_delims"):
        plan.body = "json"
    elif content == "xml-inline" and shape == "args" and not args.get("merge_duplicates"):
        pattern = args["tag_pattern"]
        split = lazy_group_split(pattern)
        if split is not None:  # a parameter is complete once its tail literal is written
            plan.body = "xml"
            # the hints the compiler gives the field's parser (compiler/emit.py, _parse_expr),
            # when its head is literal text around the key: then the stream reads a completed
            # parameter with them too (see Plan.xml_split)
            bounded = may_backtrack(pattern)
            key_head = None if bounded or regex_only(pattern) else word_key_head(split[0])
            hints = None if key_head is None else {"tag_split": split, "key_head": key_head}
            # (a pattern that may backtrack without bound is matched under the time bound, as
            # the field's parser matches it: compiler/emit.py, _parse_expr)
            plan.xml_parser = make_parser("xml-inline", args, {"bounded": True} if bounded else hints)
            plan.xml_pattern = regex.compile(pattern, regex.DOTALL)
            plan.xml_bounded = bounded
            plan.xml_tail = split[2]
            plan.xml_split = hints is not None
    elif content == "python-call-list" and each and plan.args == ("member", "arguments") and plan.name == ("member", "name"):
        plan.body = "calls"
    return plan


class DeltaParser(DeltaStream):
    """Turns a model's raw output, fed as it is generated, into Chat Completions deltas.

    ``template`` and ``prefix`` as for :func:`respc.get_response_parser`; ``tools`` (the
    request's tools) type arguments as the parsed message types them; ``reasoning_key``
    names the reasoning delta's key (``"reasoning"`` for some clients); ``id_seed`` seeds
    the ids of calls whose format writes none; ``spans=True`` keeps the parser's events
    behind each call's deltas, with their offsets, in ``events``.

    ``feed(text)`` returns the deltas ``text`` completes; ``finish(length=False)`` returns
    the last deltas and the finish reason; afterwards ``message`` is the parsed message and
    ``to_message()`` the OpenAI message the deltas add up to.

    A region whose content fails to parse (a call's invalid JSON where the template does not
    allow it): ``on_malformed="raise"`` (the default) raises the parser's error from
    ``feed``/``finish``, as ``parse_response`` does; ``"event"`` goes on, as
    ``ResponseParser(..., on_malformed="event")`` does: what was sent of the region's calls
    stays, nothing more is sent for them, the message leaves the region out (as
    ``parse_response(..., on_malformed="collect")``) and ``errors`` lists its
    region_malformed event. ``finish(length=True)`` (the output was cut) treats the region
    the cut leaves open as ``"event"`` does in either mode, so a cut always ends the
    stream. Once ``finish`` returned or a call raised, ``feed`` and ``finish`` raise
    ``RuntimeError``.
    """

    __slots__ = ()

    def __init__(
        self,
        template: Any,
        *,
        prefix: str | None = None,
        tools: Iterable[dict | Callable] | None = None,
        reasoning_key: str = "reasoning_content",
        id_seed: Any = None,
        spans: bool = False,
        on_malformed: str = "raise",
    ):
        if on_malformed not in ("raise", "event"):
            raise ValueError(f"DeltaParser: on_malformed must be 'raise' or 'event', got {on_malformed!r}")
        if not isinstance(reasoning_key, str) or not reasoning_key:
            raise TypeError(f"DeltaParser: reasoning_key must be a non-empty str, got {reasoning_key!r}")
        compiled = compile_template(template)
        if tools is not None:
            tools = _tool_list(tools)
        if not isinstance(spans, bool):
            raise TypeError(f"DeltaParser: spans must be True or False, got {type(spans).__name__}")
        fields = compiled.template.get("fields", {})
        text = {
            name: TextField("content" if name == "content" else reasoning_key, fields[name])
            for name in ("content", "reasoning_content")
            if name in fields
        }
        # spans=True underneath: open events carry the open delimiter's captures (names, ids)
        parser = compiled.parser(prefix=prefix, tools=tools, spans=True, on_malformed=on_malformed)
        DeltaStream.__init__(
            self,
            parser,
            text,
            _template_plan(compiled),
            parser._tools or {},  # the tool types the parser reads from tools
            id_seed,
            reasoning_key,
            spans,
        )

    def to_message(self) -> dict:
        """The parsed message as an OpenAI ``ChatCompletionMessage`` dict, with the ids the
        stream sent: what the deltas add up to (see :func:`to_message`)."""
        if self.message is None:
            raise RuntimeError("DeltaParser: to_message() needs the whole message: call finish() first")
        sent = self.sent_ids()

        def ids(index: int, call: Any) -> str:
            return sent[index] if index < len(sent) and sent[index] else (call_id(call) or self.new_id())

        return message_dict(self.message, self.reasoning_key, ids)
