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
events into deltas. Text fields stream as they are (stripped at both ends as the field's
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

import io
import json
import math
import random
import re
import string
import sys
from collections.abc import Callable, Iterable
from typing import Any

import regex

from .api import _tool_list, compile_template
from .compiler.regexinfo import lazy_group_split
from .runtime.content import make_parser
from .runtime.tools import ToolTypes, coerce_value, schema_types, tool_types

__all__ = ["DeltaParser", "JsonScanner", "arguments_text", "to_message"]

_ID_ALPHABET = string.ascii_letters + string.digits
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
#: the JSON types tool typing turns a string into (runtime/tools.py casts only these)
_CASTABLE = frozenset({"integer", "number", "boolean", "null", "object", "array"})


def _new_id(rng: random.Random) -> str:
    """An OpenAI-style call id: ``call_`` and 24 random alphanumerics."""
    return "call_" + "".join(rng.choices(_ID_ALPHABET, k=24))


def _dumps(value: Any) -> str:
    """The canonical JSON text of ``value``: what every argument fragment is cut from."""
    return json.dumps(value, ensure_ascii=False)


def arguments_text(function: Any) -> str:
    """A call's ``function.arguments`` as OpenAI sends it: a JSON text.

    Arguments the parser decoded (an object, a list, a number) are written as canonical
    JSON; arguments that are a string are sent as they are: the model wrote its arguments as
    a JSON string (OpenAI's own convention), or wrote what is not JSON (a call cut short,
    ``allow_non_json``), which OpenAI's API would send as written too. A call without
    arguments has ``{}``; a call whose ``function`` is not an object (the raw text of a body
    that was not JSON) has that text.
    """
    if not isinstance(function, dict):
        return function if isinstance(function, str) else _dumps(function)
    if "arguments" not in function:
        return "{}"
    arguments = function["arguments"]
    return arguments if isinstance(arguments, str) else _dumps(arguments)


def _function_name(function: Any) -> str:
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else ""


def _call_id(call: Any) -> str | None:
    """The id the format wrote for ``call`` (a message's tool call), or None."""
    found = call.get("id") if isinstance(call, dict) else None
    if found is None or found == "":
        return None
    return found if isinstance(found, str) else str(found)


def _message_dict(message: dict, reasoning_key: str, ids: Callable[[int, Any], str]) -> dict:
    """``message`` (respc's) as a ChatCompletionMessage dict; ``ids(i, call)`` names call i."""
    content = message.get("content")
    out: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) and content else None}
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        out[reasoning_key] = reasoning
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [
            {
                "id": ids(index, call),
                "type": "function",
                "function": {
                    "name": _function_name(call.get("function") if isinstance(call, dict) else None),
                    "arguments": arguments_text(call.get("function") if isinstance(call, dict) else call),
                },
            }
            for index, call in enumerate(calls)
        ]
    return out


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
    rng = random.Random(id_seed)
    return _message_dict(message, reasoning_key, lambda index, call: _call_id(call) or _new_id(rng))


# --------------------------------------------------------------------------------------
# The incremental JSON scanner
# --------------------------------------------------------------------------------------

#: scanner states; ``_STRING``: inside a value string with nothing pending, where plain text
#: passes through as it is (``_XSTRING``: inside a key string, or after half an escape or a
#: surrogate pair's first half)
_VALUE, _AFTER, _KEY, _COLON, _STRING, _XSTRING, _NUMBER, _WORD, _DONE, _BAD = range(10)
_WS = " \t\n\r"
#: the last characters (``text[-1:]``) of a text chunk that is not sent as it is: whitespace
#: (what ``str.strip`` strips, ``str.isspace``: all of it below U+3001), and "" (an empty
#: chunk, which sends nothing)
_HOLD_END = frozenset([""] + [chr(code) for code in range(0x3001) if chr(code).isspace()])
#: where a string's plain run ends: its closing quote, an escape, or a control character
#: (which JSON does not allow raw in a string)
_STRING_STOP = re.compile(r'["\\\x00-\x1f]')
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_WORDS = {"true": "true", "false": "false", "null": "null"}
#: a one-character escape, as canonical JSON writes the character it stands for
_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "/", "b": "\\b", "f": "\\f", "n": "\\n", "r": "\\r", "t": "\\t"}
_HEX = frozenset("0123456789abcdefABCDEF")
#: the characters canonical JSON escapes (control characters, ``"``, ``\\``), by code point
_ESCAPED = {code: _dumps(chr(code))[1:-1] for code in [*range(0x20), ord('"'), ord("\\")]}
#: reads one keyword argument of a python-call-list call (as ``[f(k=v)]``)
_CALL_LIST = make_parser("python-call-list")


class JsonScanner:
    """Reads one JSON value in pieces and tells a handler what it reads, as canonical JSON.

    ``feed(text)`` may end anywhere (inside a string, an escape, a number); the scanner
    keeps only its state between pieces (the container stack, a partial escape, a number
    or word being read) and never reads a character twice. The handler is told:

    * ``begin(kind, depth)``: a value starts (``kind`` is its first character: ``{``,
      ``[``, ``"``, or ``0`` for a number or a word), ``depth`` containers deep;
    * ``text(piece)``: canonical JSON text of what was read (``{``, ``"key": ``, a string's
      characters re-escaped, ``, ``, a complete number...), in order; concatenated, it is
      ``json.dumps(value, ensure_ascii=False)`` of the value read (duplicate keys kept);
    * ``key(name, depth)``: an object member's key was read (before its ``text``);
    * ``end(depth)``: the value that began at ``depth`` is complete (after its ``text``).

    A string's text arrives as its characters do; a number or a word once the character
    after it shows it is complete. The text read between two other calls is told in one
    ``text`` call (at the latest when ``feed`` returns). A handler with a ``max_depth``
    attribute is told ``begin``, ``key`` and ``end`` only down to that depth (the text of
    deeper values comes all the same). ``state == _BAD`` once the text is not JSON (the
    rest is ignored), ``done`` once one whole value was read.
    """

    __slots__ = ("handler", "max_depth", "state", "stack", "partial", "high", "key_parts", "in_key", "first", "out")

    def __init__(self, handler: Any):
        self.handler = handler
        max_depth = getattr(handler, "max_depth", None)
        self.max_depth: int = sys.maxsize if max_depth is None else max_depth
        self.state = _VALUE
        self.stack: list[str] = []  # the open containers: "{" or "["
        self.partial = ""  # an escape, number or word not complete yet
        self.high = ""  # a high surrogate escape (\uD8xx) waiting for its low half
        self.key_parts: list[str] = []
        self.in_key = False
        self.first = False  # the open container has no item yet
        self.out: list[str] = []  # text read, not told yet (see _flush)

    @property
    def done(self) -> bool:
        return self.state == _DONE

    @property
    def bad(self) -> bool:
        return self.state == _BAD

    def feed(self, text: str) -> None:
        """Read ``text``, the next piece of the JSON value."""
        if self.state == _STRING and '"' not in text and "\\" not in text and text.isprintable():
            # the common piece: string text as it is (no closing quote, no escape, no control
            # character; isprintable is False for a few other characters too, which then
            # take the general path below)
            self.handler.text(text)
            return
        try:
            self._read(text)
        finally:
            if self.out:
                self._flush()

    def _read(self, text: str) -> None:
        i = 0
        n = len(text)
        out = self.out
        limit = self.max_depth
        while i < n:
            state = self.state
            if state == _STRING or state == _XSTRING:
                i = self._string(text, i, n)
                continue
            c = text[i]
            if state == _NUMBER or state == _WORD:
                chars = _NUMBER_CHARS if state == _NUMBER else None
                j = i
                if chars is not None:
                    while j < n and text[j] in chars:
                        j += 1
                else:
                    while j < n and text[j].isalpha():
                        j += 1
                self.partial += text[i:j]
                if j == n:
                    return
                i = j
                self._scalar_end()
                continue
            if c in _WS:
                i += 1
                continue
            if state == _VALUE:
                depth = len(self.stack)
                if c == "{" or c == "[":
                    if depth <= limit:
                        self._begin(c, depth)
                    out.append(c)
                    self.stack.append(c)
                    self.first = True
                    self.state = _KEY if c == "{" else _VALUE
                elif c == '"':
                    if depth <= limit:
                        self._begin(c, depth)
                    out.append('"')
                    self.in_key = False
                    self.state = _STRING
                elif c == "-" or "0" <= c <= "9":
                    if depth <= limit:
                        self._begin("0", depth)
                    self.partial = ""
                    self.state = _NUMBER
                    continue
                elif c.isalpha():
                    if depth <= limit:
                        self._begin("0", depth)
                    self.partial = ""
                    self.state = _WORD
                    continue
                elif c == "]" and self.first and self.stack and self.stack[-1] == "[":
                    self._close(c)
                else:
                    self.state = _BAD
                    return
            elif state == _KEY:
                if c == '"':
                    self.in_key = True
                    self.key_parts = []
                    self.state = _XSTRING
                elif c == "}" and self.first:
                    self._close(c)
                else:
                    self.state = _BAD
                    return
            elif state == _COLON:
                if c != ":":
                    self.state = _BAD
                    return
                self.state = _VALUE
            elif state == _AFTER:
                top = self.stack[-1]
                if c == ",":
                    out.append(", ")
                    self.first = False
                    self.state = _KEY if top == "{" else _VALUE
                elif (c == "}" and top == "{") or (c == "]" and top == "["):
                    self._close(c)
                else:
                    self.state = _BAD
                    return
            else:  # _DONE (only whitespace may follow) or _BAD
                self.state = _BAD
                return
            i += 1

    def finish(self) -> None:
        """The text has ended: a number or word at the very end is complete."""
        if self.state == _NUMBER or self.state == _WORD:
            self._scalar_end()
            if self.out:
                self._flush()

    # --- helpers -------------------------------------------------------------------
    def _flush(self) -> None:
        """Tell the handler the text read since it was last told anything."""
        out = self.out
        text = out[0] if len(out) == 1 else "".join(out)
        out.clear()
        if text:
            self.handler.text(text)

    def _begin(self, kind: str, depth: int) -> None:
        if self.out:
            self._flush()
        self.handler.begin(kind, depth)

    def _close(self, c: str) -> None:
        self.stack.pop()
        self.out.append(c)
        self._value_end()

    def _value_end(self) -> None:
        """A value is complete: what may follow it."""
        depth = len(self.stack)
        if depth <= self.max_depth:
            if self.out:
                self._flush()
            self.handler.end(depth)
        self.first = False
        self.state = _AFTER if self.stack else _DONE

    def _scalar_end(self) -> None:
        token = self.partial
        self.partial = ""
        if self.state == _NUMBER:
            if _NUMBER.fullmatch(token) is None:
                self.state = _BAD
                return
            # the number as json reads and writes it (-0 -> 0, 1.0E2 -> 100.0, 1e400 -> Infinity)
            if "." in token or "e" in token or "E" in token:
                value = float(token)
                canonical = repr(value) if math.isfinite(value) else _dumps(value)
            else:
                canonical = token if token != "-0" else "0"
        else:
            canonical = _WORDS.get(token)
            if canonical is None:
                self.state = _BAD  # NaN, Infinity, a bare word: left to the close
                return
        self.out.append(canonical)
        self._value_end()

    def string_text(self, text: str) -> str:
        """Read ``text``, which stays inside a value string (it holds no ``"``), and return
        its canonical text instead of telling the handler (DeltaParser's quick path)."""
        self._string(text, 0, len(text))
        out = self.out
        piece = out[0] if len(out) == 1 else "".join(out)
        out.clear()
        return piece

    def _string(self, text: str, i: int, n: int) -> int:
        """Read string text from ``i``: plain runs as they are, escapes re-escaped."""
        out = self.key_parts if self.in_key else self.out
        if self.partial:  # an escape cut by the last piece
            have = len(self.partial)
            escape = self.partial + text[i : i + 5]
            if len(escape) < 2 or (escape[1] == "u" and len(escape) < 6):
                self.partial = escape
                return n
            size = 6 if escape[1] == "u" else 2
            self.partial = ""
            i += size - have
            piece = self._escape(escape[:size])
            if piece is None:
                return n
            if piece:
                out.append(piece)
        while i < n:
            m = _STRING_STOP.search(text, i)
            j = n if m is None else m.start()
            if j > i:
                if self.high:
                    out.append(self._lone_high())
                out.append(text[i:j])
            if m is None:
                break
            c = text[j]
            if c == '"':
                if self.high:
                    out.append(self._lone_high())
                return self._string_end(j + 1)
            if c != "\\":
                self.state = _BAD  # a raw control character
                break
            if j + 1 >= n or (text[j + 1] == "u" and j + 6 > n):
                self.partial = text[j:]
                break
            size = 6 if text[j + 1] == "u" else 2
            piece = self._escape(text[j : j + size])
            if piece is None:
                break
            if piece:
                out.append(piece)
            i = j + size
        if self.state != _BAD:  # the piece ended inside the string
            self.state = _XSTRING if self.in_key or self.partial or self.high else _STRING
        return n

    def _escape(self, escape: str) -> str | None:
        """The canonical text of one escape (``\\n``, ``\\u00e9``), "" while a surrogate
        pair's first half waits for its second; None (the scanner stops) if it is not JSON's."""
        if escape[1] != "u":
            canonical = _ESCAPES.get(escape[1])
            if canonical is None:
                self.state = _BAD
                return None
            return self._lone_high() + canonical if self.high else canonical
        digits = escape[2:]
        if len(digits) != 4 or not _HEX.issuperset(digits):
            self.state = _BAD
            return None
        code = int(digits, 16)
        lone = ""
        if self.high:
            if 0xDC00 <= code <= 0xDFFF:  # the pair's second half: one character
                high = int(self.high[2:], 16)
                self.high = ""
                return chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00))
            lone = self._lone_high()
        if 0xD800 <= code <= 0xDBFF:
            self.high = escape  # wait for the second half
            return lone
        if 0xDC00 <= code <= 0xDFFF:
            return lone + escape.lower()  # a lone surrogate stays an escape (it has no UTF-8)
        return lone + _ESCAPED.get(code, chr(code))

    def _lone_high(self) -> str:
        high = self.high.lower()
        self.high = ""
        return high

    def _string_end(self, i: int) -> int:
        if self.in_key:
            self.in_key = False
            escaped = "".join(self.key_parts)
            depth = len(self.stack)
            if depth <= self.max_depth:
                if self.out:
                    self._flush()
                self.handler.key(json.loads(f'"{escaped}"') if "\\" in escaped else escaped, depth)
            self.out.append(f'"{escaped}": ')
            self.state = _COLON
            return i
        self.out.append('"')
        self._value_end()
        return i


# --------------------------------------------------------------------------------------
# Calls being streamed
# --------------------------------------------------------------------------------------


class _Call:
    """One tool call of the stream: its index, what is known of it, what was sent."""

    __slots__ = ("index", "name", "id", "sent", "sent_text", "pending", "off", "complete", "hold", "hold_key")

    def __init__(self, index: int):
        self.index = index
        self.name: str | None = None
        self.id: str | None = None
        self.sent = False  # its first delta (id, name) was sent
        # the argument text sent, for the close to check it against the final arguments: a
        # StringIO keeps about the text's size (its recent writes, a few MB at most, until
        # it joins them), where a list of the fragments would take ~60 bytes a fragment
        self.sent_text = io.StringIO()
        self.pending: list[str] = []  # fragments waiting for the first delta
        self.off = False  # the arguments are left to the close
        self.complete = False  # the arguments were sent whole (as the model wrote them)
        self.hold: list[str] | None = None  # an argument typing may change, being read
        self.hold_key = ""


class _Out:
    """The deltas of one feed, with neighbouring text of one kind merged into one delta."""

    __slots__ = ("deltas", "kind", "pieces")

    def __init__(self) -> None:
        self.deltas: list[dict] = []
        self.kind: Any = None  # the key (str) or call index (int) the pieces are for
        self.pieces: list[str] = []

    def add(self, kind: Any, piece: str) -> None:
        if kind != self.kind:
            self.flush()
            self.kind = kind
        self.pieces.append(piece)

    def delta(self, delta: dict) -> None:
        self.flush()
        self.deltas.append(delta)

    def flush(self) -> None:
        kind = self.kind
        if kind is None:
            return
        text = "".join(self.pieces) if len(self.pieces) > 1 else self.pieces[0]
        self.pieces = []
        self.kind = None
        if type(kind) is int:
            self.deltas.append({"tool_calls": [{"index": kind, "function": {"arguments": text}}]})
        else:
            self.deltas.append({kind: text})

    def take(self) -> list[dict]:
        if self.kind is not None:
            self.flush()
        deltas = self.deltas
        self.deltas = []
        return deltas


class _Plan:
    """How a tool-call field's regions stream (read from the template by ``_plan``).

    ``body``: "json", "xml", "calls" (python-call-list) or None (sent at the close);
    ``shape`` for JSON: "args" (the body is the arguments), "object" (an object with
    ``name`` and ``arguments``) or "each" (a list of such objects); ``name``, ``args``,
    ``id``: where those are, as ``("caps", group)`` (the open delimiter's captures),
    ``("member", key)`` (a key of the call's object) or None.
    """

    __slots__ = ("body", "shape", "each", "name", "args", "id", "xml_parser", "xml_pattern", "xml_tail")

    def __init__(self, body: str | None, each: bool):
        self.body = body
        self.each = each
        self.shape: str | None = None
        self.name: tuple[str, str] | None = None
        self.args: tuple[str, str] | None = None
        self.id: tuple[str, str] | None = None
        self.xml_parser: Callable[[str], dict] | None = None
        self.xml_pattern: Any = None
        self.xml_tail = ""


def _placeholder(value: Any) -> str | None:
    match = _PLACEHOLDER.fullmatch(value) if isinstance(value, str) else None
    return match.group(1) if match else None


def _plan(field: dict) -> _Plan:
    """Read how a tool-call field's body and transform lay out its calls (see ``_Plan``)."""
    content = field.get("content", "text")
    args = field.get("content_args") or {}
    each = bool(field.get("transform_each"))
    transform = field.get("transform")
    plan = _Plan(None, each)
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
        split = lazy_group_split(args["tag_pattern"])
        if split is not None:  # a parameter is complete once its tail literal is written
            plan.body = "xml"
            plan.xml_parser = make_parser("xml-inline", args)
            plan.xml_pattern = regex.compile(args["tag_pattern"], regex.DOTALL)
            plan.xml_tail = split[2]
    elif content == "python-call-list" and each and plan.args == ("member", "arguments") and plan.name == ("member", "name"):
        plan.body = "calls"
    return plan


class _Region:
    """An open tool-call region: its calls and the reader of its body."""

    __slots__ = ("calls", "reader", "scanner", "caps")

    def __init__(self, caps: dict | None):
        self.calls: list[_Call] = []
        self.reader: Any = None
        self.scanner: JsonScanner | None = None  # the reader, when it is a JsonScanner
        self.caps = caps


class _TextField:
    """How a text field streams: its delta key, whether it strips, its join."""

    __slots__ = ("key", "strip", "join", "stream", "blocks", "started", "ws", "join_due", "ready", "live")

    def __init__(self, key: str, field: dict):
        self.key = key
        content = field.get("content", "text")
        args = field.get("content_args") or {}
        self.strip = args.get("strip", True) is not False
        self.join = field.get("join")
        # text that is the value as written (after strip); other fields are sent at the close
        self.stream = content == "text" and "transform" not in field
        self.blocks = 0  # regions of this field closed so far
        self.started = False
        self.ws: list[str] = []  # whitespace held back (it ends the value unless text follows)
        self.join_due = False
        #: the open region's text is being sent (its start was, no join is due): each chunk
        #: is sent as ``piece`` gives it
        self.ready = False
        #: ready, and no whitespace held: a chunk that does not end in whitespace is sent
        #: as it is
        self.live = False

    def piece(self, text: str) -> str:
        """What to send of a chunk of the open region: with ``strip``, less the whitespace
        at the value's start, and with the whitespace at the chunk's end held back (sent
        before the next text, dropped if the value ends)."""
        if not self.strip:
            return text
        if not self.started:
            text = text.lstrip()
            if not text:
                return ""
            self.started = True
        core = text.rstrip()
        if not core:
            self.ws.append(text)
            self.live = False
            return ""
        tail = text[len(core) :]
        if self.ws:
            core = "".join(self.ws) + core
            self.ws.clear()
        if tail:
            self.ws.append(tail)
        self.live = self.ready and not tail
        return core


class DeltaParser:
    """Turns a model's raw output, fed as it is generated, into Chat Completions deltas.

    ``template`` and ``prefix`` as for :func:`respc.get_response_parser`; ``tools`` (the
    request's tools) type arguments as the parsed message types them; ``reasoning_key``
    names the reasoning delta's key (``"reasoning"`` for some clients); ``id_seed`` seeds
    the ids of calls whose format writes none; ``spans=True`` keeps the parser's events
    behind each call's deltas, with their offsets, in ``events``.

    ``feed(text)`` returns the deltas ``text`` completes; ``finish(length=False)`` returns
    the last deltas and the finish reason; afterwards ``message`` is the parsed message and
    ``to_message()`` the OpenAI message the deltas add up to. Errors of the underlying
    parser (a malformed call, by default) are raised as they are.
    """

    def __init__(
        self,
        template: Any,
        *,
        prefix: str | None = None,
        tools: Iterable[dict | Callable] | None = None,
        reasoning_key: str = "reasoning_content",
        id_seed: Any = None,
        spans: bool = False,
    ):
        if not isinstance(reasoning_key, str) or not reasoning_key:
            raise TypeError(f"DeltaParser: reasoning_key must be a non-empty str, got {reasoning_key!r}")
        compiled = compile_template(template)
        if tools is not None:
            tools = _tool_list(tools)
        if not isinstance(spans, bool):
            raise TypeError(f"DeltaParser: spans must be True or False, got {type(spans).__name__}")
        # spans=True underneath: open events carry the open delimiter's captures (names, ids)
        self._parser = compiled.parser(prefix=prefix, tools=tools, spans=True)
        self._feed = self._parser.feed  # until finish (then _feed_finished)
        self._spans = spans
        self._tools: ToolTypes = tool_types(tools) if tools else {}
        self._typed: dict[str, dict[str, bool]] = {}
        self._rng = random.Random(id_seed)
        self.reasoning_key = reasoning_key
        fields = compiled.template.get("fields", {})
        self._text = {
            name: _TextField("content" if name == "content" else reasoning_key, fields[name])
            for name in ("content", "reasoning_content")
            if name in fields
        }
        self._plan = _plan(fields["tool_calls"]) if "tool_calls" in fields else None
        self._calls: list[_Call] = []
        self._region: _Region | None = None
        self._out = _Out()
        self._out.delta({"role": "assistant"})
        self._first = True  # the first feed also returns the role delta and the prefix's
        self._finished = False
        #: the parsed message, once finished
        self.message: dict | None = None
        #: with spans=True: the parser's events (with offsets and captures) behind the last
        #: deltas (those of the prefix, then of the last feed or finish)
        self.events: list[dict] = list(self._parser.initial_events) if spans else []
        self._events(self._parser.initial_events)

    # --- public API ------------------------------------------------------------------
    def feed(self, text: str) -> list[dict]:
        """Add generated text; return the deltas it completes."""
        events = self._feed(text)
        if self._spans:
            self.events = events
        if len(events) == 1 and not self._first:
            # the common chunk: one region_chunk, inside a text field or a call's arguments,
            # handled here in one go (the same deltas as the general path below)
            event = events[0]
            if event["type"] == "region_chunk":
                text = event["text"]
                field = self._text.get(event["field"])
                if field is not None:
                    if field.live and text[-1:] not in _HOLD_END:
                        return [{field.key: text}]
                    if field.ready:
                        text = field.piece(text)
                        return [{field.key: text}] if text else []
                elif event["field"] == "tool_calls" and self._region is not None:
                    scanner = self._region.scanner
                    if scanner is not None:
                        if '"' not in text and (scanner.state == _STRING or (scanner.state == _XSTRING and not scanner.in_key)):
                            # text that stays inside a value string (it cannot close it),
                            # sent straight to its call when nothing holds the call back
                            call = scanner.handler.target
                            if call is not None and call.sent and not call.off and call.hold is None:
                                if scanner.state != _STRING or "\\" in text or not text.isprintable():
                                    text = scanner.string_text(text)  # escapes (see JsonScanner.feed)
                                    if not text:
                                        return []
                                call.sent_text.write(text)
                                return [{"tool_calls": [{"index": call.index, "function": {"arguments": text}}]}]
                        scanner.feed(text)
                    elif self._region.reader is not None:
                        self._region.reader.feed(text)
                    return self._out.take()
        elif not events and not self._first:
            return []
        if events:
            self._events(events)
        self._first = False
        return self._out.take()

    def finish(self, length: bool = False) -> tuple[list[dict], str]:
        """End the stream: ``(last deltas, finish_reason)``. ``length=True``: the output was
        cut (a token limit), the reason is ``"length"``; otherwise ``"tool_calls"`` when
        the message has calls, else ``"stop"``."""
        if self._finished:
            raise RuntimeError("DeltaParser: already finished; create a new one for the next generation")
        message, events = self._parser.finalize()
        if self._spans:
            self.events = events
        self._finished = True
        self._feed = _feed_finished
        self._events(events)
        self.message = message
        if length:
            reason = "length"
        else:
            reason = "tool_calls" if any(call.sent for call in self._calls) else "stop"
        return self._out.take(), reason

    def to_message(self) -> dict:
        """The parsed message as an OpenAI ``ChatCompletionMessage`` dict, with the ids the
        stream sent: what the deltas add up to (see :func:`to_message`)."""
        if self.message is None:
            raise RuntimeError("DeltaParser: to_message() needs the whole message: call finish() first")
        sent = [call.id for call in self._calls]

        def ids(index: int, call: Any) -> str:
            return sent[index] if index < len(sent) and sent[index] else (_call_id(call) or _new_id(self._rng))

        return _message_dict(self.message, self.reasoning_key, ids)

    # --- events --------------------------------------------------------------------
    def _events(self, events: list[dict]) -> None:
        for event in events:
            kind = event["type"]
            name = event["field"]
            if name == "tool_calls" and self._plan is not None:
                if kind == "region_chunk":
                    reader = self._region.reader if self._region is not None else None
                    if reader is not None:
                        reader.feed(event["text"])
                elif kind == "region_open":
                    self._call_open(event.get("captures"))
                elif kind == "region_close":
                    self._call_close(event["value"])
                else:  # region_malformed (on_malformed="event"): nothing more of these calls
                    self._region = None
                continue
            field = self._text.get(name)
            if field is None:
                continue
            if kind == "region_chunk":
                if field.stream:
                    self._text_chunk(field, event["text"])
            elif kind == "region_open":
                field.started = False
                field.ready = field.live = False
                field.ws.clear()
                field.join_due = field.join is not None and field.blocks > 0
            elif kind == "region_close":
                if field.join_due:
                    self._out.add(field.key, field.join)
                    field.join_due = False
                if not field.stream and isinstance(event["value"], str) and event["value"]:
                    self._out.add(field.key, event["value"])
                field.blocks += 1
            # region_malformed: the value is left out of the message; what was sent stays

    def _text_chunk(self, field: _TextField, text: str) -> None:
        """Send a text field's chunk, less the whitespace its strip may drop."""
        text = field.piece(text)
        if not text:
            return
        if field.join_due:
            self._out.add(field.key, field.join)
            field.join_due = False
        self._out.add(field.key, text)
        field.ready = True
        field.live = not field.ws

    # --- tool calls ----------------------------------------------------------------
    def _call_open(self, caps: dict | None) -> None:
        plan = self._plan
        region = self._region = _Region(caps)
        if plan.body is None:
            return
        if plan.shape == "args":
            if caps is None:
                return  # no captures (a runtime without spans): the name comes at the close
            call = self._new_call()
            region.calls.append(call)
            self._learn(call, "caps", caps)
            region.reader = _XmlReader(self, call) if plan.body == "xml" else JsonScanner(_ArgsHandler(self, call))
        elif plan.body == "json":
            region.reader = JsonScanner(_CallsHandler(self, region, 1 if plan.shape == "each" else 0))
        elif plan.body == "calls":
            region.reader = _CallListReader(self, region)
        if type(region.reader) is JsonScanner:
            region.scanner = region.reader

    def _new_call(self) -> _Call:
        call = _Call(len(self._calls))
        self._calls.append(call)
        return call

    def _learn(self, call: _Call, source: str, found: dict) -> None:
        """Take the call's name and id from ``found`` (captures or its object's members),
        where the plan says they are; send its first delta once both are known."""
        plan = self._plan
        if call.name is None and plan.name is not None and plan.name[0] == source:
            name = found.get(plan.name[1])
            if isinstance(name, str):
                call.name = name
        if call.id is None and plan.id is not None and plan.id[0] == source:
            if plan.id[1] in found:
                value = found[plan.id[1]]
                call.id = value if isinstance(value, str) else str(value)
        self._maybe_start(call, False)

    def _maybe_start(self, call: _Call, last: bool) -> None:
        """Send the call's first delta if its name is known and its id too (or will never
        be: ``last``); then what was waiting for it."""
        if call.sent or call.name is None:
            return
        if call.id is None and self._plan.id is not None and not last:
            return
        if not call.id:
            call.id = _new_id(self._rng)
        call.sent = True
        self._out.delta(
            {
                "tool_calls": [
                    {
                        "index": call.index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        if call.pending:
            pending = "".join(call.pending)
            call.pending.clear()
            call.sent_text.write(pending)
            self._out.add(call.index, pending)

    def _typed_key(self, call: _Call, key: str) -> bool:
        """Whether tool typing may change argument ``key`` of ``call`` when it is a string
        or a list (then it is sent whole, once typed). Typing leaves a number, a literal and
        an object as they are: the handlers send those as they read them."""
        if not self._tools:
            return False
        table = self._typed.get(call.name)
        if table is None:
            table = self._typed[call.name] = {}
        typed = table.get(key)
        if typed is None:
            properties = self._tools.get(call.name) or {}
            try:
                typed = not _CASTABLE.isdisjoint(schema_types(properties.get(key)))
            except TypeError:
                typed = True  # a schema typing cannot read: the close raises its error
            table[key] = typed
        return typed

    def _write(self, call: _Call, piece: str) -> None:
        """Argument text of ``call``: sent, or kept until its first delta or typing."""
        if call.off:
            return
        if call.hold is not None:
            call.hold.append(piece)
        elif call.sent:
            call.sent_text.write(piece)
            self._out.add(call.index, piece)
        else:
            call.pending.append(piece)

    def _hold_end(self, call: _Call) -> None:
        """A held argument is complete: send it typed."""
        held = "".join(call.hold)
        call.hold = None
        value = json.loads(held)
        typed = coerce_value({"function": {"name": call.name, "arguments": {call.hold_key: value}}}, self._tools)
        self._write(call, _dumps(typed["function"]["arguments"][call.hold_key]))

    def _call_close(self, value: Any) -> None:
        """A tool-call region closed with ``value``: settle its calls against it."""
        region = self._region
        self._region = None
        if region is None:
            region = _Region(None)
        if region.reader is not None and hasattr(region.reader, "finish"):
            region.reader.finish()
        calls = value if self._plan.each else [value]
        if not isinstance(calls, list):
            return
        for j, final in enumerate(calls):
            call = region.calls[j] if j < len(region.calls) else None
            if call is None:
                call = self._new_call()
            function = final.get("function") if isinstance(final, dict) else final
            canonical = arguments_text(function)
            if not call.sent:
                call.name = _function_name(function)
                call.id = _call_id(final)
                call.pending.clear()
                call.off = True
                self._maybe_start(call, True)
                self._send_rest(call, canonical)
                continue
            sent = call.sent_text.getvalue()
            if canonical.startswith(sent):
                self._send_rest(call, canonical[len(sent) :])
            elif not call.complete and isinstance(function, dict) and isinstance(function.get("arguments"), dict):
                # what was sent is not the start of the arguments' text (a key written twice,
                # typing that saw another name): every member again, the last of a key wins
                arguments = function["arguments"]
                members = ", ".join(f"{_dumps(k)}: {_dumps(v)}" for k, v in arguments.items())
                if sent == "{" or sent.endswith(", "):
                    self._send_rest(call, members + "}")
                elif sent.startswith("{") and _object_open(sent):
                    self._send_rest(call, (", " + members if members else "") + "}")
            # otherwise the arguments are not JSON the stream could have sent (a call cut
            # short, a body that was not JSON): what was sent stays

    def _send_rest(self, call: _Call, text: str) -> None:
        if text:
            call.sent_text.write(text)
            self._out.add(call.index, text)


def _feed_finished(text: str) -> list[dict]:
    raise RuntimeError("DeltaParser: already finished; create a new one for the next generation")


def _object_open(sent: str) -> bool:
    """Whether ``sent`` (argument text the stream sent) ends between two members of its
    top-level object: a complete JSON object less its closing brace."""
    try:
        json.loads(sent + "}")
    except ValueError:
        return False
    return True


class _ArgsHandler:
    """Routes a JSON body that is one call's arguments (the ``args`` shape) to that call.

    ``target`` (in both handlers): the call a value string's text goes to, or None; the
    parser's fast path writes a plain chunk there itself."""

    __slots__ = ("parser", "call", "current", "target")

    max_depth = 1  # the arguments (0) and their members (1)

    def __init__(self, parser: DeltaParser, call: _Call):
        self.parser = parser
        self.call = call
        self.current = ""
        self.target = call

    def begin(self, kind: str, depth: int) -> None:
        call = self.call
        if depth == 0:
            if kind == '"' or kind == "0":
                call.off = True  # a string or scalar as the arguments: sent at the close
        elif depth == 1 and kind != "0" and self.parser._typed_key(call, self.current):
            call.hold = []
            call.hold_key = self.current

    def key(self, name: str, depth: int) -> None:
        if depth == 1:
            self.current = name

    def text(self, piece: str) -> None:
        self.parser._write(self.call, piece)

    def end(self, depth: int) -> None:
        call = self.call
        if depth == 1 and call.hold is not None:
            self.parser._hold_end(call)
        elif depth == 0:
            call.complete = not call.off


class _CallsHandler:
    """Routes a JSON body of call objects (``object``: one; ``each``: a list of them) to
    the calls: each object's name and id members, and its arguments member as it is read."""

    __slots__ = ("parser", "region", "top", "max_depth", "call", "member", "current", "parts", "args_depth", "target")

    def __init__(self, parser: DeltaParser, region: _Region, top: int):
        self.parser = parser
        self.region = region
        self.top = top  # the depth of the call objects
        self.max_depth = top + 2  # the calls, their members, the arguments' members
        self.call: _Call | None = None
        self.member = ""  # the call object's member being read
        self.current = ""  # the arguments' member being read
        self.parts: list[str] | None = None  # a name or id string being read
        self.args_depth = -1  # the depth of the arguments value while it is read
        self.target: _Call | None = None  # the call, while its arguments are read

    def begin(self, kind: str, depth: int) -> None:
        parser = self.parser
        plan = parser._plan
        if depth == self.top:
            if kind == "{":
                self.call = parser._new_call()
                self.region.calls.append(self.call)
                if self.region.caps is not None:
                    parser._learn(self.call, "caps", self.region.caps)
            else:
                self.call = None
            return
        call = self.call
        if call is None:
            return
        if depth == self.top + 1:
            member = self.member
            if (plan.name and plan.name == ("member", member)) or (plan.id and plan.id == ("member", member)):
                self.parts = [] if kind == '"' or kind == "0" else None
            elif member == plan.args[1]:
                self.args_depth = depth
                self.target = call
                if kind == '"' or kind == "0" or (call.name is None and parser._tools):
                    call.off = True  # arguments as a string or scalar, or before the name
        elif depth == self.args_depth + 1 and kind != "0" and call.name is not None and parser._typed_key(call, self.current):
            call.hold = []
            call.hold_key = self.current

    def key(self, name: str, depth: int) -> None:
        if depth == self.top + 1:
            self.member = name
        elif depth == self.args_depth + 1:
            self.current = name

    def text(self, piece: str) -> None:
        if self.target is not None:
            self.parser._write(self.target, piece)
        elif self.parts is not None:
            self.parts.append(piece)

    def end(self, depth: int) -> None:
        call = self.call
        if call is None:
            return
        if self.args_depth >= 0:
            if depth == self.args_depth:
                self.args_depth = -1
                self.target = None
                call.complete = not call.off
            elif depth == self.args_depth + 1 and call.hold is not None:
                self.parser._hold_end(call)
            return
        if depth == self.top + 1 and self.parts is not None:
            value = json.loads("".join(self.parts))
            self.parts = None
            self.parser._learn(call, "member", {self.member: value})
        elif depth == self.top:
            self.parser._maybe_start(call, True)  # the object is complete: no id will come
            self.call = None


def _tail_edge(text: str, tail: str) -> str:
    """The end of ``text`` where ``tail`` may have begun (the next chunk may complete it):
    its last ``len(tail) - 1`` characters from their first ``tail[0]`` on, or ""."""
    if len(tail) < 2:
        return ""
    window = text[-(len(tail) - 1) :]
    start = window.find(tail[0])
    return window[start:] if start >= 0 else ""


class _XmlReader:
    """Reads an ``xml-inline`` body: each parameter is sent once its tail literal is written,
    as the field's own content parser reads it (then typed)."""

    __slots__ = ("parser", "call", "rest", "edge", "count", "mark")

    def __init__(self, parser: DeltaParser, call: _Call):
        self.parser = parser
        self.call = call
        self.rest: list[str] = []  # the body after the last complete parameter
        self.edge = ""  # its end where a tail literal may have begun (see _tail_edge)
        self.count = 0
        self.mark = parser._plan.xml_tail[:1]  # the tail literal's first character

    def feed(self, text: str) -> None:
        if not self.edge and self.mark not in text:  # the common chunk: no tail ends in it
            self.rest.append(text)
            return
        plan = self.parser._plan
        tail = plan.xml_tail
        seen = self.edge + text
        self.rest.append(text)
        if tail not in seen:
            self.edge = _tail_edge(seen, tail)
            return
        body = "".join(self.rest)
        end = 0
        for match in plan.xml_pattern.finditer(body):
            if match.end() == len(body) and tail not in match.group():
                break  # it may still grow
            self._parameter(plan.xml_parser(match.group()))
            end = match.end()
        rest = body[end:]
        self.rest = [rest] if rest else []
        self.edge = _tail_edge(rest, tail)

    def _parameter(self, found: dict) -> None:
        parser = self.parser
        call = self.call
        tools = parser._tools
        for key, value in found.items():
            if tools:
                value = coerce_value({"function": {"name": call.name, "arguments": {key: value}}}, tools)
                value = value["function"]["arguments"][key]
            parser._write(call, ("{" if not self.count else ", ") + f"{_dumps(key)}: {_dumps(value)}")
            self.count += 1


class _CallListReader:
    """Reads a ``python-call-list`` body (``[f(a=1, b="x"), g()]``): a call starts once its
    name and ``(`` are written, and each keyword argument is sent once the ``,`` or ``)``
    after it is, read by the field's content parser (then typed)."""

    __slots__ = ("parser", "region", "depth", "quote", "escaped", "piece", "call", "count")

    def __init__(self, parser: DeltaParser, region: _Region):
        self.parser = parser
        self.region = region
        self.depth = 0  # brackets open: 1 inside the list, 2 inside a call's parentheses
        self.quote = ""  # the quote of the string being read
        self.escaped = False
        self.piece: list[str] = []  # the call name or the argument being read
        self.call: _Call | None = None
        self.count = 0

    def feed(self, text: str) -> None:
        start = 0
        for i, c in enumerate(text):
            if self.quote:
                if self.escaped:
                    self.escaped = False
                elif c == "\\":
                    self.escaped = True
                elif c == self.quote:
                    self.quote = ""
                continue
            if c == '"' or c == "'":
                self.quote = c
            elif c in "[({":
                self.depth += 1
                if self.depth == 1:
                    self.piece = []
                    start = i + 1
                elif self.depth == 2 and c == "(":
                    self.piece.append(text[start:i])
                    self._call_start("".join(self.piece).strip().lstrip(",").strip())
                    self.piece = []
                    start = i + 1
            elif c in "])}":
                if self.depth == 2 and c == ")":
                    self.piece.append(text[start:i])
                    self._argument(True)
                    start = i + 1
                self.depth -= 1
            elif c == "," and self.depth == 2:
                self.piece.append(text[start:i])
                self._argument(False)
                start = i + 1
        if start < len(text):
            self.piece.append(text[start:])

    def _call_start(self, name: str) -> None:
        parser = self.parser
        call = self.call = parser._new_call()
        self.region.calls.append(call)
        self.count = 0
        if name:
            parser._learn(call, "member", {"name": name})
            parser._maybe_start(call, True)
        else:
            call.off = True

    def _argument(self, last: bool) -> None:
        text = "".join(self.piece).strip()
        self.piece = []
        call = self.call
        if call is None or call.off:
            return
        if text:
            try:
                found = _CALL_LIST(f"[f({text})]")[0]["arguments"]
            except ValueError:
                call.off = True  # the close raises (or settles) it
                return
            tools = self.parser._tools
            for key, value in found.items():
                if tools:
                    value = coerce_value({"function": {"name": call.name, "arguments": {key: value}}}, tools)
                    value = value["function"]["arguments"][key]
                self.parser._write(call, ("{" if not self.count else ", ") + f"{_dumps(key)}: {_dumps(value)}")
                self.count += 1
        if last:
            self.parser._write(call, "{}" if not self.count else "}")
            call.complete = True
            self.call = None
