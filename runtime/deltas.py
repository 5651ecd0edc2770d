"""The streaming core of ``respc.openai``: a parser's events as Chat Completions deltas.

``respc.openai.DeltaParser`` is the public face (it reads the template, see ``_plan``
there); this module is what runs per chunk, plain Python that setup.py compiles with the
rest of the runtime (deltas.pxd makes its classes extension types, so the common chunk is
handled in C: one event read, one delta built). Three parts:

* :class:`DeltaStream`: runs the template's parser (``spans=True``) and turns its events
  into deltas. ``feed`` hands the common chunk (one ``region_chunk`` event, inside a text
  field or a call's JSON string argument) to ``_chunk``, one typed method with no regex and
  no object but the delta; everything else goes through ``_events``.
* :class:`JsonScanner`: an incremental JSON scanner that carries its state from chunk to
  chunk and re-encodes what it reads as canonical JSON text (each character read once), so
  the cost of a chunk does not grow with the argument.
* the readers of a tool-call body: ``_ArgsHandler`` and ``_CallsHandler`` (a JSON body, via
  the scanner), ``_XmlReader`` (xml-inline parameters), ``_CallListReader``
  (python-call-list).

Whatever was sent, the region's close settles the call against the value the parser gives
(``DeltaStream._call_close``), so the fragments of a call always concatenate to the
arguments of the message (see :func:`arguments_text`).
"""

from __future__ import annotations

import json
import json.scanner
import math
import os
import random
import re
import string
import sys
import threading
from json.encoder import c_make_encoder, encode_basestring
from typing import TYPE_CHECKING, Any

from . import scan as _scan
from .base import RegexTimeout
from .content import make_parser
from .decode import MISS
from .decode import loads as _decode
from .tools import ToolTypes, coerce_value, schema_types

from .base import _plain_str

if TYPE_CHECKING:
    from .base import ParserBase

__all__ = ["DeltaStream", "JsonScanner", "arguments_text", "new_id", "seeded_id", "unseeded_id"]

_ID_ALPHABET = string.ascii_letters + string.digits
#: the JSON types tool typing turns a string into (runtime/tools.py casts only these)
_CASTABLE = frozenset({"integer", "number", "boolean", "null", "object", "array"})
_FINISHED = "DeltaParser: already finished; create a new one for the next generation"
_FAILED = (
    "DeltaParser: an earlier feed() or finish() raised (with on_malformed=\"raise\", a malformed region "
    "raises), so this stream cannot go on: create a new DeltaParser for the generation "
    "(on_malformed=\"event\" goes on past a malformed region)"
)
# Pieces of a growing text (the argument text sent, an xml body) are merged once this many
# accumulate, as the parser base merges a region's body (runtime/base.py, _MERGE_PARTS).
_MERGE_PARTS = 64


def new_id(rng: random.Random) -> str:
    """An OpenAI-style call id: ``call_`` and 24 random alphanumerics.

    The characters ``rng.choices(alphabet, k=24)`` picks (``floor(random() * 62)`` each),
    drawn in a loop that compiles to C."""
    draw = rng.random
    size = len(_ID_ALPHABET)
    chars = []
    for _ in range(24):
        x = draw() * size
        chars.append(_ID_ALPHABET[int(x)])
    return "call_" + "".join(chars)


#: unseeded_id's byte -> character table: the bytes below 248 (4 x 62) map evenly onto the
#: alphabet, the others are dropped (so each character kept is uniform)
_ID_TABLE = bytes(ord(_ID_ALPHABET[b % len(_ID_ALPHABET)]) for b in range(256))
_ID_DROPPED = bytes(range(4 * len(_ID_ALPHABET), 256))


def unseeded_id() -> str:
    """A call id of a stream without a seed: ``call_`` and 24 random alphanumerics, each
    uniform, from one ``getrandbits`` call of the shared generator (``new_id`` draws 24
    floats, and only a seeded sequence must be that one)."""
    while True:
        drawn = _UNSEEDED.getrandbits(256).to_bytes(32, "little").translate(_ID_TABLE, _ID_DROPPED)
        if len(drawn) >= 24:  # (fewer: 1 time in 10 million)
            return "call_" + drawn[:24].decode("ascii")


#: the ids of each seed drawn so far, shared by the streams given that seed (seeding a
#: generator takes 4 µs, as much as a short stream's tool calls): ``(type, seed)`` -> the
#: seed's generator and the ids it drew, the first ``_IDS_KEPT`` of its sequence at most
_SEEDED: dict[tuple, tuple[random.Random, list[str]]] = {}
_SEEDS_KEPT = 256
_IDS_KEPT = 64
_SEEDED_LOCK = threading.Lock()
#: the ids of streams without a seed: one generator (seeding one from the system's entropy
#: takes 13 µs), seeded again in a forked child, as the random module's own
_UNSEEDED = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_UNSEEDED.seed)


def seeded_id(seed: Any, index: int) -> str | None:
    """Id ``index`` (from 0) of ``random.Random(seed)``'s sequence of ids (see new_id), drawn
    once per seed and kept; None past the first ``_IDS_KEPT`` or for a seed that is not
    hashable (the caller draws those from a generator of its own)."""
    if index >= _IDS_KEPT:
        return None
    try:
        key = (type(seed), seed)
        entry = _SEEDED.get(key)
    except TypeError:
        return None
    if entry is not None and index < len(entry[1]):
        return entry[1][index]  # the list only grows: read without the lock
    with _SEEDED_LOCK:
        entry = _SEEDED.get(key)
        if entry is None:
            if len(_SEEDED) >= _SEEDS_KEPT:
                _SEEDED.clear()
            entry = (random.Random(seed), [])
            _SEEDED[key] = entry
        rng, ids = entry
        while len(ids) <= index:
            ids.append(new_id(rng))
        return ids[index]


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: ``json.dumps(value, ensure_ascii=False, allow_nan=False)`` through json's C encoder,
#: made once (what ``JSONEncoder.encode`` makes per call, less its check for circular
#: references: the values written here are decoded JSON and typed arguments, never circular)
_ITERENCODE = (
    c_make_encoder(None, _not_json, encode_basestring, None, ": ", ", ", False, False, False) if c_make_encoder else None
)
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
#: how a float that JSON has no number for is written (see _strict_dumps)
_NOT_FINITE = {math.inf: "1e999", -math.inf: "-1e999"}


class _End:
    """The end of a container's items (see _strict_dumps)."""


_END = _End()


def _dumps(value: Any) -> str:
    """The canonical JSON text of ``value``: what every argument fragment is cut from.

    Strict JSON, always (a client's ``json.loads`` under strict JSON takes it): what json
    writes, but where json would write ``Infinity``, ``-Infinity`` or ``NaN`` (text that
    is not JSON), or would recurse too deep: see ``_strict_dumps``."""
    if type(value) is str:
        return encode_basestring(value)
    try:
        if _ITERENCODE is None:
            return _ENCODE(value)
        return "".join(_ITERENCODE(value, 0))
    except (ValueError, RecursionError):
        return _strict_dumps(value)


def _scalar_text(value: Any) -> str:
    """A JSON scalar's text, as json writes it, strict (see _strict_dumps)."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "null"
        return _NOT_FINITE.get(value) or float.__repr__(value)
    return _not_json(value)


def _strict_dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` without recursion, and strict JSON: an
    infinity as ``1e999`` / ``-1e999`` (a JSON number that decodes to it: what a model
    writes as ``1e400``, or as ``Infinity``, which is not JSON) and NaN as ``null`` (JSON has
    no NaN; ``null`` is what JavaScript's ``JSON.stringify`` and orjson write for it). The
    path _dumps takes when json's encoder refuses a value (a non-finite float) or recurses
    past its limit (nesting a few thousand deep); a circular value is a ValueError, as
    json's."""
    out: list[str] = []
    stack: list[tuple[Any, bool, int]] = []  # the open containers: their items, is it a dict, id
    path: set[int] = set()
    item = value
    while True:
        is_dict = isinstance(item, dict)
        if is_dict or isinstance(item, (list, tuple)):
            if not item:
                out.append("{}" if is_dict else "[]")
            else:
                if id(item) in path:
                    raise ValueError("Circular reference detected")
                path.add(id(item))
                out.append("{" if is_dict else "[")
                stack.append((iter(item.items()) if is_dict else iter(item), is_dict, id(item)))
        else:
            out.append(_scalar_text(item))
        while stack:
            items, in_dict, ident = stack[-1]
            entry = next(items, _END)
            if entry is _END:
                stack.pop()
                path.discard(ident)
                out.append("}" if in_dict else "]")
                continue
            separator = "" if out[-1] == "{" or out[-1] == "[" else ", "
            if in_dict:
                key, item = entry
                if not isinstance(key, str):  # (decoded JSON has none: as json writes them)
                    if key is not None and not isinstance(key, (bool, int, float)):
                        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
                    key = json.dumps(key)
                out.append(separator + encode_basestring(key) + ": ")
            else:
                item = entry
                if separator:
                    out.append(separator)
            break
        else:
            return "".join(out)


#: reads one JSON value at an index, as ``json.loads`` reads it (its C scanner)
_SCAN_ONCE = json.scanner.make_scanner(json.JSONDecoder())


def _loads(text: str) -> Any:
    """The value of ``text``, canonical JSON text the scanner wrote (no whitespace around
    it): ``json.loads`` without its Python-level wrapper; ``MISS`` where Python has no value
    for it (nesting deeper than both json and orjson go, an integer past the int
    string-conversion limit), which the parser's value of the region settles (the region
    is malformed: runtime/decode.py)."""
    try:
        return _SCAN_ONCE(text, 0)[0]
    except RecursionError:
        pass  # orjson goes deeper (1024 levels)
    except ValueError:
        return MISS
    try:
        return _decode(text)
    except ValueError:
        return MISS


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


def function_name(function: Any) -> str:
    """The name of a message's call ``function`` ("" when it has none)."""
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else ""


def call_id(call: Any) -> str | None:
    """The id the format wrote for ``call`` (a message's tool call), or None."""
    found = call.get("id") if isinstance(call, dict) else None
    if found is None or found == "":
        return None
    return found if isinstance(found, str) else str(found)


def message_dict(message: dict, reasoning_key: str, ids: Any = None) -> dict:
    """``message`` (respc's) as a ChatCompletionMessage dict (``respc.openai.to_message``):
    ``ids(i, call)`` names call i; without ``ids``, a call keeps the id its format wrote and
    any other gets a new random one (``new_id``). Here, compiled with the runtime, rather than
    in respc/openai.py: it is most of a short output's ``to_message``."""
    content = message.get("content")
    out: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) and content else None}
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        out[reasoning_key] = reasoning
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        made = []
        index = 0
        for call in calls:
            if ids is None:
                found = call_id(call)
                if not found:
                    found = unseeded_id()
            else:
                found = ids(index, call)
            function = call.get("function") if isinstance(call, dict) else None
            made.append(
                {
                    "id": found,
                    "type": "function",
                    "function": {
                        "name": function_name(function),
                        "arguments": arguments_text(function if isinstance(call, dict) else call),
                    },
                }
            )
            index += 1
        out["tool_calls"] = made
    return out


def _ends_open(text: str) -> bool:
    """Whether a text field's chunk is not sent as it is: it is empty, or it ends in
    whitespace (what ``str.strip`` strips), which the strip holds back."""
    if not text:
        return True
    last = text[len(text) - 1]
    return last.isspace()


def _plain_string(text: str) -> bool:
    """Whether ``text``, inside a JSON string, is its own canonical text: no ``"``, no
    ``\\`` and no control character. A short text is read character by character (C code,
    compiled); a long one with ``in`` and ``isprintable`` (False for a few other characters
    too, which then take the scanner's general path: the same text)."""
    if len(text) > 16:
        return '"' not in text and "\\" not in text and text.isprintable()
    for c in text:
        if c < " " or c == '"' or c == "\\":
            return False
    return True


class _Text:
    """A growing text kept in few strings (recent pieces, blocks of them, bigger blocks), so
    a long stream of small pieces holds about its own size and each character is copied
    twice (as the parser base keeps a region's body)."""

    __slots__ = ("parts", "blocks", "big")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.blocks: list[str] = []
        self.big: list[str] = []

    def add(self, piece: str) -> None:
        parts = self.parts
        parts.append(piece)
        if len(parts) > _MERGE_PARTS:
            blocks = self.blocks
            blocks.append("".join(parts))
            del parts[:]
            if len(blocks) > _MERGE_PARTS:
                self.big.append("".join(blocks))
                del blocks[:]

    def value(self) -> str:
        """The whole text (kept as one piece from then on)."""
        text = "".join([*self.big, *self.blocks, *self.parts])
        self.big = []
        self.blocks = []
        self.parts = [text] if text else []
        return text


# --------------------------------------------------------------------------------------
# The incremental JSON scanner
# --------------------------------------------------------------------------------------

#: scanner states; ``_STRING``: inside a value string with nothing pending, where plain text
#: passes through as it is (``_XSTRING``: inside a key string, or after half an escape or a
#: surrogate pair's first half)
_VALUE, _AFTER, _KEY, _COLON, _STRING, _XSTRING, _NUMBER, _WORD, _DONE, _BAD = range(10)
#: what makes tracked text odd (see JsonScanner.track): a number token longer than this
#: (``int()`` reads at most 4300 digits), a container this deep (json's C decoder and
#: encoder recurse per level)
_LONG_NUMBER = 4000
_DEEP = 100
#: a control character, which JSON does not allow raw in a string
_CONTROL = re.compile(r"[\x00-\x1f]")
_WORDS = {"true": "true", "false": "false", "null": "null"}


def _run_end(text: str, i: int, n: int) -> int:
    """Where the plain run of string text from ``i`` ends: at the closing quote, an escape
    or a control character (or ``n``). A short run is read character by character (C code,
    compiled), a long one with ``str.find``."""
    if n - i <= 16:
        while i < n:
            c = text[i]
            if c == '"' or c == "\\" or c < " ":
                return i
            i += 1
        return n
    quote = text.find('"', i, n)
    j = n if quote < 0 else quote
    slash = text.find("\\", i, j)  # before the quote only: each run reads its own stretch
    if slash >= 0:
        j = slash
    if j > i and not text[i:j].isprintable():
        control = _CONTROL.search(text, i, j)
        if control is not None:
            j = control.start()
    return j


def _digits(token: str, i: int) -> int:
    """Where the run of ASCII digits from ``i`` in ``token`` ends."""
    n = len(token)
    while i < n and "0" <= token[i] <= "9":
        i += 1
    return i


def _json_number(token: str) -> bool:
    """Whether ``token`` is a JSON number: ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?``."""
    n = len(token)
    i = 1 if n and token[0] == "-" else 0
    if i == n:
        return False
    if token[i] == "0":
        i += 1
    elif "1" <= token[i] <= "9":
        i = _digits(token, i + 1)
    else:
        return False
    if i < n and token[i] == ".":
        j = _digits(token, i + 1)
        if j == i + 1:
            return False
        i = j
    if i < n and (token[i] == "e" or token[i] == "E"):
        i += 1
        if i < n and (token[i] == "+" or token[i] == "-"):
            i += 1
        j = _digits(token, i)
        if j == i:
            return False
        i = j
    return i == n


#: a one-character escape, as canonical JSON writes the character it stands for
_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "/", "b": "\\b", "f": "\\f", "n": "\\n", "r": "\\r", "t": "\\t"}
_HEX = frozenset("0123456789abcdefABCDEF")
#: the characters canonical JSON escapes (control characters, ``"``, ``\\``), by code point
_ESCAPED = {code: _dumps(chr(code))[1:-1] for code in [*range(0x20), ord('"'), ord("\\")]}
#: reads one keyword argument of a python-call-list call (as ``[f(k=v)]``)
_CALL_LIST = make_parser("python-call-list")


class _Handler:
    """What a JsonScanner tells what it reads (see JsonScanner): the internal handlers
    extend it (compiled, the scanner calls them in C); any other object is wrapped in a
    ``_Forward``.

    The scanner calls ``begin``, ``key`` and ``end`` with the text read before them not
    told yet: a handler that routes text by them calls ``flush`` first, so that text goes
    where it went before the call (the others let it join the text that follows).
    ``scanner`` is the scanner that tells it."""

    __slots__ = ("max_depth", "scanner")

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.scanner: JsonScanner | None = None

    def flush(self) -> None:
        """Be told the text the scanner read and has not told yet."""
        scanner = self.scanner
        if scanner.out or scanner.run_end > scanner.run_start:
            scanner._flush()

    def begin(self, kind: str, depth: int) -> None:
        pass

    def key(self, name: str, depth: int) -> None:
        pass

    def text(self, piece: str) -> None:
        pass

    def end(self, depth: int) -> None:
        pass


class _Forward(_Handler):
    """A handler object of the caller's, told what the scanner reads."""

    __slots__ = ("handler",)

    def __init__(self, handler: Any) -> None:
        max_depth = getattr(handler, "max_depth", None)
        _Handler.__init__(self, sys.maxsize if max_depth is None else max_depth)
        self.handler = handler

    def begin(self, kind: str, depth: int) -> None:
        self.flush()
        self.handler.begin(kind, depth)

    def key(self, name: str, depth: int) -> None:
        self.flush()
        self.handler.key(name, depth)

    def text(self, piece: str) -> None:
        self.handler.text(piece)

    def end(self, depth: int) -> None:
        self.flush()
        self.handler.end(depth)


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

    The text to tell is kept as a *run*: where the model writes canonical JSON (``", "``,
    ``"key": ``, a number as json writes it, an escape json keeps), the text read is the
    text fed, so the scanner only notes where that stretch of the piece begins and ends
    (``run_start``, ``run_end``) and tells it as one slice of the piece (the piece itself
    when all of it is): no string per token, no join. What differs from the piece (a
    separator written otherwise, a re-escaped character, whitespace dropped) ends the run
    and is kept in ``out``, after the run's text.
    """

    __slots__ = (
        "handler", "sink", "max_depth", "state", "stack", "partial", "high", "key_parts", "in_key", "first", "out",
        "keys", "odd", "piece", "run_start", "run_end", "at",
    )

    def __init__(self, handler: Any):
        self.handler = handler
        sink = handler if isinstance(handler, _Handler) else _Forward(handler)
        sink.scanner = self
        self.sink = sink
        self.max_depth: int = sink.max_depth
        self.state = _VALUE
        self.stack: list[str] = []  # the open containers: "{" or "["
        self.partial = ""  # an escape, number or word not complete yet
        self.high = ""  # a high surrogate escape (\uD8xx) waiting for its low half
        self.key_parts: list[str] = []
        self.in_key = False
        self.first = False  # the open container has no item yet
        self.out: list[str] = []  # text read, not told yet (see _flush), before the run's
        self.piece = ""  # the piece being read
        # the run: piece[run_start:run_end] is text read as it was written, not told yet
        self.run_start = 0
        self.run_end = 0
        # where the key being read began in the piece, while it is as written (else -1)
        self.at = -1
        #: while tracking (see track): the keys of each container opened since (a set for
        #: an object, None for an array)
        self.keys: list[set[str] | None] | None = None
        self.odd = False

    @property
    def done(self) -> bool:
        return self.state == _DONE

    @property
    def bad(self) -> bool:
        return self.state == _BAD

    def feed(self, text: str) -> None:
        """Read ``text``, the next piece of the JSON value."""
        if self.state == _STRING and _plain_string(text):
            self.sink.text(text)  # the common piece: string text as it is
            return
        self.piece = text
        self.run_start = self.run_end = 0
        self.at = -1
        try:
            self._read(text)
        finally:
            if self.out or self.run_end > self.run_start:
                self._flush()
            self.piece = ""

    def track(self) -> None:
        """Note from here on (until ``untrack``) whether the text read may be other than what
        ``json.dumps`` writes of the value ``json.loads`` reads from it: ``odd`` is set by a
        key repeated in an object, a lone surrogate (kept as an escape), a number too long
        for ``int()``, or nesting deep enough for json's recursion limit. Called as a
        container begins (the handler's ``begin``), for the value that container is."""
        self.keys = []
        self.odd = False

    def untrack(self) -> bool:
        """Stop tracking; whether the text read since ``track`` was odd."""
        self.keys = None
        return self.odd

    def in_value_string(self) -> bool:
        """Whether the scanner is inside a value string (not a key): text without ``"``
        stays in it (see string_text)."""
        return self.state == _STRING or (self.state == _XSTRING and not self.in_key)

    def _read(self, text: str) -> None:
        i = 0
        n = len(text)
        limit = self.max_depth
        while i < n:
            state = self.state
            if state == _STRING or state == _XSTRING:
                i = self._string(text, i, n)
                continue
            c = text[i]
            if state == _NUMBER or state == _WORD:
                j = i
                if state == _NUMBER:
                    while j < n and text[j] in "0123456789+-.eE":
                        j += 1
                else:
                    while j < n and text[j].isalpha():
                        j += 1
                if j == n:
                    self.partial += text[i:j]
                    return
                if self.partial:  # begun in an earlier piece
                    token = self.partial + text[i:j]
                    self.partial = ""
                    self._scalar_end(token, -1, j)
                else:
                    self._scalar_end(text[i:j], i, j)
                i = j
                continue
            if c in " \t\n\r":  # JSON's whitespace
                i += 1
                continue
            if state == _VALUE:
                depth = len(self.stack)
                if c == "{" or c == "[":
                    if depth <= limit:
                        self._begin("{" if c == "{" else "[", depth)
                    self._run(i, i + 1)
                    self.stack.append("{" if c == "{" else "[")
                    if self.keys is not None:
                        self.keys.append(set() if c == "{" else None)
                        if depth >= _DEEP:
                            self.odd = True
                    self.first = True
                    self.state = _KEY if c == "{" else _VALUE
                elif c == '"':
                    if depth <= limit:
                        self._begin('"', depth)
                    self._run(i, i + 1)
                    self.in_key = False
                    self.state = _STRING
                elif c == "-" or "0" <= c <= "9":
                    if depth <= limit:
                        self._begin("0", depth)
                    self.partial = ""
                    self.state = _NUMBER
                    continue  # read from i on: the token begins here
                elif c.isalpha():
                    if depth <= limit:
                        self._begin("0", depth)
                    self.partial = ""
                    self.state = _WORD
                    continue
                elif c == "]" and self.first and self.stack and self.stack[-1] == "[":
                    self._close("]", i)
                else:
                    self.state = _BAD
                    return
            elif state == _KEY:
                if c == '"':
                    self.in_key = True
                    self.key_parts = []
                    self.at = i
                    self.state = _XSTRING
                elif c == "}" and self.first:
                    self._close("}", i)
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
                    if i + 1 < n and text[i + 1] == " ":
                        self._run(i, i + 2)  # ", " as json writes it
                        i += 1
                    else:
                        self._put(", ")
                    self.first = False
                    self.state = _KEY if top == "{" else _VALUE
                elif c == "}" and top == "{":
                    self._close("}", i)
                elif c == "]" and top == "[":
                    self._close("]", i)
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
            token = self.partial
            self.partial = ""
            self._scalar_end(token, -1, 0)
            if self.out:
                self._flush()

    # --- helpers -------------------------------------------------------------------
    def _flush(self) -> None:
        """Tell the handler the text read since it was last told anything."""
        text = self._take()
        if text:
            self.sink.text(text)

    def _take(self) -> str:
        """The text read and not told yet (``out``, then the run), taken."""
        out = self.out
        if self.run_end > self.run_start:
            run = self.piece[self.run_start : self.run_end]
            self.run_start = self.run_end
            if not out:
                return run  # the common case: one stretch of the piece as written
            out.append(run)
        elif not out:
            return ""
        text = out[0] if len(out) == 1 else "".join(out)
        out.clear()
        return text

    def _cut(self) -> None:
        """End the run: its text goes into ``out``."""
        if self.run_end > self.run_start:
            self.out.append(self.piece[self.run_start : self.run_end])
            self.run_start = self.run_end

    def _run(self, start: int, end: int) -> None:
        """The text read is ``piece[start:end]`` as written: the run takes it in."""
        if start != self.run_end:  # not where the run ends: a new run
            self._cut()
            self.run_start = start
        self.run_end = end

    def _put(self, text: str) -> None:
        """The text read is ``text``, not as written: after the run so far."""
        self._cut()
        self.out.append(text)

    def _rewritten(self, text: str) -> None:
        """String text read is ``text``, not as written (an escape re-escaped, a lone
        surrogate): a key's goes into ``key_parts`` (and the key is not as written), a
        value's after the run."""
        if self.in_key:
            self.key_parts.append(text)
            self.at = -1
        else:
            self._put(text)

    def _begin(self, kind: str, depth: int) -> None:
        self.sink.begin(kind, depth)

    def _close(self, c: str, i: int) -> None:
        self.stack.pop()
        if self.keys:
            self.keys.pop()
        self._run(i, i + 1)
        self._value_end()

    def _value_end(self) -> None:
        """A value is complete: what may follow it."""
        depth = len(self.stack)
        if depth <= self.max_depth:
            self.sink.end(depth)
        self.first = False
        self.state = _AFTER if self.stack else _DONE

    def _scalar_end(self, token: str, start: int, end: int) -> None:
        """A number or word ``token`` is complete; ``piece[start:end]`` when it was read
        from the piece whole (``start`` -1: it was not)."""
        if len(token) > _LONG_NUMBER:
            self.odd = True
        if self.state == _NUMBER:
            if not _json_number(token):
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
        if start >= 0 and canonical == token:
            self._run(start, end)
        else:
            self._put(canonical)
        self._value_end()

    def string_text(self, text: str) -> str:
        """Read ``text``, which stays inside a value string (it holds no ``"``), and return
        its canonical text instead of telling the handler (DeltaStream's quick path)."""
        self.piece = text
        self.run_start = self.run_end = 0
        self._string(text, 0, len(text))
        piece = self._take()
        self.piece = ""
        return piece

    def _string(self, text: str, i: int, n: int) -> int:
        """Read string text from ``i``: plain runs as they are, escapes re-escaped (a key's
        text into ``key_parts``, a value's as text read)."""
        key = self.in_key
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
                self._rewritten(piece)
        while i < n:
            j = _run_end(text, i, n)
            if j > i:
                if self.high:
                    self._rewritten(self._lone_high())
                if key:
                    self.key_parts.append(text[i:j])
                else:
                    self._run(i, j)
            if j == n:
                break
            c = text[j]
            if c == '"':
                if self.high:
                    self._rewritten(self._lone_high())
                return self._string_end(j + 1)
            if c != "\\":
                self.state = _BAD  # a raw control character
                break
            if j + 1 >= n or (text[j + 1] == "u" and j + 6 > n):
                self.partial = text[j:]
                break
            size = 6 if text[j + 1] == "u" else 2
            escape = text[j : j + size]
            piece = self._escape(escape)
            if piece is None:
                break
            if piece == escape:  # an escape json writes the same way
                if key:
                    self.key_parts.append(piece)
                else:
                    self._run(j, j + size)
            elif piece:
                self._rewritten(piece)
            elif key:
                self.at = -1  # a surrogate pair's first half: the key is not as written
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
            self.odd = True
            return lone + escape.lower()  # a lone surrogate stays an escape (it has no UTF-8)
        return lone + _ESCAPED.get(code, chr(code))

    def _lone_high(self) -> str:
        self.odd = True
        high = self.high.lower()
        self.high = ""
        return high

    def _string_end(self, i: int) -> int:
        if self.in_key:
            self.in_key = False
            escaped = "".join(self.key_parts)
            if self.keys is not None:
                seen = self.keys[-1]
                if escaped in seen:
                    self.odd = True
                else:
                    seen.add(escaped)
            depth = len(self.stack)
            if depth <= self.max_depth:
                self.sink.key(json.loads(f'"{escaped}"') if "\\" in escaped else escaped, depth)
            text = self.piece
            start = self.at
            self.at = -1
            if start >= 0 and i + 1 < len(text) and text[i] == ":" and text[i + 1] == " ":
                self._run(start, i + 2)  # '"key": ' as json writes it
                self.state = _VALUE
                return i + 2
            self._put(f'"{escaped}": ')
            self.state = _COLON
            return i
        self._run(i - 1, i)
        self._value_end()
        return i


# --------------------------------------------------------------------------------------
# Calls being streamed
# --------------------------------------------------------------------------------------


class _Call:
    """One tool call of the stream: its index, what is known of it, what was sent."""

    __slots__ = ("index", "name", "id", "sent", "sent_text", "pending", "off", "complete", "hold", "hold_key", "dropped")

    def __init__(self, index: int):
        self.index = index
        self.name: str | None = None
        self.id: str | None = None
        self.sent = False  # its first delta (id, name) was sent
        # the argument text sent, for the close to check it against the final arguments
        # (kept in few strings: about the text's size, not an object per fragment)
        self.sent_text = _Text()
        self.pending: list[str] = []  # fragments waiting for the first delta
        self.off = False  # the arguments are left to the close
        self.complete = False  # the arguments were sent whole (as the model wrote them)
        self.hold: list[str] | None = None  # an argument typing may change, being read
        self.hold_key = ""
        self.dropped = False  # its region was malformed: the message leaves it out


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
        pieces = self.pieces
        text = "".join(pieces) if len(pieces) > 1 else pieces[0]
        pieces.clear()
        self.kind = None
        if type(kind) is int:
            self.deltas.append({"tool_calls": [{"index": kind, "function": {"arguments": text}}]})
        else:
            self.deltas.append({kind: text})

    def take(self, into: list | None) -> list[dict]:
        """The deltas so far; in ``into`` (a list of one item, see DeltaStream._single) when
        there is at most one, so that a feed makes no list of its own."""
        if self.kind is not None:
            self.flush()
        deltas = self.deltas
        if into is not None and len(deltas) <= 1:
            if deltas:
                into[0] = deltas[0]
                deltas.clear()
            else:
                into.clear()
            return into
        self.deltas = []
        return deltas


class Plan:
    """How a tool-call field's regions stream (``respc.openai._plan`` reads it from the
    template).

    ``body``: "json", "xml", "calls" (python-call-list) or None (sent at the close);
    ``shape`` for JSON: "args" (the body is the arguments), "object" (an object with
    ``name`` and ``arguments``) or "each" (a list of such objects); ``name``, ``args``,
    ``id``: where those are, as ``("caps", group)`` (the open delimiter's captures),
    ``("member", key)`` (a key of the call's object) or None; for an xml body, the field's
    content parser, its tag pattern (compiled) and the pattern's tail literal, and
    ``xml_split``: the parser has the compiler's split hints (a match is a literal head
    OPEN KEY CLOSE, the value, and the tail: see ``compiler.regexinfo.word_key_head``), so
    a match does not depend on the text before it and one ends at every tail that ends one;
    ``xml_bounded``: the tag pattern may backtrack without bound, so it is matched under the
    time bound (``respc.REGEX_TIMEOUT``), as the field's parser matches it.
    """

    __slots__ = (
        "body", "shape", "each", "name", "args", "id", "xml_parser", "xml_pattern", "xml_tail", "xml_split",
        "xml_bounded",
    )

    def __init__(self, body: str | None, each: bool):
        self.body = body
        self.each = each
        self.shape: str | None = None
        self.name: tuple[str, str] | None = None
        self.args: tuple[str, str] | None = None
        self.id: tuple[str, str] | None = None
        self.xml_parser: Any = None
        self.xml_pattern: Any = None
        self.xml_tail = ""
        self.xml_split = False
        self.xml_bounded = False


class _Region:
    """An open tool-call region: its calls and the reader of its body (one of
    ``scanner`` with its ``router``, ``xml`` and ``call_list``, or none: sent at the close)."""

    __slots__ = ("calls", "caps", "scanner", "router", "xml", "call_list")

    def __init__(self, caps: dict | None):
        self.calls: list[_Call] = []
        self.caps = caps
        self.scanner: JsonScanner | None = None
        self.router: _Router | None = None
        self.xml: _XmlReader | None = None
        self.call_list: _CallListReader | None = None

    def part(self) -> None:
        """The region ended: let go of its readers, and part the scanner from its handler
        (they refer to each other, as the readers and the region do), so that a stream is
        freed as soon as it is dropped, not left to the cycle collector."""
        if self.router is not None:
            self.router.scanner = None
        self.scanner = None
        self.router = None
        self.xml = None
        self.call_list = None


class TextField:
    """How a text field streams: its delta key, whether it strips, its join (``field``: the
    template's field)."""

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
        self.ws = ""  # whitespace held back (it ends the value unless text follows)
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
        n = len(text)
        start = 0
        if not self.started:
            while start < n and text[start].isspace():
                start += 1
            if start == n:
                return ""
            self.started = True
        end = n
        while end > start and text[end - 1].isspace():
            end -= 1
        if end == start:  # whitespace only (after the value's start): held
            self.ws += text
            self.live = False
            return ""
        core = text[start:end] if start or end < n else text
        if self.ws:
            core = self.ws + core
        self.ws = text[end:]
        self.live = self.ready and end == n
        return core


# --------------------------------------------------------------------------------------
# The stream
# --------------------------------------------------------------------------------------


class DeltaStream:
    """The streaming core of ``respc.openai.DeltaParser`` (which documents it): ``parser``,
    a template's parser run with ``spans=True``; ``text``, the ``TextField`` of each text
    field by its name; ``plan``, the tool-call field's ``Plan`` (None without one);
    ``tools``, the tool types (``tool_types``); ``id_seed``, the seed of the ids'
    ``random.Random``; ``spans``:
    keep the parser's events in ``events``."""

    __slots__ = (
        "_parser",
        "_spans",
        "_tools",
        "_typed",
        "_seed",
        "_rng",
        "_drawn",
        "reasoning_key",
        "_text",
        "_seen",
        "_seen_field",
        "_plan",
        "_calls",
        "_region",
        "_out",
        "_first",
        "_finished",
        "message",
        "events",
    )

    def __init__(
        self,
        parser: ParserBase,
        text: dict[str, TextField],
        plan: Plan | None,
        tools: ToolTypes,
        id_seed: Any,
        reasoning_key: str,
        spans: bool,
    ):
        self._parser = parser
        self._spans = spans
        self._tools = tools
        self._typed: dict[str, dict[str, bool]] = {}
        self._seed = id_seed
        self._rng: random.Random | None = None  # the seed's generator, past the kept ids (see seeded_id)
        self._drawn = 0  # the ids drawn so far
        self.reasoning_key = reasoning_key
        self._text = text
        # the field name the last chunk went to and its TextField (None: not a text field):
        # a region's chunks carry the same name object, so most chunks skip the lookup
        self._seen: Any = None
        self._seen_field: TextField | None = None
        self._plan = plan
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
        self.events: list[dict] = list(parser.initial_events) if spans else []
        self._events(parser.initial_events, None)
        # from here on, unless its events are handed out, the parser gives each region_chunk
        # event as its text alone (see runtime/base.py): no dict per chunk
        parser._bare = not spans

    # --- public API ------------------------------------------------------------------
    def feed(self, text: str) -> list[dict]:
        """Add generated text; return the deltas it completes."""
        if self._finished:
            raise RuntimeError(_FINISHED if self.message is not None else _FAILED)
        parser = self._parser
        if type(text) is not str:
            text = "" if text is None else _plain_str(text, "text")  # (checked before the stream is at stake)
        name = parser._name  # the field of the region a bare chunk goes to, unless one opens
        try:
            events = parser.feed(text)
        except BaseException:
            # the stream counts as finished (without a message: failed), so that after a
            # parser error (a malformed region) nothing more is taken
            self._finished = True
            raise
        if self._spans:
            self.events = events
        if self._first:
            self._first = False
        elif len(events) == 1:
            event = events[0]
            if name is self._seen and type(event) is str and not self._spans:
                # the most common chunk, straight: text of the text field the last chunk
                # went to, which is sent as it is (see _chunk: the same delta)
                field = self._seen_field
                if field is not None and field.live and event and not event[len(event) - 1].isspace():
                    events[0] = {field.key: event}
                    return events
            return self._chunk(events, name)
        elif not events:
            return [] if self._spans else events
        self._events(events, name)
        return self._out.take(None)

    def finish(self, length: bool = False) -> tuple[list[dict], str]:
        """End the stream: ``(last deltas, finish_reason)``. ``length=True``: the output was
        cut (a token limit), the reason is ``"length"``; otherwise ``"tool_calls"`` when
        the message has calls, else ``"stop"``."""
        if self._finished:
            raise RuntimeError(_FINISHED if self.message is not None else _FAILED)
        self._finished = True  # (without a message: failed, if finalize raises)
        parser = self._parser
        name = parser._name
        if length:
            # the output was cut: a region it cuts short that fails to parse (a call's JSON
            # cut mid-way) is malformed, as with on_malformed="event": the stream ends
            parser._lenient = True
        message, events = parser.finalize()
        if self._spans:
            self.events = events
        self._events(events, name)
        self.message = message
        if length:
            reason = "length"
        else:
            reason = "stop"
            for call in self._calls:
                if call.sent:
                    reason = "tool_calls"
                    break
        return self._out.take(None), reason

    def sent_ids(self) -> list[str | None]:
        """The id the stream gave each call of the message so far (None: not given yet),
        in the message's order: a call of a malformed region, which the message leaves
        out, is not among them."""
        return [call.id for call in self._calls if not call.dropped]

    @property
    def errors(self) -> list[dict]:
        """The region_malformed events so far (``field``, ``error``, ``text``): the regions
        left out of the message (with ``on_malformed="event"``, or cut by
        ``finish(length=True)``)."""
        return list(self._parser._errors)

    def new_id(self) -> str:
        """The next random call id (``id_seed``'s sequence, which the stream's ids take too)."""
        index = self._drawn
        self._drawn = index + 1
        if self._seed is None:
            return unseeded_id()
        if self._rng is None:
            found = seeded_id(self._seed, index)
            if found is not None:
                return found
            rng = self._rng = random.Random(self._seed)
            for _ in range(index):  # the ids seeded_id gave
                new_id(rng)
        return new_id(self._rng)

    # --- events --------------------------------------------------------------------
    def _chunk(self, events: list, name: Any) -> list[dict]:
        """The deltas of a feed that gave one event (``events[0]``: a bare chunk of field
        ``name``, or a dict): the common chunk (one region_chunk inside a text field or a
        call's JSON string argument) in one go, the same deltas as the general path
        (_events)."""
        event = events[0]
        if type(event) is str:
            text = event
        elif event["type"] == "region_chunk":
            text = event["text"]
            name = event["field"]
        else:
            self._events(events, name)
            return self._out.take(None if self._spans else events)
        if name is self._seen:
            field = self._seen_field
        else:
            field = self._seen_field = self._text.get(name)
            self._seen = name
        if field is not None:
            if field.live and not _ends_open(text):
                return self._single(events, {field.key: text})
            if field.ready:
                text = field.piece(text)
                return self._single(events, {field.key: text}) if text else []
            if field.stream:
                self._text_chunk(field, text)
            return self._out.take(None if self._spans else events)
        region = self._region
        if name != "tool_calls" or region is None or self._plan is None:
            return []
        scanner = region.scanner
        if scanner is not None:
            if '"' not in text and scanner.in_value_string():
                # text that stays inside a value string (it cannot close it), sent straight
                # to its call when nothing holds the call back
                call = region.router.target
                if call is not None and call.sent and not call.off and call.hold is None:
                    if scanner.state != _STRING or not _plain_string(text):
                        text = scanner.string_text(text)  # escapes re-encoded
                        if not text:
                            return []
                    call.sent_text.add(text)
                    delta = {"tool_calls": [{"index": call.index, "function": {"arguments": text}}]}
                    return self._single(events, delta)
            scanner.feed(text)
        elif region.xml is not None:
            region.xml.feed(text)
        elif region.call_list is not None:
            region.call_list.feed(text)
        return self._out.take(None if self._spans else events)

    def _single(self, events: list, delta: dict) -> list[dict]:
        """``[delta]``, in ``events`` (the parser's list of one event, made for this feed and,
        without spans, handed out to no one) unless that list is kept as ``events``."""
        if self._spans:
            return [delta]
        events[0] = delta
        return events

    def _events(self, events: list, name: Any) -> None:
        """Turn the parser's events into deltas; ``name``: the field of bare chunks (see
        runtime/base.py) until a region_open names another."""
        for event in events:
            if type(event) is str:
                kind = "region_chunk"
                text = event
            else:
                kind = event["type"]
                name = event["field"]
                text = event["text"] if kind == "region_chunk" else ""
            if name == "tool_calls" and self._plan is not None:
                if kind == "region_chunk":
                    region = self._region
                    if region is not None:
                        if region.scanner is not None:
                            region.scanner.feed(text)
                        elif region.xml is not None:
                            region.xml.feed(text)
                        elif region.call_list is not None:
                            region.call_list.feed(text)
                elif kind == "region_open":
                    self._call_open(event.get("captures"))
                elif kind == "region_close":
                    self._call_close(event["value"])
                elif self._region is not None:
                    # region_malformed (on_malformed="event", or a cut): nothing more of
                    # these calls, which the message leaves out
                    for call in self._region.calls:
                        call.dropped = True
                    self._region.part()
                    self._region = None
                continue
            field = self._text.get(name)
            if field is None:
                continue
            if kind == "region_chunk":
                if field.stream:
                    self._text_chunk(field, text)
            elif kind == "region_open":
                field.started = False
                field.ready = field.live = False
                field.ws = ""
                field.join_due = field.join is not None and field.blocks > 0
            elif kind == "region_close":
                if field.join_due:
                    self._out.add(field.key, field.join)
                    field.join_due = False
                if not field.stream and isinstance(event["value"], str) and event["value"]:
                    self._out.add(field.key, event["value"])
                field.blocks += 1
            # region_malformed: the value is left out of the message; what was sent stays

    def _text_chunk(self, field: TextField, text: str) -> None:
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
            if plan.body == "xml":
                region.xml = _XmlReader(self, call, plan.xml_tail)
            else:
                region.router = _ArgsHandler(self, call)
                region.scanner = JsonScanner(region.router)
        elif plan.body == "json":
            region.router = _CallsHandler(self, region, 1 if plan.shape == "each" else 0)
            region.scanner = JsonScanner(region.router)
        elif plan.body == "calls":
            region.call_list = _CallListReader(self, region)

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
            call.id = self.new_id()
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
            del call.pending[:]
            call.sent_text.add(pending)
            self._out.add(call.index, pending)

    def _typing(self, call: _Call, key: str) -> int:
        """How tool typing may change argument ``key`` of ``call`` (runtime/tools.py,
        coerce_value): 0, never; 1, when it is a string; 2, when it is a string or a list
        (its items). A string or a list such typing may change is sent whole, once typed
        (the handlers hold it, and an object or list there too, from before it is known
        what the value is). Typing leaves a number, a literal and an object as they are."""
        if not self._tools:
            return 0
        table = self._typed.get(call.name)
        if table is None:
            table = self._typed[call.name] = {}
        typing = table.get(key)
        if typing is None:
            properties = self._tools.get(call.name) or {}
            try:
                kinds = schema_types(properties.get(key))
            except TypeError:
                typing = 2  # a schema typing cannot read: the close raises its error
            else:
                typing = 0
                for kind in kinds:
                    if kind in _CASTABLE:
                        typing = 1 if "array" in kinds else 2
                        break
            table[key] = typing
        return typing

    def _typed_value(self, call: _Call, key: str, value: Any) -> Any:
        """Argument ``key`` of ``call`` as tool typing gives it (typing casts strings and
        the items of lists only: runtime/tools.py, coerce_value)."""
        if type(value) is not str and type(value) is not list:
            return value
        typed = coerce_value({"function": {"name": call.name, "arguments": {key: value}}}, self._tools)
        return typed["function"]["arguments"][key]

    def _write(self, call: _Call, piece: str) -> None:
        """Argument text of ``call``: sent, or kept until its first delta or typing."""
        if call.off:
            return
        if call.hold is not None:
            call.hold.append(piece)
        elif call.sent:
            call.sent_text.add(piece)
            self._out.add(call.index, piece)
        else:
            call.pending.append(piece)

    def _hold(self, call: _Call, key: str, kind: str) -> None:
        """Argument ``key`` of ``call``, which begins (``kind``: see JsonScanner), is held
        until it is complete; the scanner tracks an object or a list (see _hold_end)."""
        call.hold = []
        call.hold_key = key
        if kind != '"':
            self._region.scanner.track()

    def _hold_end(self, call: _Call) -> None:
        """A held argument is complete: send it typed. An object, or a list typing leaves
        as it is, whose text is what json.dumps writes of its value (nothing odd was
        tracked), is sent as it was read: the same text, without a decode and an encode."""
        held = "".join(call.hold)
        call.hold = None
        first = held[0]
        if first == "{" or first == "[":
            odd = self._region.scanner.untrack()
            if not odd and (first == "{" or self._typing(call, call.hold_key) < 2):
                self._write(call, held)
                return
        value = _loads(held)
        if value is MISS:
            call.off = True  # the region's close settles the call: its value, or malformed
            return
        self._write(call, _dumps(self._typed_value(call, call.hold_key, value)))

    def _call_close(self, value: Any) -> None:
        """A tool-call region closed with ``value``: settle its calls against it."""
        region = self._region
        self._region = None
        if region is None:
            region = _Region(None)
        if region.scanner is not None:
            region.scanner.finish()
        region.part()
        calls = value if self._plan.each else [value]
        if not isinstance(calls, list):
            return
        for j, final in enumerate(calls):
            call = region.calls[j] if j < len(region.calls) else None
            if call is None:
                call = self._new_call()
            if call.sent and call.complete:
                # its arguments were sent whole, an object or an array as written: the
                # arguments' text can only start with it if it is that text, so there is
                # nothing to add (nor, if typing or a repeated key made them differ, to mend)
                continue
            function = final.get("function") if isinstance(final, dict) else final
            canonical = arguments_text(function)
            if not call.sent:
                call.name = function_name(function)
                call.id = call_id(final)
                del call.pending[:]
                call.off = True
                self._maybe_start(call, True)
                self._send_rest(call, canonical)
                continue
            sent = call.sent_text.value()
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
            call.sent_text.add(text)
            self._out.add(call.index, text)


def _object_open(sent: str) -> bool:
    """Whether ``sent`` (argument text the stream sent) ends between two members of its
    top-level object: a complete JSON object less its closing brace."""
    try:
        json.loads(sent + "}")
    except ValueError:
        return False
    return True


class _Router(_Handler):
    """A handler that routes a JSON body's text to the calls of a DeltaStream.

    ``target``: the call a value string's text goes to, or None; the stream's quick path
    (DeltaStream._chunk) writes a plain chunk there itself."""

    __slots__ = ("parser", "target")

    def __init__(self, parser: DeltaStream, max_depth: int, target: _Call | None):
        _Handler.__init__(self, max_depth)
        self.parser = parser
        self.target = target


class _ArgsHandler(_Router):
    """Routes a JSON body that is one call's arguments (the ``args`` shape) to that call."""

    __slots__ = ("call", "current")

    def __init__(self, parser: DeltaStream, call: _Call):
        _Router.__init__(self, parser, 1, call)  # the arguments (0) and their members (1)
        self.call = call
        self.current = ""

    def begin(self, kind: str, depth: int) -> None:
        call = self.call
        if depth == 0:
            self.flush()
            if kind == '"' or kind == "0":
                call.off = True  # a string or scalar as the arguments: sent at the close
        elif depth == 1 and kind != "0" and self.parser._typing(call, self.current):
            self.flush()
            self.parser._hold(call, self.current, kind)

    def key(self, name: str, depth: int) -> None:
        if depth == 1:
            self.current = name

    def text(self, piece: str) -> None:
        self.parser._write(self.call, piece)

    def end(self, depth: int) -> None:
        call = self.call
        if depth == 1 and call.hold is not None:
            self.flush()
            self.parser._hold_end(call)
        elif depth == 0:
            self.flush()
            call.complete = not call.off


class _CallsHandler(_Router):
    """Routes a JSON body of call objects (``object``: one; ``each``: a list of them) to
    the calls: each object's name and id members, and its arguments member as it is read."""

    __slots__ = ("region", "top", "call", "member", "current", "parts", "args_depth")

    def __init__(self, parser: DeltaStream, region: _Region, top: int):
        _Router.__init__(self, parser, top + 2, None)  # the calls, their members, the arguments' members
        self.region = region
        self.top = top  # the depth of the call objects
        self.call: _Call | None = None
        self.member = ""  # the call object's member being read
        self.current = ""  # the arguments' member being read
        self.parts: list[str] | None = None  # a name or id string being read
        self.args_depth = -1  # the depth of the arguments value while it is read

    def begin(self, kind: str, depth: int) -> None:
        parser = self.parser
        plan = parser._plan
        if depth == self.top:
            self.flush()
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
            if (plan.name is not None and plan.name == ("member", member)) or (
                plan.id is not None and plan.id == ("member", member)
            ):
                self.flush()
                self.parts = [] if kind == '"' or kind == "0" else None
            elif member == plan.args[1]:
                self.flush()
                self.args_depth = depth
                self.target = call
                if kind == '"' or kind == "0" or (call.name is None and parser._tools):
                    call.off = True  # arguments as a string or scalar, or before the name
        elif depth == self.args_depth + 1 and kind != "0" and call.name is not None and parser._typing(call, self.current):
            self.flush()
            parser._hold(call, self.current, kind)

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
                self.flush()
                self.args_depth = -1
                self.target = None
                call.complete = not call.off
            elif depth == self.args_depth + 1 and call.hold is not None:
                self.flush()
                self.parser._hold_end(call)
            return
        if depth == self.top + 1 and self.parts is not None:
            self.flush()
            value = _loads("".join(self.parts))
            self.parts = None
            if value is not MISS:
                self.parser._learn(call, "member", {self.member: value})
        elif depth == self.top:
            self.flush()
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

    def __init__(self, parser: DeltaStream, call: _Call, tail: str):
        self.parser = parser
        self.call = call
        self.rest = _Text()  # the body after the last complete parameter
        self.edge = ""  # its end where a tail literal may have begun (see _tail_edge)
        self.count = 0
        self.mark = tail[:1]  # the first character of the tag pattern's tail literal

    def feed(self, text: str) -> None:
        if not self.edge and self.mark not in text:  # the common chunk: no tail ends in it
            self.rest.add(text)
            return
        plan = self.parser._plan
        tail = plan.xml_tail
        seen = self.edge + text
        self.rest.add(text)
        if tail not in seen:
            self.edge = _tail_edge(seen, tail)
            return
        body = self.rest.value()
        end = 0
        first = body.find(tail)
        if plan.xml_split and body.find(tail, first + 1) < 0:
            # the common case: one tail in the body (a parameter just completed). Every match
            # ends with a tail, so the body holds one match or none, ending at that tail; the
            # field's parser (the compiler's split hints, see Plan) finds it with str.find
            end = first + len(tail)
            found = plan.xml_parser(body if end == len(body) else body[:end])
            if found:
                self._parameter(found)
            else:
                end = 0
        else:
            try:
                if plan.xml_bounded:
                    matches = plan.xml_pattern.finditer(body, timeout=_scan.REGEX_TIMEOUT)
                else:
                    matches = plan.xml_pattern.finditer(body)
                for match in matches:
                    if match.end() == len(body) and tail not in match.group():
                        break  # it may still grow
                    self._parameter(plan.xml_parser(match.group()))
                    end = match.end()
            except TimeoutError as error:
                if isinstance(error, RegexTimeout):
                    raise
                raise RegexTimeout(
                    f"field {self.parser._parser._name!r}: its content's regex ran over its time bound "
                    f"({_scan.REGEX_TIMEOUT} s, respc.REGEX_TIMEOUT) while streaming its arguments; it backtracks "
                    "without bound on this text: fix the pattern (respc lint names such patterns)"
                ) from error
        rest = body[end:]
        self.rest = _Text()
        if rest:
            self.rest.add(rest)
        self.edge = _tail_edge(rest, tail)

    def _parameter(self, found: dict) -> None:
        parser = self.parser
        call = self.call
        for key, value in found.items():
            if parser._tools and parser._typing(call, key):
                value = parser._typed_value(call, key, value)
            parser._write(call, ("{" if not self.count else ", ") + f"{_dumps(key)}: {_dumps(value)}")
            self.count += 1


class _CallListReader:
    """Reads a ``python-call-list`` body (``[f(a=1, b="x"), g()]``): a call starts once its
    name and ``(`` are written, and each keyword argument is sent once the ``,`` or ``)``
    after it is, read by the field's content parser (then typed)."""

    __slots__ = ("parser", "region", "depth", "quote", "escaped", "piece", "call", "count")

    def __init__(self, parser: DeltaStream, region: _Region):
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
        parser = self.parser
        if text:
            try:
                found = _CALL_LIST(f"[f({text})]")[0]["arguments"]
            except ValueError:
                call.off = True  # the close raises (or settles) it
                return
            for key, value in found.items():
                if parser._tools:
                    value = parser._typed_value(call, key, value)
                parser._write(call, ("{" if not self.count else ", ") + f"{_dumps(key)}: {_dumps(value)}")
                self.count += 1
        if last:
            parser._write(call, "{}" if not self.count else "}")
            call.complete = True
            self.call = None
