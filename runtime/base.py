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

Input is consumed as it is decided: a parser keeps only ``_held`` (text a
delimiter may still start in), ``CONTEXT`` characters of consumed input for
patterns that look behind, and the open region's body; ``_done`` counts the
characters consumed so far (offsets into the truncated prefix + output).

``feed`` has fast paths that give the same events without scanning: a chunk in
which no watched delimiter can start (none of their first characters occurs), a
literal-only state whose literals do not occur, and a held regex match that only
its tail literal can complete (see ``compiler/regexinfo.py`` for the facts the
generated tables encode, and tests/test_streaming.py for the parity checks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any, ClassVar

from .tools import ToolTypes, coerce_value, tool_types

__all__ = ["CLOSE", "ParserBase", "PREFIX_REQUIRED", "REGEX_WS", "partial_start", "partial_start_any", "ws_run_start"]

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
    def new_defaults() -> dict:
        """A fresh copy of the template's ``defaults`` (generated as a literal)."""
        return deepcopy(ParserBase.DEFAULTS)

    @staticmethod
    def cut_prefix(prefix: str) -> str:  # pragma: no cover - always generated
        """Return the prefix from just after the last start anchor (all of it if there is none)."""
        raise NotImplementedError

    #: per state: ``(first characters, whitespace lead, literals)`` of the watched delimiters
    #: (literals: all of them when every one is literal, else None), or None: always scan
    FAST: ClassVar[tuple[tuple[tuple[str, ...], bool, tuple[str, ...] | None] | None, ...]] = ()
    #: how many held-regex memos the scans keep (see compiler/regexinfo.gap_split)
    MEMOS: ClassVar[int] = 0
    #: per memo: the state whose scan keeps it, and the literal tail of its pattern
    MEMO_STATES: ClassVar[tuple[int, ...]] = ()
    MEMO_TAILS: ClassVar[tuple[str, ...]] = ()

    # --- public API --------------------------------------------------------
    def __init__(self, prefix: str | None = None, *, tools: Iterable[dict | Callable] | None = None):
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        self._tools: ToolTypes = tool_types(tools)
        self._out: dict[str, Any] = self.new_defaults()
        self._ctx = ""  # consumed input kept for look-behind (at most CONTEXT chars)
        self._held = ""  # input not consumed yet: a delimiter may start in it
        self._done = 0  # characters consumed so far (offset of _held in the whole input)
        self._ban = -1  # see the progress rule in _process (offsets in the whole input)
        self._opened_at = -1
        self._off = 0
        self._memo: list = [None] * self.MEMOS
        # A stable hold: the held text starts with a regex match that stays partial until
        # its tail literal appears; until then feeds only collect text (see _feed_stable).
        self._stable: str | None = None  # that tail literal
        self._stable_edge = ""  # the last len(tail) - 1 characters seen
        self._more: list[str] = []  # text fed since, not yet joined to _held
        self._more_blocks: list[str] = []
        self._finalized = False
        # body of the open region, oldest first: _acc, _big, _blocks, then recent _parts
        self._parts: list[str] = []
        self._blocks: list[str] = []
        self._big: list[str] = []
        self._acc = ""
        self._caps: dict[str, str] = {}
        self._reset()
        self.initial_events: list[dict] = []
        if prefix:
            text = self.cut_prefix(prefix)
            if text:
                self._process(self.initial_events, False, text)

    def feed(self, text: str) -> list[dict]:
        """Add generated text; return the events it completes."""
        if self._stable is not None and text.__class__ is str:
            tail = self._stable
            edge = self._stable_edge + text
            if tail not in edge:
                # still held, nothing to emit: keep the text without rescanning the hold
                more = self._more
                more.append(text)
                if len(more) > _MERGE_PARTS:
                    self._more_blocks.append("".join(more))
                    more.clear()
                self._stable_edge = edge[1 - len(tail) :] if len(tail) > 1 else ""
                return []
            self._stable = None
        firsts = self._firsts
        if firsts is not None and text:
            # Fast path: no delimiter watched in this state can start in the held text
            # plus this chunk (none of their first characters occurs in it).
            held = self._held
            x = held + text if held else text
            for c in firsts:
                if c in x:
                    break
            else:
                if self._simple and self._opened and not (self._ws and x[-1] in REGEX_WS):
                    # the common case: an open region, nothing to hold, no context to keep
                    parts = self._parts
                    parts.append(x)
                    if len(parts) > _MERGE_PARTS:
                        self._compact()
                    self._done += len(x)
                    if held:
                        self._held = ""
                    return [{"type": "region_chunk", "field": self._name, "text": x, "dirty": self._dirty}]
                return self._feed_quiet(x)
            lits = self._lits
            if lits is not None:
                # Literal-only state: unless one of its literals occurs, nothing commits;
                # emit up to the tail that may still grow into one of them.
                for lit in lits:
                    if lit in x:
                        break
                else:
                    return self._feed_quiet(x, partial_start_any(x, 0, lits))
        if self._finalized:
            raise RuntimeError("this parser is already finalized; create a new one for the next generation")
        events: list[dict] = []
        self._process(events, False, text if text else "")  # feed(None) is a no-op, as in the reference
        return events

    def _feed_quiet(self, x: str, cut: int = -1) -> list[dict]:
        """The fast path's general case: nothing in ``x`` (held text + chunk) can commit;
        emit it up to ``cut`` (default: all but a whitespace tail a delimiter may grow from)."""
        n = len(x)
        if cut >= 0:
            pass
        elif self._ws and x[-1] in REGEX_WS:
            # a whitespace-led regex delimiter may still grow from the trailing whitespace
            cut = ws_run_start(x, 0, n)
        else:
            cut = n
        events: list[dict] = []
        if cut:
            piece = x[:cut] if cut < n else x
            self._accumulate(events, piece)
            keep = self.CONTEXT
            if keep:
                ctx = self._ctx + piece
                self._ctx = ctx[-keep:] if keep > 0 else ctx
            self._done += cut
        self._held = x[cut:] if cut < n else ""
        return events

    def finalize(self) -> tuple[dict, list[dict]]:
        """End the stream: close what is open, return ``(message, final_events)``."""
        if self._finalized:
            raise RuntimeError("this parser is already finalized; create a new one for the next generation")
        events: list[dict] = []
        self._process(events, True, "")
        out = self._out
        missing = [name for name in self.REQUIRED if name not in out]
        if missing:
            raise ValueError(
                f"required field(s) {missing} (optional: false) did not appear in the parsed output"
            )
        defaults = self.DEFAULTS
        self._out = {k: v for k, v in out.items() if k in defaults or not _is_empty(v)}
        self._finalized = True
        self._firsts = None
        return self._out, events

    # --- the state machine -------------------------------------------------
    def _process(self, events: list[dict], eos: bool, text: str) -> None:
        """Scan and commit delimiters over ``held + text`` (the slow path; see the module doc)."""
        if self._more or self._more_blocks:
            self._held = "".join([self._held, *self._more_blocks, *self._more])
            self._more.clear()
            self._more_blocks.clear()
        self._stable = None
        ctx = self._ctx
        buf = ctx + self._held + text if (ctx or self._held) else text
        pos = start = len(ctx)
        off = self._off = self._done - start  # offset of buf[0] in the whole input
        try:
            while True:
                found = self._scan(self, buf, pos, eos)
                if found.__class__ is int:
                    if eos:
                        if pos < len(buf):
                            self._accumulate(events, buf[pos:])
                            pos = len(buf)
                        self._close_current(events)
                    else:
                        if found > pos:
                            self._accumulate(events, buf[pos:found])
                            pos = found
                        if self.MEMOS and pos < len(buf):
                            self._check_stable(buf, pos)
                    break
                begin, end, action, match = found
                if begin > pos:
                    self._accumulate(events, buf[pos:begin])
                pos = end
                if action >= 0:
                    self._close_current(events)
                    self._open(events, action, match, begin, end)
                else:
                    had_content = self._opened
                    if begin == end and self._opened_at == begin + off:
                        # Progress rule: this region opened and closes at one position with
                        # zero-width delimiters. The reference would reopen it here forever;
                        # instead no zero-width open may fire at this position again.
                        self._ban = begin + off
                    self._close_current(events)
                    if not had_content and begin == end:
                        break  # the reference's guard: an empty implicit region closing empty
        finally:
            # Keep the buffer consistent even when a content parser raised mid-way.
            keep = self.CONTEXT
            cut = 0 if keep < 0 else (pos - keep if pos > keep else 0)
            self._ctx = buf[cut:pos]
            self._held = buf[pos:]
            self._done += pos - start

    def _check_stable(self, buf: str, pos: int) -> None:
        """After a scan that holds ``buf[pos:]``: is the hold a memoized regex match that
        only its tail literal can complete? Then later feeds need not scan until it shows."""
        n_abs = len(buf) + self._off
        start_abs = pos + self._off
        for slot, memo in enumerate(self._memo):
            if (
                memo is not None
                and memo[0] == start_abs
                and memo[1] == n_abs
                and self.MEMO_STATES[slot] == self._state
            ):
                tail = self.MEMO_TAILS[slot]
                self._stable = tail
                self._stable_edge = buf[max(pos, len(buf) - len(tail) + 1) :] if len(tail) > 1 else ""
                return

    def _compact(self) -> None:
        """Fold the recent chunks into blocks, and blocks into bigger blocks: a long body is
        held in few strings (not one object per chunk) and each character is copied twice."""
        parts = self._parts
        blocks = self._blocks
        blocks.append("".join(parts))
        parts.clear()
        if len(blocks) > _MERGE_PARTS:
            self._big.append("".join(blocks))
            blocks.clear()

    def _take_body(self) -> str:
        """The open region's whole body, as one string (kept in ``_acc`` until it closes)."""
        pieces = [*self._big, *self._blocks, *self._parts]
        if self._acc:
            pieces.insert(0, self._acc)
        self._big.clear()
        self._blocks.clear()
        self._parts.clear()
        body = self._acc = "".join(pieces)
        return body

    def _accumulate(self, events: list[dict], text: str) -> None:
        if self._cur < 0:
            return  # no region is open and the template has no implicit field
        if not self._opened:
            self._opened = True
            events.append({"type": "region_open", "field": self._name})
        parts = self._parts
        parts.append(text)
        if len(parts) > _MERGE_PARTS:
            self._compact()
        events.append({"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty})

    def _open(self, events: list[dict], index: int, match: Any, start: int, end: int) -> None:
        self._cur = self._state = index
        self._name = self.FIELDS[index]
        self._dirty = self.DIRTY[index]
        self._scan = self.SCANS[index]
        self._set_fast(index)
        self._caps = {} if match is None else {k: v for k, v in match.groupdict().items() if v is not None}
        self._opened = True
        self._opened_at = start + self._off if start == end else -1
        events.append({"type": "region_open", "field": self._name})

    def _close_current(self, events: list[dict]) -> None:
        if not self._opened:
            if self._state != len(self.FIELDS):
                self._reset()
            return  # the free state, nothing opened: there is nothing to close
        cur = self._cur
        if cur >= 0:
            name = self._name
            value = self.FINISH[cur](self._take_body(), self._caps)
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
        self._reset()

    def _set_fast(self, state: int) -> None:
        fast = None if self._finalized else self.FAST[state]
        if fast is None:
            self._firsts = self._lits = None
            self._ws = self._simple = False
        else:
            self._firsts, self._ws, self._lits = fast
            self._simple = self.CONTEXT == 0 and self._cur >= 0

    def _reset(self) -> None:
        """Back to the free state: the implicit region (not yet opened) or the null region."""
        cur = self._cur = self.IMPLICIT
        self._state = len(self.FIELDS)
        self._name = self.FIELDS[cur] if cur >= 0 else None
        self._dirty = self.DIRTY[cur] if cur >= 0 else False
        self._scan = self.SCANS[-1]
        self._set_fast(-1)
        self._caps = {}
        self._acc = ""
        self._parts.clear()
        self._blocks.clear()
        self._big.clear()
        self._opened = False
        self._opened_at = -1


#: The characters the regex module's ``\s`` matches (Unicode White_Space).
REGEX_WS = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def ws_run_start(buf: str, lo: int, hi: int) -> int:
    """Start of the run of ``\\s`` characters that ends at ``hi`` (not before ``lo``)."""
    while hi > lo and buf[hi - 1] in REGEX_WS:
        hi -= 1
    return hi


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
