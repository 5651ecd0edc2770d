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

``feed`` has fast paths that give the same events without scanning, each armed
only while it applies (``_arm``):

* quickest: none of the (one or two) first characters of the watched delimiters
  occurs in the chunk, so it all goes into the open region (or is dropped in the
  null region), less a whitespace tail a whitespace-led delimiter may grow from;
* quiet: no *mark* occurs (a delimiter's literal, or a regex's required literal
  prefix), so nothing can commit; the text is emitted up to where a delimiter may
  still be being written (``quiet_cut``);
* pending: a regex delimiter is being written from the start of the held text and
  no other mark occurs, so only that regex needs asking (``still_pending``);
* stable: a held regex match in a lazy gap waits for its tail literal alone.

See ``compiler/regexinfo.py`` for the facts the generated tables encode (property-
tested against the regex engine), and tests/test_streaming.py and the differential
suite for the event-by-event parity checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any, ClassVar

from .tools import ToolTypes, coerce_value, tool_types

__all__ = [
    "CLOSE",
    "ParserBase",
    "PREFIX_REQUIRED",
    "REGEX_WS",
    "edge_moves",
    "partial_start",
    "prefix_partial",
    "quiet_cut",
    "quiet_table",
    "still_pending",
    "tail_in",
    "ws_run_end",
    "ws_run_start",
]

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

    # Instances keep their state in slots: attribute access stays on CPython's fastest
    # path (an instance dict with this many keys would not), which feed pays per chunk.
    __slots__ = (
        "initial_events",
        "_tools",
        "_out",
        "_ctx",
        "_held",
        "_done",
        "_mark",
        "_ban",
        "_opened_at",
        "_off",
        "_memo",
        "_stable",
        "_stable_edge",
        "_more",
        "_more_blocks",
        "_finalized",
        "_parts",
        "_blocks",
        "_big",
        "_acc",
        "_caps",
        "_opened",
        # the current state (see _enter)
        "_cur",
        "_state",
        "_name",
        "_dirty",
        "_scan",
        "_firsts",
        "_ws",
        "_simple",
        "_armable",
        "_first",
        "_second",
        "_quiet",
        "_pending",
        "_event",
        # feed's armed paths (see _arm)
        "_q1",
        "_q2",
        "_qq",
    )

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
    #: per field: its value may hold tool calls whose arguments ``tools`` types
    TYPED: ClassVar[tuple[bool, ...]] = ()
    #: characters of consumed input that scans may look back on (-1: all)
    CONTEXT: ClassVar[int] = 0
    #: a whole output may be parsed in one end-of-stream pass (see parse_whole)
    ONE_PASS: ClassVar[bool] = True
    #: per state (field index; the free state last): the scan function
    SCANS: ClassVar[tuple[Callable, ...]] = ()
    #: per state: the scan of parse_whole's end-of-stream pass (a specialized one, or SCANS')
    END_SCANS: ClassVar[tuple[Callable, ...]] = ()
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

    #: per state: ``(first characters, whitespace lead)`` of the watched delimiters, or
    #: None (some delimiter's start is not known): always scan
    FAST: ClassVar[tuple[tuple[tuple[str, ...], bool] | None, ...]] = ()
    #: per state: ``(marks, whitespace-led marks)``: the literals and required literal
    #: prefixes of the watched delimiters (see ``quiet_cut``), or None
    MARKS: ClassVar[tuple[tuple[tuple[str, ...], tuple[str, ...]] | None, ...]] = ()
    #: per state: ``((prefixes, whitespace-led, regex), ...)`` (see ``still_pending``), or None
    PENDING: ClassVar[tuple[tuple[tuple[tuple[str, ...], bool, Any], ...] | None, ...]] = ()
    #: how many held-regex memos the scans keep (see compiler/regexinfo.gap_split)
    MEMOS: ClassVar[int] = 0
    #: per memo: the state whose scan keeps it, and the literal tail of its pattern
    MEMO_STATES: ClassVar[tuple[int, ...]] = ()
    MEMO_TAILS: ClassVar[tuple[str, ...]] = ()

    #: per state: MARKS prepared for quiet_cut (filled in for each generated class by _modes)
    _QUIET: ClassVar[tuple[tuple | None, ...]] = ()
    #: per state: what entering it sets (see _modes)
    _MODES: ClassVar[tuple[tuple, ...]] = ()

    # --- public API --------------------------------------------------------
    def __init__(self, prefix: str | None = None, *, tools: Iterable[dict | Callable] | None = None):
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        prefix = _plain_str(prefix, "prefix")
        self._tools: ToolTypes = tool_types(tools)
        self._out: dict[str, Any] = self.new_defaults()
        self._ctx = ""  # consumed input kept for look-behind (at most CONTEXT chars)
        self._held = ""  # input not consumed yet: a delimiter may start in it
        self._done = 0  # characters consumed so far (offset of _held in the whole input),
        # except the chunks feed's quickest path appended to _parts after index _mark
        self._mark = 0
        self._ban = -1  # see the progress rule in _process (offsets in the whole input)
        self._opened_at = -1
        self._off = 0
        self._memo: list = [None] * self.MEMOS
        # A stable hold: the held text starts with a regex match that stays partial until
        # its tail literal appears; until then feeds only collect text (see _feed).
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
        self._q1 = self._q2 = ""  # see feed and _arm
        self._qq = None
        self._modes()
        self._reset()
        self.initial_events: list[dict] = []
        if prefix:
            text = self.cut_prefix(prefix)
            if text:
                self._process(self.initial_events, False, text)
        self._arm()

    def feed(self, text: str) -> list[dict]:
        """Add generated text; return the events it completes."""
        if type(text) is str and text:
            if self._q1 not in text and self._q2 not in text:
                # The quickest path, armed by _arm() (``_q1`` is "" otherwise, which is in
                # every string): a region is open, no context is kept, nothing but
                # whitespace is held, and neither of the (one or two) characters the
                # watched delimiters start with is in this chunk. So nothing can commit;
                # all of it goes into the region, except a whitespace tail a
                # whitespace-led delimiter may grow from.
                held = self._held
                if held:
                    text = held + text
                    self._held = ""
                if self._ws and text[-1] in REGEX_WS:
                    cut = ws_run_start(text, 0, len(text))
                    self._held = text[cut:]
                    if not cut:
                        return []
                    text = text[:cut]
            else:
                quiet = self._qq
                if quiet is None:
                    if self._stable is not None and self._stays_stable(text):
                        return []  # a stable hold (see _feed): nothing changes, nothing to arm
                    return self._feed_scanning(text)
                # The quiet path, armed by _arm() as well: a delimiter may start in this
                # chunk, but unless one of the watched delimiters' marks occurs, nothing
                # can commit (see quiet_cut): emit up to where one may still be written.
                held = self._held
                x = held + text if held else text
                cut = quiet_cut(x, quiet)
                if cut < 0:
                    pending = self._pending
                    if pending is not None and held and still_pending(x, pending, quiet[0]):
                        # a regex delimiter is still being written from the hold, and nothing
                        # else can commit before it ends: keep holding (as _feed would); the
                        # hold now has more than whitespace, so the quickest path is disarmed
                        self._held = x
                        self._q1 = ""
                        return []
                    return self._feed_scanning(text, True)
                if cut and not self._opened and self._event is not None:
                    return self._feed_scanning(text)  # the implicit region opens: see _accumulate
                if cut < len(x):
                    held = self._held = x[cut:]
                    first = self._first
                    if (
                        first
                        and first not in held
                        and self._second not in held
                        and (self._opened or self._event is None)  # see _arm
                    ):
                        self._q1 = first
                        self._q2 = self._second
                    else:
                        self._q1 = ""
                    if not cut:
                        return []
                    x = x[:cut]
                elif held:
                    self._held = ""
                    self._q1 = self._first
                    self._q2 = self._second
                text = x
            # Either way ``text`` goes into the open region now.
            event = self._event
            if event is None:
                self._done += len(text)  # the null region: text outside every field is dropped
                return []
            parts = self._parts
            parts.append(text)  # counted into _done later (see _settle)
            if len(parts) > 64:  # _MERGE_PARTS
                self._compact()
            event = event.copy()
            event["text"] = text
            return [event]
        if text and type(text) is not str:
            text = _plain_str(text, "text")  # (None and "" are no-ops, as in the reference)
        return self._feed_scanning(text)

    def _feed_scanning(self, text: str, marked: bool = False) -> list[dict]:
        """feed's general path: the other shortcuts, else a scan (see _feed). ``marked``:
        feed's quiet path found a mark in the text and no pending delimiter: scan at once."""
        self._settle()
        try:
            return self._feed(text, marked)
        finally:
            self._mark = len(self._parts)
            self._arm()

    def _stays_stable(self, text: str) -> bool:
        """Under a stable hold (see _feed): keep ``text`` without rescanning the hold, unless
        the hold's tail literal may have appeared (then the hold ends: scan)."""
        tail = self._stable
        edge = self._stable_edge + text
        if tail in edge:
            self._stable = None
            return False
        more = self._more
        more.append(text)
        if len(more) > _MERGE_PARTS:
            self._more_blocks.append("".join(more))
            more.clear()
        self._stable_edge = edge[1 - len(tail) :] if len(tail) > 1 else ""
        return True

    def _feed(self, text: str, marked: bool = False) -> list[dict]:
        if self._stable is not None and type(text) is str and self._stays_stable(text):
            return []  # still held, nothing to emit
        firsts = self._firsts
        if firsts is not None and text and not marked:
            # Fast path: no delimiter watched in this state can start in the held text
            # plus this chunk (none of their first characters occurs in it).
            held = self._held
            x = held + text if held else text
            for c in firsts:
                if c in x:
                    break
            else:
                if self._simple and self._opened and not (self._ws and x[-1] in REGEX_WS):
                    # an open region, nothing to hold, no context to keep
                    parts = self._parts
                    parts.append(x)
                    self._done += len(x)
                    self._mark = len(parts)
                    if len(parts) > _MERGE_PARTS:
                        self._compact()
                    if held:
                        self._held = ""
                    return [{"type": "region_chunk", "field": self._name, "text": x, "dirty": self._dirty}]
                return self._feed_quiet(x)
            quiet = self._quiet_now()
            if quiet is not None:
                # No watched delimiter can complete unless one of its marks occurs; when
                # none does, emit up to where one may still be being written.
                cut = quiet_cut(x, quiet)
                if cut >= 0:
                    return self._feed_quiet(x, cut)
                pending = self._pending
                if pending is not None and held and still_pending(x, pending, quiet[0]):
                    # a regex delimiter is still being written from the hold, and nothing
                    # else can commit before it ends: keep holding (the quickest path stays
                    # disarmed: the hold has more than whitespace)
                    self._held = x
                    self._q1 = ""
                    return []
        if self._finalized:
            raise RuntimeError("this parser is already finalized; create a new one for the next generation")
        events: list[dict] = []
        self._process(events, False, text if text else "")  # feed(None) is a no-op, as in the reference
        return events

    def _arm(self) -> None:
        """Arm feed's quickest and quiet paths when they apply now (see feed). The quickest
        path emits without looking, so it waits for the implicit region to be opened (by
        the general path, which emits its region_open first); the quiet path checks."""
        if self._armable and self._stable is None:
            first = self._first
            held = self._held
            if first and (self._opened or self._cur < 0) and not (held and (first in held or self._second in held)):
                self._q1 = first
                self._q2 = self._second
            else:
                self._q1 = ""
            self._qq = self._quiet_now()
        else:
            self._q1 = ""
            self._qq = None

    def _quiet_now(self) -> tuple | None:
        """The state's quiet_cut table, when quiet_cut may answer now: no text is collected
        behind a stable hold and no held-regex memo is kept (their scans must run)."""
        if self._more or self._more_blocks or (self.MEMOS and self._memo.count(None) != self.MEMOS):
            return None
        return self._quiet

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
        self._settle()
        events: list[dict] = []
        self._process(events, True, "")
        return self._message(), events

    @classmethod
    def parse_whole(cls, prefix: str | None, text: str, tools: Iterable[dict | Callable] | None = None) -> dict:
        """The message of a whole output: what ``cls(prefix, tools=tools)``, ``feed(text)``
        and ``finalize()`` give, without building a streaming parser or any event.

        The (cut) prefix is scanned as a feed would scan it, then the text once, at end
        of stream: a match that a feed would hold at the end of ``text`` is decided by the
        end-of-stream scan from the same position, so the message is the same. A region's
        body is the slice of the input between its delimiters. Templates with ``\\G``
        (which matches where each scan starts, so where feed and finalize each start
        matters) feed and finalize.
        """
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        if type(prefix) is not str:
            prefix = _plain_str(prefix, "prefix")
        if type(text) is not str:
            text = _plain_str(text, "text")
        if not cls.ONE_PASS:
            parser = cls(prefix, tools=tools)
            parser.feed(text)
            return parser.finalize()[0]
        # Only what the generated scans read lives on the instance (_off, _ban, _memo).
        self = cls.__new__(cls)
        self._ban = -1
        self._memo = [None] * cls.MEMOS
        table = tool_types(tools) if tools else None
        out = cls.new_defaults()
        finish, typed, joins, repeats = cls.FINISH, cls.TYPED, cls.JOIN, cls.REPEATS
        free = len(cls.FIELDS)
        implicit = cls.IMPLICIT
        keep = cls.CONTEXT
        state, cur, opened, opened_at, caps = free, implicit, False, -1, {}
        head = ""  # the open region's body taken from the prefix
        ctx = held = ""
        done = 0
        for chunk, eos in ((cls.cut_prefix(prefix) if prefix else "", False), (text, True)):
            if not (chunk or eos):
                continue  # no prefix left to scan
            scans = cls.END_SCANS if eos else cls.SCANS
            buf = ctx + held + chunk if (ctx or held) else chunk
            pos = start = len(ctx)
            off = self._off = done - start
            n = len(buf)
            while True:
                found = scans[state](self, buf, pos, eos)
                if type(found) is int:
                    if not eos:  # the end of the prefix: hold from ``found`` on
                        if found > pos:
                            if cur >= 0:
                                opened = True
                                head += buf[pos:found]
                            pos = found
                        break
                    begin = end = n
                    action = None
                else:
                    begin, end, action, match = found
                had_content = opened = opened or (begin > pos and cur >= 0)
                if action == CLOSE:
                    if begin == end and opened_at == begin + off:
                        self._ban = begin + off  # the progress rule (see _process)
                    if match is not None:  # a close's named groups join the open's captures
                        caps = {**caps, **_captures(match)}
                if opened:  # close the open region into its value
                    value = finish[cur](head + buf[pos:begin] if head else buf[pos:begin], caps)
                    if table and typed[cur]:
                        value = coerce_value(value, table)
                    _store(out, cls.FIELDS[cur], value, joins[cur], repeats[cur])
                    head = ""
                pos = end
                if action is None:
                    break
                if action >= 0:
                    state = cur = action
                    caps = {} if match is None else _captures(match)
                    opened = True
                    opened_at = begin + off if begin == end else -1
                else:
                    state, cur, opened, opened_at, caps = free, implicit, False, -1, {}
                    if not had_content and begin == end:
                        break  # the reference's guard (see _process)
            cut = 0 if keep < 0 else (pos - keep if pos > keep else 0)
            ctx = buf[cut:pos]
            held = buf[pos:]
            done += pos - start
        return _final_message(cls, out)

    def _message(self) -> dict:
        self._out = _final_message(self, self._out)
        self._finalized = True
        self._firsts = self._quiet = self._qq = None
        self._q1 = ""
        return self._out

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
        committed = False
        try:
            while True:
                if committed and not eos:
                    if pos == len(buf):
                        break  # nothing left: a scan would hold from here, and commit nothing
                    # What follows a commit: unless a mark occurs in it, quiet_cut says where
                    # the new state's scan would hold (the first pass was asked already).
                    quiet = self._quiet_now()
                    cut = -1 if quiet is None else quiet_cut(buf[pos:], quiet)
                    found = self._scan(self, buf, pos, eos) if cut < 0 else pos + cut
                else:
                    found = self._scan(self, buf, pos, eos)
                committed = True
                if type(found) is int:
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
                    if match is not None and had_content:
                        # a close's named groups join the open's captures in the transform
                        # scope, overriding an open capture of the same name (closing a region
                        # that never opened, they are dropped with the rest of its scope)
                        self._caps = {**self._caps, **_captures(match)}
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

    def _settle(self) -> None:
        """Count the chunks feed's quickest path added to the body into ``_done``."""
        parts = self._parts
        if len(parts) > self._mark:
            self._done += sum(map(len, parts[self._mark :]))
            self._mark = len(parts)

    def _compact(self) -> None:
        """Fold the recent chunks into blocks, and blocks into bigger blocks: a long body is
        held in few strings (not one object per chunk) and each character is copied twice."""
        parts = self._parts
        block = "".join(parts)
        # count the chunks not yet in _done (see _settle) from the block's length: cheaper
        # than their lengths one by one when most of them are uncounted
        mark = self._mark
        if mark * 2 <= len(parts):
            self._done += len(block) - sum(map(len, parts[:mark]))
        else:
            self._done += sum(map(len, parts[mark:]))
        blocks = self._blocks
        blocks.append(block)
        parts.clear()
        self._mark = 0
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
        self._mark = 0
        body = self._acc = "".join(pieces)
        return body

    def _accumulate(self, events: list[dict], text: str) -> None:
        if self._cur < 0:
            return  # no region is open and the template has no implicit field
        if not self._opened:
            self._opened = True
            events.append({"type": "region_open", "field": self._name})
        parts = self._parts
        parts.append(text)  # the caller counts it into _done
        self._mark = len(parts)
        if len(parts) > _MERGE_PARTS:
            self._compact()
        events.append({"type": "region_chunk", "field": self._name, "text": text, "dirty": self._dirty})

    def _open(self, events: list[dict], index: int, match: Any, start: int, end: int) -> None:
        self._enter(index)
        self._caps = {} if match is None else _captures(match)
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
            if self._tools and self.TYPED[cur]:
                value = coerce_value(value, self._tools)
            _store(self._out, name, value, self.JOIN[cur], self.REPEATS[cur])
            events.append({"type": "region_close", "field": name, "value": value})
        self._reset()

    @classmethod
    def _modes(cls) -> tuple[tuple, ...]:
        """Per state, everything entering it sets (see ``_enter``), worked out once per class."""
        modes = cls.__dict__.get("_MODES")
        if modes is None:
            cls._QUIET = tuple(None if marks is None else quiet_table(marks) for marks in cls.MARKS)
            modes = []
            for state in range(len(cls.FIELDS) + 1):
                cur = state if state < len(cls.FIELDS) else cls.IMPLICIT
                name = cls.FIELDS[cur] if cur >= 0 else None
                dirty = cls.DIRTY[cur] if cur >= 0 else False
                fast = cls.FAST[state]
                if fast is None:
                    firsts, ws, simple, first, second, quiet, pending = None, False, False, "", "", None, None
                else:
                    firsts, ws = fast
                    simple = cls.CONTEXT == 0 and cur >= 0
                    first, second = (firsts[0], firsts[-1]) if 0 < len(firsts) <= 2 else ("", "")
                    quiet = None if cls.CONTEXT else cls._QUIET[state]
                pending = None if quiet is None else cls.PENDING[state]
                event = None if cur < 0 else {"type": "region_chunk", "field": name, "text": "", "dirty": dirty}
                armable = fast is not None and cls.CONTEXT == 0
                modes.append(
                    (cur, state, name, dirty, cls.SCANS[state], firsts, ws, simple, armable, first, second, quiet, pending, event)
                )
            modes = cls._MODES = tuple(modes)
        return modes

    def _enter(self, state: int) -> None:
        (
            self._cur,
            self._state,
            self._name,
            self._dirty,
            self._scan,
            self._firsts,
            self._ws,
            self._simple,
            self._armable,
            self._first,
            self._second,
            self._quiet,
            self._pending,
            self._event,
        ) = self._MODES[state]
        self._q1 = ""
        self._qq = None

    def _reset(self) -> None:
        """Back to the free state: the implicit region (not yet opened) or the null region."""
        self._enter(len(self.FIELDS))
        self._caps = {}
        self._acc = ""
        self._parts.clear()
        self._mark = 0
        self._blocks.clear()
        self._big.clear()
        self._opened = False
        self._opened_at = -1


def _plain_str(value: Any, what: str) -> str:
    """``value`` as a plain ``str``: a str subclass (numpy.str_, say) is copied into one, so the
    scans (typed for ``str`` when compiled, see base.pxd) take it; anything else is a TypeError."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    return str.__str__(value)


def _captures(match: Any) -> dict[str, str]:
    """The named groups of a delimiter's match that took part, in the pattern's order: what
    ``{k: v for k, v in match.groupdict().items() if v is not None}`` gives, without the
    regex module's ``groupdict`` (1.4 µs against ~0.3 µs for this loop)."""
    captures = {}
    group = match.group
    for name, index in match.re.groupindex.items():
        value = group(index)
        if value is not None:
            captures[name] = value
    return captures


def _store(out: dict, name: str, value: Any, join: str | None, repeats: bool) -> None:
    """Put a closed region's value into the message: joined to the field's earlier blocks
    (``join``), appended to its list (``repeats``), or set."""
    if join is not None:
        if not isinstance(value, str):
            raise ValueError(f"field {name!r}: 'join' needs every block to parse to a string, got {type(value).__name__}")
        previous = out.get(name)
        out[name] = value if previous is None else previous + join + value
    elif repeats:
        out.setdefault(name, []).append(value)
    else:
        out[name] = value


def _final_message(parser: Any, out: dict) -> dict:
    """The message: ``out`` less the empty values of fields not in the defaults, once every
    required field is known to be there."""
    if parser.REQUIRED:
        missing = [name for name in parser.REQUIRED if name not in out]
        if missing:
            raise ValueError(f"required field(s) {missing} (optional: false) did not appear in the parsed output")
    for value in out.values():
        if value is None or (not value and isinstance(value, (list, dict, str))):
            break
    else:
        return out  # nothing to leave out (the common case)
    defaults = parser.DEFAULTS
    return {k: v for k, v in out.items() if k in defaults or not _is_empty(v)}


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


def quiet_table(marks: tuple[tuple[str, ...], tuple[str, ...]]) -> tuple:
    """A state's MARKS prepared for :func:`quiet_cut`: ``(marks, direct prefixes,
    whitespace-led prefixes, first characters, longest mark, any whitespace-led mark)``,
    where the prefix sets hold every proper beginning of a direct / whitespace-led mark
    (a one-character mark has none)."""
    direct, ws_led = marks
    every = tuple(dict.fromkeys(direct + ws_led))
    direct_prefixes = frozenset(m[:k] for m in direct for k in range(1, len(m)))
    ws_prefixes = frozenset(m[:k] for m in ws_led for k in range(1, len(m)))
    firsts = "".join(sorted({m[0] for m in every}))
    return every, direct_prefixes, ws_prefixes, firsts, max(map(len, every)), bool(ws_led)


def quiet_cut(x: str, quiet: tuple) -> int:
    """Where the scan of ``x`` (held text plus a chunk) would hold, when it can commit
    nothing; -1 when it may (then scan).

    The marks are the literals and the required literal prefixes of the regexes that
    start without whitespace (direct), and those of the whitespace-led regexes
    (``\\s*``; see ``compiler/regexinfo.lead``). Every match starts with one of them
    (after its whitespace), so when ``x`` contains none, nothing is complete, and a
    delimiter is partial exactly where the rest of ``x`` is a proper beginning of one
    (from the whitespace before it, for a whitespace-led one), or in a trailing
    whitespace run a whitespace-led one may still grow from.
    """
    every, direct, ws_led, firsts, longest, ws_lead = quiet
    for mark in every:
        if mark in x:
            return -1
    if x in direct:
        return 0  # the common case: a delimiter is being written from the start
    n = len(x)
    start = n - longest + 1 if n > longest else 0
    cut = n
    for c in firsts:
        i = x.find(c, start)
        while 0 <= i < cut:
            rest = x[i:]
            if rest in ws_led:
                cut = ws_run_start(x, 0, i)  # a whitespace-led match starts before it
                break
            if rest in direct:
                cut = i
                break
            i = x.find(c, i + 1)
    if ws_lead and x[-1] in REGEX_WS:
        i = ws_run_start(x, 0, n)
        if i < cut:
            cut = i
    return cut


def still_pending(x: str, pending: tuple, marks: tuple[str, ...]) -> bool:
    """True when ``x`` (held text plus a chunk) is still a partial match of one of the
    ``pending`` regex delimiters from its start, and nothing else can commit first.

    ``x`` must start (after its whitespace, for a whitespace-led pattern) with one of
    that pattern's literal prefixes, and no mark of the state (``marks``) may occur
    anywhere else in it: then no other match, of any watched delimiter, can be
    complete, and with the partial match at the start the scan holds all of ``x``.
    Only patterns where a match from the whitespace run's start and from the character
    after it are the same are listed (see ``compiler.emit._pending_entry``).
    """
    k = ws_run_end(x, 0) if x[0] in REGEX_WS else 0
    if k == len(x):
        return False
    for prefixes, ws_led, rx in pending:
        if k and not ws_led:
            continue
        for prefix in prefixes:
            if x.startswith(prefix, k):
                break
        else:
            continue
        for mark in marks:
            at = x.find(mark)
            if at >= 0 and (at != k or mark != prefix or x.find(mark, k + 1) >= 0):
                return False
        match = rx.match(x, 0, partial=True)
        return match is not None and match.partial
    return False


def edge_moves(rx: Any, buf: str, match: Any) -> bool:
    r"""True when the complete ``match`` of ``rx``, which ends before the end of ``buf``, is
    not final yet: matched again at its start with one more character (``\x00``, neither a
    newline nor the end of the text) appended to ``buf``, it moves or its named groups
    change (it leaned on ``$``, ``\Z`` or a lookahead at the end). The reference's rule;
    generated scans ask it only for patterns that can lean on the end (regexinfo)."""
    again = rx.match(buf + "\x00", match.start())
    return again is None or again.span() != match.span() or again.groupdict() != match.groupdict()


def ws_run_end(buf: str, i: int) -> int:
    """End of the run of ``\\s`` characters that starts at ``i``."""
    n = len(buf)
    while i < n and buf[i] in REGEX_WS:
        i += 1
    return i


def prefix_partial(buf: str, i: int, prefixes: tuple[str, ...]) -> bool:
    """True when ``buf[i:]`` (the end of the buffer) may still grow into one of ``prefixes``."""
    rest = buf[i:]
    for prefix in prefixes:
        if prefix.startswith(rest):
            return True
    return False


def tail_in(buf: str, lo: int, firsts: str, beginnings: frozenset[str]) -> int:
    """The earliest ``k >= lo`` where ``buf[k:]`` is one of ``beginnings`` (the proper
    beginnings of some literals, whose first characters are ``firsts``); ``len(buf)``
    when there is none. With ``lo`` no earlier than the longest literal's length less one
    from the end, that is where the earliest tail that may still grow into one of the
    literals starts (what :func:`partial_start` finds for one literal)."""
    best = len(buf)
    for c in firsts:
        k = buf.find(c, lo, best)
        while k >= 0:
            if buf[k:] in beginnings:
                best = k
                break
            k = buf.find(c, k + 1, best)
    return best
