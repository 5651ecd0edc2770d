"""The parser base that every generated module's ``Parser`` class extends.

A generated ``Parser`` describes its template with the records of ``runtime/scan.py``
(``FIELDS``, ``STATES``, ...; see that module's docstring, the whole contract): per state
a *scan* that finds the delimiter to commit, or where text must be held because a
delimiter may still be being written, and a *quiet* test that answers the same without
scanning when the state's marks show that nothing can commit. This module owns
everything around them: feeding, committing delimiters, regions and their events,
values, the prefix, and finalizing.

Input is consumed as it is decided. A parser keeps only ``_held`` (the text a delimiter
may still start in), ``CONTEXT`` characters of consumed input for patterns that look
behind, and the open region's body; ``_done`` counts the characters consumed so far, as
offsets into the cut prefix followed by the output.

Where each thing happens, once:

* ``feed``: the one feed path. The state's quiet test decides most chunks; otherwise
  ``_commit`` scans. A *lasting hold* (``_stays_held``) keeps a held text that only its
  end can change without rescanning it: a held regex match in a lazy gap waits for its
  tail literal, a held whitespace run for anything but whitespace, a held match inside
  a run of one character class (a function name being written) for a character out of
  it. That keeps long holds linear.
* ``_commit``: the one commit loop, for streaming, finalizing and whole outputs alike:
  the progress rule, the empty-region guard and the consumed/held bookkeeping.
* ``_take``: where text enters the open region (and the implicit region opens).
* ``_open`` and ``_close``: where regions begin and end, and values are made; a value that
  fails to parse goes to ``_malformed`` (``on_malformed="event"``) or raises.
Every event is built in those, only when there is an event list to append it to (``events``
is None for a whole output: the same loop, no events), with its offsets when ``spans`` is
on. One hook for a consumer of the events: with ``_bare`` set (respc.runtime.deltas sets
it), a region_chunk event is its text alone, a str, not a dict (the chunk's field is the
one whose region_open came last, or the state's at the feed's start). A regex over its
time bound (``regex_timeout`` per call, ``regex_budget`` for all of a parse's calls: see
scan.timed) is caught once, in ``_commit``.
``__reduce__`` / ``__deepcopy__`` carry the state as data (pickling, forked streams).
"""

from __future__ import annotations

import re as _re
import warnings
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any, ClassVar

import regex as _regex

from . import scan
from .scan import CLOSE, REGEX_WS, Field, State, only_ws
from .tools import ToolTypes, coerce_value, tool_types

__all__ = ["CLOSE", "ParserBase", "PREFIX_REQUIRED", "PrefixWarning", "REGEX_WS", "RegexTimeout"]

PREFIX_REQUIRED = (
    "prefix is required: pass the chat prompt that preceded the generation (prefix=...), because chat "
    "templates often pre-write part of the assistant message (an opening <think>, a prefill) that the "
    'parser must see. If the generation already holds the complete message, pass prefix="" to opt out.'
)

_FINALIZED = "this parser is already finalized; create a new one for the next generation"


class RegexTimeout(TimeoutError):
    """A template's regex ran over its time bound on this output (catastrophic
    backtracking). With ``on_malformed="event"`` the region ends in region_malformed
    instead; ``respc lint`` points at patterns that can do this."""


class PrefixWarning(UserWarning):
    """A non-empty prefix holds no start anchor (the template's ``start_anchor`` or
    ``start_anchor_pattern``): all of it is read as the start of the assistant message, so
    prompt text (a user's ``<tool_call>``, say) becomes part of the message, as it does in
    the reference. Given once per compiled template; pass the prompt up to and including its
    generation prompt, or ``prefix=""`` when the output holds the whole message."""


#: the parser classes that gave their PrefixWarning (once each)
_PREFIX_WARNED: set = set()


def _cut_prefix(cls: Any, prefix: str) -> str:
    """``cls.cut_prefix(prefix)`` (a non-empty prefix), with a PrefixWarning, once per parser
    class, when no start anchor is in it (the cut leaves all of it: one length compare)."""
    text = _cut(cls, prefix)
    if len(text) == len(prefix) and cls not in _PREFIX_WARNED:
        _PREFIX_WARNED.add(cls)
        try:
            template = cls.cut_prefix.__globals__["TEMPLATE"]
            anchor = template.get("start_anchor", template.get("start_anchor_pattern"))
        except (AttributeError, KeyError, TypeError):
            anchor = None
        shown = "" if anchor is None else f" ({anchor!r})"
        warnings.warn(
            PrefixWarning(
                f"prefix: the template's start anchor{shown} is not in the prefix ({len(prefix)} characters), so all "
                "of it is read as the start of the assistant message (prompt text becomes content or tool calls, "
                "as in the reference); pass the prompt up to and including its generation prompt, or prefix=\"\" "
                "when the output holds the whole message (given once per template)"
            ),
            stacklevel=4,
        )
    return text


_TIMEOUT_FIX = (
    "the pattern backtracks without bound on this text; fix it (respc lint names such patterns), "
    "or raise the bound with regex_timeout=..."
)
_BUDGET_FIX = (
    "the template's patterns backtrack without bound on this output; fix them (respc lint names such "
    "patterns), or raise the budget with regex_budget=..."
)

# Pieces of a growing text (a region's body, a lasting hold) are merged once this many
# accumulate, so a long stream of small chunks does not keep one string per chunk.
_MERGE_PARTS = 64

# ``_stable`` of a held match that runs to the end of the text (see _check_tail): every
# later feed is set aside.
_TO_THE_END = True

# A held whitespace run becomes a lasting hold once it is this long (shorter runs are
# cheaper to rescan than to set aside).
_LONG_RUN = 256

# A held text ending in a run of one whitespace character lasts once the run is longer
# than twice the state's pump bound (scan.State.pump) and this many characters more.
_PUMP_MARGIN = 8

#: the regex of a run of one character (a lasting hold's class: see _check_run), by character
_CHAR_RUNS: dict = {}


def _char_run(c: str) -> Any:
    """The regex of a run of ``c`` (one or more), compiled once."""
    found = _CHAR_RUNS.get(c)
    if found is None:
        found = _CHAR_RUNS[c] = _re.compile(_re.escape(c) + "+")
    return found


#: a stop character found more often than this in a held text: the run hold is not tried
#: (each one costs a match of what follows it; see _run_lasts)
_MAX_STOP_FINDS = 32


def _run_lasts(entry: tuple, buf: str, pos: int, n: int) -> bool:
    """A run hold ``(run, alive, stops)`` of a watched delimiter (compiler/regexinfo.py's
    run_holds): does the held ``buf[pos:n]`` end in the delimiter's run of a class (``run``),
    with a partial match from ``pos`` still in it (``alive`` matches all of it), and can no
    way of matching complete anywhere in it while only characters of the class follow (for
    every way some stop character ``F``, which the run cannot give, occurs in the held text
    nowhere that what follows it in the way, ``rest``, matches from, partially or not)? Then
    the scan holds all of it again whatever characters of the class follow."""
    run, alive, stops = entry
    if run.fullmatch(buf, n - 1) is None or alive.fullmatch(buf, pos) is None:
        return False
    seen: dict = {}
    for pairs in stops:
        for stop, rest in pairs:
            key = (stop, rest)
            clear = seen.get(key)
            if clear is None:
                clear = True
                count = 0
                i = buf.find(stop, pos)
                while i >= 0:
                    count += 1
                    if count > _MAX_STOP_FINDS or rest.match(buf, i + 1, partial=True) is not None:
                        clear = False
                        break
                    i = buf.find(stop, i + 1)
                seen[key] = clear
            if clear:
                break  # no way through this stop goes on: this way cannot complete in the run
        else:
            return False
    return True


class ParserBase:
    """Streaming parser state machine; see the module docstring."""

    # Instances keep their state in slots: attribute access stays on CPython's fastest
    # path, which feed pays per chunk (compiled, they are C struct fields: base.pxd).
    __slots__ = (
        "initial_events",
        "_tools",
        "_out",
        "_finalized",
        "_spans",  # events carry offsets (and opens their captures): spans=True
        "_lenient",  # a malformed region is an event, not an error: on_malformed != "raise"
        "_errors",  # the region_malformed events so far (with _lenient)
        "_timeout",  # the time bound of a regex call that may backtrack without bound (scans read it)
        "_left",  # the seconds such calls may still take in all (regex_budget; see scan.timed)
        "_keep",  # CONTEXT
        # input (see the module docstring)
        "_ctx",
        "_ctx_more",  # consumed text not yet joined to an unbounded context (see _keep_context)
        "_held",
        "_done",
        "_off",  # offset of the scanned buffer's start in the whole input (scans read it)
        "_ban",  # the progress rule's position (see _commit; scans read it)
        "_memo",  # the held-regex memos the scans keep (see scan.State.memos)
        # a lasting hold (see _stays_held): the tail literal that ends it, "" for a
        # whitespace run, the regex of a run's class, or _TO_THE_END; the last characters seen; the
        # text set aside meanwhile; how long a held text must be to be checked for a run
        "_stable",
        "_stable_edge",
        "_more",
        "_more_blocks",
        "_run_check",
        # the current state (see _enter)
        "_fields",  # the class's FIELDS
        "_states",  # and STATES
        "_state",
        "_field",  # the Field whose region the state is in (None in the null region)
        "_cur",
        "_name",
        "_scan",
        "_end_scan",
        "_quiet",
        "_ws_hold",
        "_runs",
        "_pump",
        "_dirty",
        "_chunk",  # the state's region_chunk event less its text (built by _take when first needed)
        # the open region: opened yet, where (for the progress rule), captures, body
        "_opened",
        "_opened_at",
        "_caps",
        "_parts",
        "_blocks",
        "_big",
        # region_chunk events are their text alone (see the module docstring)
        "_bare",
    )

    # --- what each generated Parser class describes (see runtime/scan.py) -----------
    FIELDS: ClassVar[tuple[Field, ...]] = ()
    STATES: ClassVar[tuple[State, ...]] = ()
    #: the template's ``defaults`` (see new_defaults)
    DEFAULTS: ClassVar[dict] = {}
    #: names of the fields with ``optional: false``
    REQUIRED: ClassVar[tuple[str, ...]] = ()
    #: characters of consumed input that scans may look back on (-1: all)
    CONTEXT: ClassVar[int] = 0
    #: a whole output may be parsed in one end-of-stream pass (not with ``\\G``, which
    #: matches where each scan starts, so where feeds and finalize start matters)
    ONE_PASS: ClassVar[bool] = True
    #: how many held-regex memos the scans keep
    MEMOS: ClassVar[int] = 0

    @staticmethod
    def new_defaults() -> dict:
        """A fresh copy of the template's ``defaults`` (generated as a literal)."""
        return deepcopy(ParserBase.DEFAULTS)

    @staticmethod
    def cut_prefix(prefix: str) -> str:  # pragma: no cover - always generated
        """Return the prefix from just after the last start anchor (all of it if there is none)."""
        raise NotImplementedError

    # --- public API --------------------------------------------------------
    def __init__(
        self,
        prefix: str | None = None,
        *,
        tools: Iterable[dict | Callable] | None = None,
        spans: bool = False,
        on_malformed: str = "raise",
        regex_timeout: float | None = scan.REGEX_TIMEOUT,
        regex_budget: float | None = scan.REGEX_BUDGET,
    ):
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        prefix = _plain_str(prefix, "prefix")
        self._setup(tool_types(tools))
        self._timeout = _time_bound(regex_timeout)
        self._left = _time_bound(regex_budget, "regex_budget")
        self._spans = _flag(spans, "spans")
        self._lenient = _malformed_mode(on_malformed, ("raise", "event")) != "raise"
        self.initial_events: list[dict] = []
        if prefix:
            text = _cut_prefix(type(self), prefix)
            if text:
                self._commit(self.initial_events, text, False)

    def feed(self, text: str) -> list[dict]:
        """Add generated text; return the events it completes."""
        if type(text) is not str:
            text = "" if text is None else _plain_str(text, "text")  # None: a no-op, as in the reference
        if self._finalized:
            raise RuntimeError(_FINALIZED)
        if not text and not self._held:
            return []  # (with held text, an empty feed scans it again, as the reference does)
        if self._stable is not None and self._stays_held(text):
            return []
        held = self._held
        x = held + text if held else text
        quiet = self._quiet
        if quiet is not None:
            cut = quiet(self, x)
            if cut >= 0:
                # Nothing can commit in x: it goes into the open region up to cut, the
                # rest is held (a delimiter may still be being written there).
                if cut < len(x):
                    held = self._held = x[cut:]
                    if self._ws_hold and len(held) > _LONG_RUN and only_ws(held):
                        self._stable = ""  # a lasting hold (see _stays_held)
                        self._stable_edge = ""
                    elif (self._runs or self._pump >= 0) and not cut and len(held) >= self._run_check:
                        buf, at = self._scan_buffer(held)
                        self._check_run(buf, at)
                    if not cut:
                        return []
                    x = x[:cut]
                elif held:
                    self._held = ""
                at = self._done
                self._done = at + cut
                if self._keep:
                    self._keep_context(x)
                events: list[dict] = []
                self._take(events, x, at)
                return events
        events = []
        self._commit(events, x, False)
        return events

    def finalize(self) -> tuple[dict, list[dict]]:
        """End the stream: close what is open, return ``(message, final_events)``."""
        if self._finalized:
            raise RuntimeError(_FINALIZED)
        self._release()
        events: list[dict] = []
        self._commit(events, self._held, True)
        return self._message(), events

    @classmethod
    def parse_whole(
        cls,
        prefix: str | None,
        text: str,
        tools: Iterable[dict | Callable] | None = None,
        errors: list | None = None,
        regex_timeout: float | None = scan.REGEX_TIMEOUT,
        regex_budget: float | None = scan.REGEX_BUDGET,
    ) -> dict:
        """The message of a whole output: what ``cls(prefix, tools=tools)``, ``feed(text)``
        and ``finalize()`` give, without any event. With an ``errors`` list, a region whose
        content fails to parse is left out of the message and its region_malformed event
        appended there (``on_malformed="collect"``) instead of raising.

        The (cut) prefix is scanned as a feed would scan it, then the text once, at end of
        stream (a match a feed would hold at the end of ``text`` is decided by the end-of-
        stream scan from the same position, so the message is the same). Templates with
        ``\\G`` (ONE_PASS false) feed and finalize.
        """
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        if type(prefix) is not str:
            prefix = _plain_str(prefix, "prefix")
        if type(text) is not str:
            text = _plain_str(text, "text")
        if not cls.ONE_PASS:
            parser = cls(
                prefix,
                tools=tools,
                on_malformed="raise" if errors is None else "event",
                regex_timeout=regex_timeout,
                regex_budget=regex_budget,
            )
            parser.feed(text)
            message = parser.finalize()[0]
            if errors is not None:
                errors += parser._errors
            return message
        if regex_timeout is not scan.REGEX_TIMEOUT:  # (the defaults need no check)
            regex_timeout = _time_bound(regex_timeout)
        if regex_budget is not scan.REGEX_BUDGET:
            regex_budget = _time_bound(regex_budget, "regex_budget")
        return cls.__new__(cls)._whole(
            _cut_prefix(cls, prefix) if prefix else "", text, tools, errors, regex_timeout, regex_budget
        )

    def _whole(
        self,
        prefix: str,
        text: str,
        tools: Iterable[dict | Callable] | None,
        errors: list | None,
        timeout: Any,
        budget: Any,
    ) -> dict:
        """parse_whole's one-pass case, on a new instance (``prefix``: the cut prefix)."""
        self._setup(tool_types(tools) if tools else None)
        self._timeout = timeout
        self._left = budget
        if errors is not None:
            self._lenient = True
            self._errors = errors
        if prefix:
            self._commit(None, prefix, False)
        held = self._held
        self._commit(None, held + text if held else text, True)
        return self._message()

    # --- pickling and copying -------------------------------------------------
    def __reduce__(self) -> tuple:
        """A parser pickles by its template (the CompiledTemplate, which pickles by its
        bundled name or its template) and its state, which is data: unpickled in another
        process, it goes on exactly where it was (checkpoints, forked decoding)."""
        from respc.api import _parser_reduce_args  # (the API imports this module)

        return _restore_parser, (_parser_reduce_args(type(self)), self._state_data())

    def __copy__(self) -> ParserBase:
        """A parser that goes on independently from here: the same events for the same rest."""
        return self.__deepcopy__({})

    def __deepcopy__(self, memo: dict) -> ParserBase:
        copy = type(self).__new__(type(self))
        copy._restore_state(deepcopy(self._state_data(), memo))
        return copy

    def _state_data(self) -> dict:
        """The parser's state as plain data: every slot but those its state index implies."""
        return {name: getattr(self, name) for name in ParserBase.__slots__ if name not in _DERIVED}

    def _restore_state(self, data: dict) -> None:
        self._fields = self.FIELDS
        self._states = self.STATES
        self._enter(data["_state"])  # what the state implies
        for name, value in data.items():
            setattr(self, name, value)

    # --- the state machine -------------------------------------------------
    def _setup(self, tools: ToolTypes | None) -> None:
        self._tools = tools
        self._out: dict[str, Any] = self.new_defaults()
        self._finalized = False
        self._spans = False
        self._lenient = False
        self._errors = []
        self._timeout = scan.REGEX_TIMEOUT
        self._left = scan.REGEX_BUDGET
        self._keep = self.CONTEXT
        self._fields = self.FIELDS
        self._states = self.STATES
        self._ctx = ""
        self._ctx_more: list[str] = []
        self._held = ""
        self._done = 0
        self._off = 0
        self._ban = -1
        self._memo: list = [None] * self.MEMOS
        self._stable: Any = None
        self._stable_edge = ""
        self._more: list[str] = []
        self._more_blocks: list[str] = []
        self._parts: list[str] = []
        self._blocks: list[str] = []
        self._big: list[str] = []
        self._bare = False
        # (what _reset does, less clearing the fresh body lists above)
        self._enter(len(self._states) - 1)
        self._caps = {}
        self._opened = False
        self._opened_at = -1

    def _commit(self, events: list[dict] | None, text: str, eos: bool) -> None:
        """Scan ``text`` (all the input not consumed yet) and commit every delimiter that is
        final: the one commit loop. Text before a delimiter goes into the open region;
        what may still become one stays held, unless ``eos`` (then the last region closes).
        """
        keep = self._keep
        reach = None  # an unbounded context: the tail of it the current state's scan reads
        if keep >= 0:
            ctx = self._ctx
        else:
            reach = self._states[self._state].reach
            if reach is not None:
                ctx = _context_tail(self._ctx, self._ctx_more, reach) if reach[0] or reach[1] else ""
            else:
                ctx = self._whole_context()
        buf = ctx + text if ctx else text
        n = len(buf)
        pos = start = len(ctx)
        off = self._off = self._done - start  # offset of buf[0] in the whole input
        committed = False
        try:
            while True:
                if reach is not None and committed and not _reaches(reach, self._states[self._state].reach):
                    # the state this commit entered looks back further than the tail: the
                    # whole context before this commit goes in front of what it scans
                    ctx = self._whole_context()
                    buf = ctx + buf[start:]
                    pos += len(ctx) - start
                    start = len(ctx)
                    n = len(buf)
                    off = self._off = self._done - start
                    reach = None
                if not committed:
                    found = (self._end_scan if eos else self._scan)(self, buf, pos, eos)
                elif eos:
                    found = self._end_scan(self, buf, pos, True)
                elif pos == n:
                    break  # nothing left: a scan would hold here and commit nothing
                else:
                    # what follows a commit: the new state's quiet test, else its scan
                    quiet = self._quiet
                    cut = -1 if quiet is None else quiet(self, buf[pos:])
                    found = self._scan(self, buf, pos, False) if cut < 0 else pos + cut
                committed = True
                if type(found) is int:
                    if eos:
                        if pos < n:
                            self._take(events, buf[pos:], pos + off)
                            pos = n
                        self._close(events, n + off, n + off)
                    else:
                        if found > pos:
                            self._take(events, buf[pos:found], pos + off)
                            pos = found
                        if self._memo and pos < n:
                            self._check_stable(buf, pos)
                        if pos < n and self._stable is None and self._states[self._state].tails:
                            self._check_tail(buf, pos)
                        if (
                            (self._runs or self._ws_hold or self._pump >= 0)
                            and n - pos >= self._run_check
                            and self._stable is None
                        ):
                            self._check_run(buf, pos)
                    break
                begin, end, action, match = found
                if begin > pos:
                    self._take(events, buf[pos:begin], pos + off)
                pos = end
                if action >= 0:
                    self._close(events, begin + off, begin + off)
                    self._open(events, action, match, begin + off, end + off)
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
                    self._close(events, begin + off, end + off)
                    if not had_content and begin == end:
                        break  # the reference's guard: an empty implicit region closing empty
        except TimeoutError as error:
            if isinstance(error, RegexTimeout):
                raise  # (a content pattern's, raised by _close)
            # A delimiter's regex ran over the time bound: this input cannot be scanned.
            where = f"scanning for the delimiters of {'field ' + repr(self._name) if self._opened else 'the free state'}"
            if isinstance(error, scan.BudgetSpent):
                problem = RegexTimeout(
                    f"{where}: the template's regexes that may backtrack without bound have taken the parse's "
                    f"whole time budget (regex_budget; respc.REGEX_BUDGET = {scan.REGEX_BUDGET} s by default); "
                    f"{_BUDGET_FIX}"
                )
            else:
                problem = RegexTimeout(f"{where}: a regex ran over its time bound ({self._timeout} s); {_TIMEOUT_FIX}")
            if not self._lenient:
                raise problem from error
            # It ends the open region as malformed, with the rest of the input as its last
            # text (consumed: parsing goes on with what is fed next, in the free state).
            body = (self._body() if self._opened else "") + buf[pos:]
            self._malformed(events, problem, body, pos + off, n + off)
            pos = n
            self._reset()
        finally:
            # Keep the input consistent even when a content parser raised mid-way.
            if reach is not None:
                if pos > start:
                    _add_piece(self._ctx_more, buf[start:pos])
            else:
                cut = 0 if keep < 0 else (pos - keep if pos > keep else 0)
                self._ctx = buf[cut:pos]
            self._held = buf[pos:]
            self._done += pos - start

    def _take(self, events: list[dict] | None, text: str, at: int) -> None:
        """``text``, consumed input from offset ``at`` on, goes into the open region; the
        implicit region opens with its first text. In the null region (no implicit field) it
        is dropped."""
        if self._cur < 0:
            return
        if not self._opened:
            self._opened = True
            if events is not None:
                if self._spans:
                    events.append({"type": "region_open", "field": self._name, "start": at, "end": at})
                else:
                    events.append({"type": "region_open", "field": self._name})
        parts = self._parts
        parts.append(text)
        if len(parts) > _MERGE_PARTS:
            self._compact()
        if events is not None:
            if self._bare:
                events.append(text)
                return
            chunk = self._chunk
            if chunk is None:
                chunk = self._chunk = {"type": "region_chunk", "field": self._name, "text": "", "dirty": self._dirty}
                if self._spans:
                    chunk["start"] = 0
            event = chunk.copy()  # (copying a dict of the same keys is quicker than building one)
            event["text"] = text
            if self._spans:
                event["start"] = at
            events.append(event)

    def _open(self, events: list[dict] | None, index: int, match: Any, begin: int, end: int) -> None:
        """Open field ``index``'s region: its open delimiter matched ``begin:end`` (offsets
        into the input), ``match`` (None for a literal)."""
        self._enter(index)
        caps = self._caps = {} if match is None else _captures(match)
        self._opened = True
        self._opened_at = begin if begin == end else -1
        if events is not None:
            if self._spans:
                events.append({"type": "region_open", "field": self._name, "start": begin, "end": end, "captures": dict(caps)})
            else:
                events.append({"type": "region_open", "field": self._name})

    def _close(self, events: list[dict] | None, begin: int, end: int) -> None:
        """Close the open region into its value (its close delimiter, or the position where
        something else ends it, is ``begin:end``), and go back to the free state."""
        if self._opened:
            field: Field = self._field
            body = self._body()
            try:
                value = field.finish(body, self._caps)
                if field.typed and self._tools:
                    value = coerce_value(value, self._tools)
                _store(self._out, field.name, field.join, field.repeats, value)
            except _MALFORMED as error:
                if isinstance(error, TimeoutError) and not isinstance(error, RegexTimeout):
                    problem = RegexTimeout(
                        f"field {field.name!r}: its content's regex ran over its time bound "
                        f"({scan.REGEX_TIMEOUT} s, respc.REGEX_TIMEOUT); it backtracks without bound on this "
                        "text: fix the pattern (respc lint names such patterns)"
                    )
                    if not self._lenient:
                        raise problem from error
                    error = problem
                elif not self._lenient:
                    raise
                self._malformed(events, error, body, begin, end)
                self._reset()
                return
            if events is not None:
                if self._spans:
                    events.append({"type": "region_close", "field": field.name, "start": begin, "end": end, "value": value})
                else:
                    events.append({"type": "region_close", "field": field.name, "value": value})
        elif self._state == len(self._states) - 1:
            return  # the free state, nothing opened: there is nothing to close
        self._reset()

    def _malformed(self, events: list[dict] | None, error: BaseException, body: str, begin: int, end: int) -> None:
        """The open region's content failed to parse (``error``): it ends in a
        region_malformed event, and its value stays out of the message."""
        event = {"type": "region_malformed", "field": self._name, "error": _error_text(error), "text": body}
        if self._spans and events is not None:
            event["start"] = begin
            event["end"] = end
        self._errors.append(event)
        if events is not None:
            events.append(event)

    def _enter(self, state: int) -> None:
        """Make ``state`` (an index into STATES) the current state."""
        record: State = self._states[state]
        self._state = state
        cur = self._cur = record.field
        self._scan = record.scan
        self._end_scan = record.end_scan
        self._quiet = record.quiet
        self._ws_hold = record.ws_hold
        self._runs = record.runs
        self._pump = record.pump
        self._run_check = _LONG_RUN
        self._chunk = None
        if cur >= 0:
            field: Field = self._fields[cur]
            self._field = field
            self._name = field.name
            self._dirty = field.dirty
        else:
            self._field = self._name = self._dirty = None

    def _reset(self) -> None:
        """Back to the free state: the implicit region (not yet opened) or the null region."""
        self._enter(len(self._states) - 1)
        self._caps = {}
        # (del x[:] rather than x.clear(): compiled, a direct call instead of a method lookup)
        if self._parts:
            del self._parts[:]
        if self._blocks:
            del self._blocks[:]
        if self._big:
            del self._big[:]
        self._opened = False
        self._opened_at = -1

    def _message(self) -> dict:
        self._out = _final_message(self, self._out)
        self._finalized = True
        return self._out

    # --- the open region's body ---------------------------------------------
    def _compact(self) -> None:
        """Fold the recent parts into a block, and blocks into bigger blocks: a long body is
        held in few strings (not one object per chunk) and each character is copied twice."""
        parts = self._parts
        blocks = self._blocks
        blocks.append("".join(parts))
        parts.clear()
        if len(blocks) > _MERGE_PARTS:
            self._big.append("".join(blocks))
            blocks.clear()

    def _body(self) -> str:
        """The open region's whole body, as one string (kept as the only part until the
        region closes, so a content parser that raises leaves the parser consistent)."""
        parts = self._parts
        if self._big or self._blocks:
            body = "".join([*self._big, *self._blocks, *parts])
            del self._big[:]
            del self._blocks[:]
        elif len(parts) == 1:
            return parts[0]
        else:
            body = "".join(parts)
        parts[:] = [body]
        return body

    def _keep_context(self, text: str) -> None:
        """Consumed ``text`` joins the look-behind context (its last CONTEXT characters). An
        unbounded context (CONTEXT < 0) keeps the pieces (merged: see _merge_pieces), and a scan
        reads the tail of them its state looks back on (scan.State.reach), or, when that
        is not bounded, all of them joined (_commit): a chunk costs its own length, not the
        context's, wherever the state's delimiters look back a bounded way."""
        keep = self._keep
        if keep < 0:
            _add_piece(self._ctx_more, text)
            return
        ctx = self._ctx + text
        self._ctx = ctx[-keep:]

    def _whole_context(self) -> str:
        """The unbounded context, joined (and kept so)."""
        if self._ctx_more:
            self._ctx = self._ctx + "".join(self._ctx_more)
            self._ctx_more.clear()
        return self._ctx

    # --- lasting holds -----------------------------------------------------
    def _stays_held(self, text: str) -> bool:
        """Under a lasting hold: set ``text`` aside without rescanning the hold, unless it
        may end the hold (its tail literal may be complete, text other than whitespace
        follows a whitespace run, or a character out of a run's class follows the run);
        then the hold's text is given back (see _release)."""
        tail = self._stable
        if tail is _TO_THE_END:
            pass  # (nothing ends it but the end of the stream)
        elif type(tail) is not str:
            if tail.fullmatch(text) is None:  # (a run's class: see _check_run)
                self._release()
                return False
        elif tail:
            edge = self._stable_edge + text
            if tail in edge:
                self._release()
                return False
            self._stable_edge = edge[1 - len(tail) :] if len(tail) > 1 else ""
        elif not only_ws(text):
            self._release()
            return False
        more = self._more
        more.append(text)
        if len(more) > _MERGE_PARTS:
            self._more_blocks.append("".join(more))
            more.clear()
        return True

    def _release(self) -> None:
        """End a lasting hold: the text set aside joins the held text, to be scanned."""
        if self._stable is not None:
            self._stable = None
            if self._more or self._more_blocks:
                self._held = "".join([self._held, *self._more_blocks, *self._more])
                self._more.clear()
                self._more_blocks.clear()

    def _check_run(self, buf: str, pos: int) -> None:
        """All of ``buf[pos:]`` is held (``buf`` the scan's buffer, its context before
        ``pos``): is it a run of whitespace in a state where that lasts (scan.State.ws_hold),
        a watched delimiter's match still inside its run of one character class (see
        scan.State.runs), or a text that ends in a long run of one character in a state
        whose delimiters match alike however long that run grows (scan.State.pump for
        whitespace, any_pump for other characters)? Then it lasts while only characters of
        that class (that character) follow. (Checked again only once the hold has doubled:
        linear.)"""
        n = len(buf)
        self._run_check = 2 * (n - pos)
        if self._ws_hold and only_ws(buf[pos:] if pos else buf):
            self._stable = ""  # a held whitespace run (scan.State.ws_hold)
            self._stable_edge = ""
            return
        for entry in self._runs:
            if len(entry) == 3:
                if _run_lasts(entry, buf, pos, n):
                    self._stable = entry[0]
                    self._stable_edge = ""
                    return
                continue
            alive, past, rest, run, stop = entry
            if run.fullmatch(buf, n - 1) is None or alive.fullmatch(buf, pos) is None:
                continue  # no way of matching is in the run (or the run is yet to start)
            # a way of matching that took a stop character already and is still alive
            # could complete without one more: then the scan must see what follows (a run
            # that ends the pattern has no stop character: its match grows with the run)
            i = buf.find(stop, pos) if stop else -1
            while i >= 0:
                if past.fullmatch(buf, pos, i + 1) is not None and rest.fullmatch(buf, i + 1, partial=True) is not None:
                    break
                i = buf.find(stop, i + 1)
            else:
                self._stable = run
                self._stable_edge = ""
                return
        pump = self._pump
        if pump >= 0:
            # The scan holds all of ``buf[pos:]``; with a run of ``c`` longer than the
            # state's pump bound at its end, ``buf + c...`` matches as ``buf`` does (the run
            # one longer in every way of matching: regexinfo.ws_pump, or regexinfo.any_pump
            # for a character other than whitespace), so the scan would hold it all again.
            # (The run is walked once per doubling of the hold: linear.)
            c = buf[n - 1]
            if c not in REGEX_WS:
                record: State = self._states[self._state]
                pump = record.any_pump
            if pump >= 0:
                k = n - 1
                while k > pos and buf[k - 1] == c:
                    k -= 1
                if n - k > 2 * pump + _PUMP_MARGIN:
                    self._stable = _char_run(c)
                    self._stable_edge = ""

    def _scan_buffer(self, text: str) -> tuple[str, int]:
        """``(buf, pos)``: the buffer a scan of ``text`` (all the input not consumed yet) reads,
        the context it looks back on then ``text``, and where ``text`` starts in it (as
        _commit builds it)."""
        keep = self._keep
        if keep >= 0:
            ctx = self._ctx
        else:
            reach = self._states[self._state].reach
            if reach is not None:
                ctx = _context_tail(self._ctx, self._ctx_more, reach) if reach[0] or reach[1] else ""
            else:
                ctx = self._whole_context()
        return (ctx + text if ctx else text), len(ctx)

    def _check_tail(self, buf: str, pos: int) -> None:
        """After a scan that holds ``buf[pos:]``: is the hold a match of a delimiter that runs
        to the end of the text (``HEAD[\\s\\S]*``, scan.State.tails), whose ``HEAD`` is
        complete, with no other delimiter of the state matching there? Then nothing but the
        end of the stream decides it, the same way whatever follows: the hold lasts (what is
        fed is set aside), and finalize closes it. (Both regexes match from ``pos``, a few
        characters: no rescan of the held text.)"""
        record: State = self._states[self._state]
        for head, others in record.tails:
            match = head.match(buf, pos, partial=True)
            if match is None or match.partial:
                continue
            for other in others:
                if other.match(buf, pos, partial=True) is not None:
                    break
            else:
                self._stable = _TO_THE_END
                self._stable_edge = ""
                return

    def _check_stable(self, buf: str, pos: int) -> None:
        """After a scan that holds ``buf[pos:]``: is the hold a memoized regex match that
        only its tail literal can complete? Then it lasts until that literal shows up."""
        n_abs = len(buf) + self._off
        start_abs = pos + self._off
        record: State = self._states[self._state]
        for slot, tail in record.memos:
            memo = self._memo[slot]
            if memo is not None and memo[0] == start_abs and memo[1] == n_abs:
                self._stable = tail
                self._stable_edge = buf[max(pos, len(buf) - len(tail) + 1) :] if len(tail) > 1 else ""
                return


def _add_piece(pieces: list, text: str) -> None:
    """Append ``text`` to the unbounded context's pieces; past _MERGE_PARTS of them, they
    are merged (see _merge_pieces)."""
    pieces.append(text)
    if len(pieces) > _MERGE_PARTS:
        _merge_pieces(pieces)


def _merge_pieces(pieces: list) -> None:
    """Merge each piece into the one after it while it is no longer: their lengths then fall
    from the first to the last, so they are few, and a character is copied a logarithmic
    number of times (each merge puts it in a piece at least twice as long)."""
    merged: list[str] = []
    for piece in pieces:
        while merged and len(merged[-1]) <= len(piece):
            piece = merged.pop() + piece
        merged.append(piece)
    pieces[:] = merged


#: the reverse searches that find a tail with k characters other than whitespace, by k
_TAILS: dict = {}


def _context_tail(ctx: str, pieces: list, reach: tuple) -> str:
    """The end of the unbounded context (``ctx`` then ``pieces``) that a scan of a state of
    this ``reach`` (scan.State.reach) reads: its last ``k`` characters, or the shortest end
    holding ``k`` characters other than whitespace with the whitespace run before it
    (all of the context when it is shorter). Costs about the length of that end."""
    k, ws = reach
    if not ws:
        return _last(ctx, pieces, k)[0] if k else ""
    found = _TAILS.get(k)
    if found is None:
        found = _TAILS[k] = _regex.compile(r"(?r)\s*(?:\S\s*){%d}\Z" % k)
    width = 64 if k < 32 else 2 * k
    while True:
        text, whole = _last(ctx, pieces, width)
        m = found.search(text)
        if m is not None and (m.start() > 0 or whole):
            return text[m.start() :]
        if whole:
            return text  # fewer than k such characters: all of it
        width *= 4


def _last(ctx: str, pieces: list, width: int) -> tuple[str, bool]:
    """The last ``width`` characters of ``ctx`` then ``pieces``, and whether that is all of them."""
    got = []
    size = 0
    for piece in reversed(pieces):
        got.append(piece)
        size += len(piece)
        if size >= width:
            text = "".join(reversed(got)) if len(got) > 1 else piece
            return text[size - width :], False
    if size + len(ctx) <= width:
        return ctx + "".join(reversed(got)) if got else ctx, True
    got.append(ctx[len(ctx) - (width - size) :])
    return "".join(reversed(got)), False


def _reaches(have: tuple, need: tuple | None) -> bool:
    """A context tail cut for reach ``have`` holds what a scan of reach ``need`` reads."""
    return need is not None and need[0] <= have[0] and (have[1] or not need[1])


#: what a content parser, transform or tool typing raises on content it cannot parse (and
#: the regex module on a pattern over its time bound): with on_malformed="event", the
#: region ends in region_malformed instead
_MALFORMED = (ValueError, TypeError, LookupError, TimeoutError)


def _error_text(error: BaseException) -> str:
    """``error`` as region_malformed's ``error``: its message, or its type when it has none."""
    text = str(error)
    return text if text else type(error).__name__


def _time_bound(value: Any, what: str = "regex_timeout") -> float | None:
    """A regex time bound in seconds (None: no bound), checked."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ValueError(f"{what} must be a number of seconds > 0 (or None for no bound), got {value!r}")
    return float(value)


def _cut(cls: Any, prefix: str) -> str:
    """``cls.cut_prefix(prefix)``, with a start anchor pattern over its time bound (the default
    one, ``respc.REGEX_TIMEOUT``: the prefix is cut before any parser setting applies) a
    RegexTimeout."""
    try:
        return cls.cut_prefix(prefix)
    except TimeoutError as error:
        if isinstance(error, RegexTimeout):
            raise
        raise RegexTimeout(
            f"start_anchor_pattern: the start anchor's regex ran over its time bound ({scan.REGEX_TIMEOUT} s, "
            "respc.REGEX_TIMEOUT) on this prefix; it backtracks without bound on this text: fix the pattern "
            "(respc lint names such patterns)"
        ) from error


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, got {type(value).__name__}")
    return value


def _malformed_mode(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        shown = " or ".join(repr(a) for a in allowed)
        raise ValueError(f"on_malformed must be {shown}, got {value!r}")
    return value


#: slots that the current state index (``_state``) sets, through _enter: not pickled
_DERIVED = frozenset(
    {"_fields", "_states", "_field", "_name", "_scan", "_end_scan", "_quiet", "_ws_hold", "_runs", "_pump", "_dirty", "_chunk"}
)


def _restore_parser(compiled: Any, data: dict) -> ParserBase:
    """Unpickle a parser: ``compiled`` (a CompiledTemplate, loaded or compiled in this
    process) gives its class, ``data`` its state (see ParserBase.__reduce__)."""
    parser = compiled.Parser.__new__(compiled.Parser)
    parser._restore_state(data)
    return parser


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


def _store(out: dict, name: str, join: str | None, repeats: bool, value: Any) -> None:
    """Put a closed region's value into field ``name`` of the message: joined to the
    field's earlier blocks (``join``), appended to its list (``repeats``), or set."""
    if join is not None:
        if not isinstance(value, str):
            raise ValueError(f"field {name!r}: 'join' needs every block to parse to a string, got {type(value).__name__}")
        previous = out.get(name)
        out[name] = value if previous is None else previous + join + value
    elif repeats:
        out.setdefault(name, []).append(value)
    else:
        out[name] = value


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (list, dict, str)) and not value)


def _final_message(parser: Any, out: dict) -> dict:
    """The message: ``out`` less the empty values of fields not in the defaults, once every
    required field is known to be there."""
    if parser.REQUIRED:
        malformed = {event["field"] for event in parser._errors}
        missing = [name for name in parser.REQUIRED if name not in out and name not in malformed]
        if missing:
            raise ValueError(f"required field(s) {missing} (optional: false) did not appear in the parsed output")
    for value in out.values():
        if value is None or (not value and isinstance(value, (list, dict, str))):
            break
    else:
        return out  # nothing to leave out (the common case)
    defaults = parser.DEFAULTS
    return {k: v for k, v in out.items() if k in defaults or not _is_empty(v)}


