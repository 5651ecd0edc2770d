"""The parser base that every generated module's ``Parser`` class extends.

A generated ``Parser`` supplies what its template fixes: the field tables and
one *scan* method per region state. A scan method looks at the unconsumed
input ``buf[pos:]`` with exactly the delimiters its state watches and returns

* ``(start, end, action, match)`` for the delimiter to commit now, where
  ``action`` is the index of the field to open, or ``CLOSE`` to close the
  current region; or
* an ``int``: no delimiter can be committed; text before that position is safe
  to emit, text from it on may be part of a delimiter and is held back.

This module owns everything around that: routing text into the open region,
events, closing regions into values, the prefix, ``feed`` and ``finalize``.

Consumed input is dropped after every call (keeping ``CONTEXT`` characters
before the read position for patterns that look behind), so a stream holds
only open region bodies and the undecided tail; ``_base`` is the offset of
``_buf[0]`` in the whole input (the truncated prefix followed by the output).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any, ClassVar

from .tools import ToolTypes, coerce_value, tool_types

__all__ = ["CLOSE", "ParserBase", "PREFIX_REQUIRED", "partial_start", "partial_start_any"]

#: ``action`` of a scan result that closes the current region.
CLOSE = -1

PREFIX_REQUIRED = (
    "prefix is required: pass the chat prompt that preceded the generation (prefix=...), because chat "
    "templates often pre-write part of the assistant message (an opening <think>, a prefill) that the "
    'parser must see. If the generation already holds the complete message, pass prefix="" to opt out.'
)

# Parts of an open region's body are merged once this many accumulate, so a
# long stream of small chunks does not hold one string object per chunk.
_MERGE_PARTS = 64


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (list, dict, str)) and not value)


class ParserBase:
    """Streaming parser state machine; see the module docstring."""

    # --- filled in by each generated Parser class -------------------------
    #: field names, in template order (a field's index is its position here)
    FIELDS: ClassVar[tuple[str, ...]] = ()
    #: the template's ``defaults`` (deep-copied into every message)
    DEFAULTS: ClassVar[dict] = {}
    #: names of the fields with ``optional: false``
    REQUIRED: ClassVar[tuple[str, ...]] = ()
    #: index of the implicit field, or ``CLOSE`` (-1) when there is none
    IMPLICIT: ClassVar[int] = CLOSE
    #: per field: chunks are raw text that still needs parsing
    DIRTY: ClassVar[tuple[bool, ...]] = ()
    #: per field: ``join`` separator or None
    JOIN: ClassVar[tuple[str | None, ...]] = ()
    #: per field: ``repeats``
    REPEATS: ClassVar[tuple[bool, ...]] = ()
    #: characters of consumed input that scans may look back on (-1: all)
    CONTEXT: ClassVar[int] = 0
    #: per state (field index; the free state last): the scan function
    SCANS: ClassVar[tuple[Callable, ...]] = ()
    #: per field: ``finish(body, captures) -> value`` (content parser + transform)
    FINISH: ClassVar[tuple[Callable[[str, dict], Any], ...]] = ()

    @staticmethod
    def cut_prefix(prefix: str) -> str:  # pragma: no cover - always generated
        """Return the prefix from just after the last start anchor (all of it if there is none)."""
        raise NotImplementedError

    # --- public API --------------------------------------------------------
    def __init__(self, prefix: str | None = None, *, tools: Iterable[dict | Callable] | None = None):
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        self._tools: ToolTypes = tool_types(tools)
        self._out: dict[str, Any] = deepcopy(self.DEFAULTS)
        self._buf = ""
        self._pos = 0
        self._base = 0
        self._ban = -1
        self._opened_at = -1
        self._finalized = False
        self._cur = self.IMPLICIT
        self._scan = self.SCANS[-1]
        self._parts: list[str] = []
        self._caps: dict[str, str] = {}
        self._opened = False
        self.initial_events: list[dict] = []
        if prefix:
            text = self.cut_prefix(prefix)
            if text:
                self._buf = text
                self._process(self.initial_events, False)

    def feed(self, text: str) -> list[dict]:
        """Add generated text; return the events it completes."""
        if self._finalized:
            raise RuntimeError("this parser is already finalized; create a new one for the next generation")
        if text:
            self._buf += text
        events: list[dict] = []
        self._process(events, False)
        return events

    def finalize(self) -> tuple[dict, list[dict]]:
        """End the stream: close what is open, return ``(message, final_events)``."""
        if self._finalized:
            raise RuntimeError("this parser is already finalized; create a new one for the next generation")
        events: list[dict] = []
        self._process(events, True)
        out = self._out
        missing = [name for name in self.REQUIRED if name not in out]
        if missing:
            raise ValueError(
                f"required field(s) {missing} (optional: false) did not appear in the parsed output"
            )
        defaults = self.DEFAULTS
        self._out = {k: v for k, v in out.items() if k in defaults or not _is_empty(v)}
        self._finalized = True
        return self._out, events

    # --- the state machine -------------------------------------------------
    def _process(self, events: list[dict], eos: bool) -> None:
        buf = self._buf
        pos = self._pos
        while True:
            found = self._scan(self, buf, pos, eos)
            if found.__class__ is int:
                if eos:
                    if pos < len(buf):
                        self._accumulate(events, buf[pos:])
                        pos = self._pos = len(buf)
                    self._close_current(events)
                elif found > pos:
                    self._accumulate(events, buf[pos:found])
                    pos = found
                break
            start, end, action, match = found
            if start > pos:
                self._accumulate(events, buf[pos:start])
            pos = self._pos = end
            if action >= 0:
                self._close_current(events)
                self._open(events, action, match, start, end)
            else:
                had_content = self._opened
                if start == end and self._opened_at == start:
                    # A region that opened and closes at this very position with zero-width
                    # delimiters: its zero-width open may not fire here again (see _ban).
                    self._ban = start
                self._close_current(events)
                if not had_content and start == end:
                    break
        self._pos = pos
        if not eos:
            self._trim(buf, pos)

    def _trim(self, buf: str, pos: int) -> None:
        """Drop consumed input, keeping ``CONTEXT`` characters before ``pos``."""
        keep = self.CONTEXT
        if keep >= 0 and pos > keep:
            cut = pos - keep
            self._buf = buf[cut:]
            self._pos = pos - cut
            self._base += cut
            self._ban -= cut
            self._opened_at -= cut
        else:
            self._buf = buf

    def _accumulate(self, events: list[dict], text: str) -> None:
        cur = self._cur
        if cur < 0:
            return  # no region is open and the template has no implicit field
        name = self.FIELDS[cur]
        if not self._opened:
            self._opened = True
            events.append({"type": "region_open", "field": name})
        parts = self._parts
        parts.append(text)
        if len(parts) >= _MERGE_PARTS:
            parts[:] = ["".join(parts)]
        events.append({"type": "region_chunk", "field": name, "text": text, "dirty": self.DIRTY[cur]})

    def _open(self, events: list[dict], index: int, match: Any, start: int, end: int) -> None:
        self._cur = index
        self._caps = {} if match is None else {k: v for k, v in match.groupdict().items() if v is not None}
        self._parts = []
        self._opened = True
        self._opened_at = start if start == end else -1
        self._scan = self.SCANS[index]
        events.append({"type": "region_open", "field": self.FIELDS[index]})

    def _close_current(self, events: list[dict]) -> None:
        cur = self._cur
        if cur >= 0 and self._opened:
            name = self.FIELDS[cur]
            value = self.FINISH[cur]("".join(self._parts), self._caps)
            if self._tools:
                value = coerce_value(value, self._tools)
            out = self._out
            join = self.JOIN[cur]
            if join is not None:
                if not isinstance(value, str):
                    raise ValueError(
                        f"field {name!r}: 'join' needs every block to parse to a string, "
                        f"got {type(value).__name__}"
                    )
                previous = out.get(name)
                out[name] = value if previous is None else previous + join + value
            elif self.REPEATS[cur]:
                out.setdefault(name, []).append(value)
            else:
                out[name] = value
            events.append({"type": "region_close", "field": name, "value": value})
        self._cur = self.IMPLICIT
        self._scan = self.SCANS[-1]
        self._caps = {}
        self._parts = []
        self._opened = False
        self._opened_at = -1


def partial_start(buf: str, pos: int, lit: str) -> int:
    """Where the earliest tail of ``buf[pos:]`` that is a proper prefix of ``lit`` starts.

    That tail may become ``lit`` with more input, so it is held back. Returns
    ``len(buf)`` when no tail can. (A complete occurrence is found with
    ``str.find`` first; this is only asked when there is none.)
    """
    n = len(buf)
    i = n - len(lit) + 1
    if i < pos:
        i = pos
    first = lit[0]
    while True:
        i = buf.find(first, i)
        if i < 0:
            return n
        if lit.startswith(buf[i:]):
            return i
        i += 1


def partial_start_any(buf: str, pos: int, lits: tuple[str, ...]) -> int:
    """:func:`partial_start` for a set of literals: the earliest start of any of them."""
    best = len(buf)
    for lit in lits:
        i = partial_start(buf, pos, lit)
        if i < best:
            best = i
    return best
