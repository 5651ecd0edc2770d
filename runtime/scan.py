"""What generated modules may use: the records they describe their parser with, and the
helpers their scans call. Nothing else of the runtime is theirs to touch.

A generated ``Parser`` (see ``runtime/base.py`` for the protocol) describes itself with

* ``FIELDS``: one :class:`Field` per template field, in template order (a field's index
  is its position there);
* ``STATES``: one :class:`State` per region state, the fields' in the same order, then the
  free state (the implicit field, or the null region when there is none);
* ``DEFAULTS``, ``REQUIRED``, ``CONTEXT``, ``ONE_PASS``, ``MEMOS``, and the static methods
  ``new_defaults()`` and ``cut_prefix(prefix)``.

A state's ``scan(self, buf, pos, eos)`` looks at ``buf[pos:]`` with exactly the delimiters
the state watches and returns ``(start, end, action, match)`` for the delimiter to commit
now (``action``: the index of the field to open, or :data:`CLOSE`), or an ``int``: nothing
can commit, and text from that position on may still be part of a delimiter (it is held).
``end_scan`` is the same scan specialised for the end of the stream, where nothing is held.

A state's ``quiet(self, x)``, when the compiler could write one, answers for the text not
consumed yet (``x``) without scanning: where the scan would hold, when the state's marks
show that nothing can commit in ``x``; -1 when something may (then the scan runs). Tests
check that it agrees with the scan (tests/test_streaming.py).

Every helper below is property-tested against the regex engine (compiler/regexinfo.py holds
the analyses the compiler bakes into the generated calls).
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

__all__ = [
    "CLOSE",
    "Field",
    "State",
    "REGEX_WS",
    "edge_moves",
    "first_of",
    "partial_start",
    "prefix_partial",
    "quiet_cut",
    "quiet_table",
    "search_partial",
    "LONG_PARTIAL",
    "still_pending",
    "tail_in",
    "ws_run_end",
    "ws_run_start",
    "ws_tail",
    "REGEX_BUDGET",
    "REGEX_TIMEOUT",
    "BudgetSpent",
    "SHORT_BEGINNINGS",
    "timed",
    "beginnings",
    "long_beginning",
]

#: ``action`` of a scan result that closes the current region.
CLOSE = -1

#: The default time bound, in seconds, of one call of a template's regex that may backtrack
#: without bound (a repetition around something that can match in several ways, like
#: ``(a|aa)+``: compiler/regexinfo.py's may_backtrack). Parsers take their own
#: (``regex_timeout=``); the start anchor and content patterns use this one. Past it the
#: regex module raises TimeoutError (see runtime/base.py for what a parser does then).
#: Other patterns run without a clock: a clock read costs the regex module ~1.4 µs a call.
REGEX_TIMEOUT = 1.0

#: The default time budget, in seconds, of all the calls of such regexes in one parse (a
#: whole output, or a stream from its prefix to finalize): parsers take their own
#: (``regex_budget=``). Each call runs under the lesser of its bound and what is left of the
#: budget (see :func:`timed`), so a parse's regex time is bounded however the output is fed,
#: and however many calls it takes. It only counts time in those calls: a template whose
#: patterns cannot backtrack without bound pays nothing, and the budget's default is far
#: above what real outputs take (a few microseconds a call).
REGEX_BUDGET = 5.0


class BudgetSpent(TimeoutError):
    """A regex call ran over what was left of its parser's budget (regex_budget), or the
    budget was spent before it."""


def timed(parser: Any, call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, timeout=..., **kwargs)``: a call of a template regex that may backtrack
    without bound (the generated scans make every such call through here), under the
    parser's time bound of one call (``_timeout``) or what is left of its budget
    (``_left``), whichever is less; the time the call took is taken off the budget. A call
    over the budget raises :class:`BudgetSpent`, over its own bound the regex module's
    TimeoutError (see runtime/base.py for what a parser does then)."""
    bound = parser._timeout
    left = parser._left
    if left is None:
        return call(*args, timeout=bound, **kwargs)
    if left <= 0:
        raise BudgetSpent("regex budget spent")
    by_budget = bound is None or left < bound
    if by_budget:
        bound = left
    start = perf_counter()
    try:
        found = call(*args, timeout=bound, **kwargs)
    except TimeoutError:
        if by_budget:
            parser._left = 0.0
            raise BudgetSpent("regex budget spent") from None
        parser._left = left - (perf_counter() - start)
        raise
    parser._left = left - (perf_counter() - start)
    return found

#: A partial search of a text longer than this many characters (from where it starts) is
#: made with the pattern's ``_ANY`` companion (see :func:`search_partial`); a shorter one
#: with the pattern itself, whose required literal makes it quicker there.
LONG_PARTIAL = 2048


def search_partial(rx: Any, anywhere: Any, buf: str, pos: int, timeout: float | None = None) -> Any:
    """``rx.search(buf, pos, partial=True)``, in time linear in ``buf[pos:]``.

    The regex module's partial search is a search for a complete match, then, when there is
    none, a search for the leftmost partial one (a match cut by the end of the text). In that
    second search a pattern the module tries at every start (compiler/regexinfo.skips_ahead
    is false) looks for its required literal again from each start to the end of the text
    (it keeps only a complete occurrence): quadratic in the text searched (a long whitespace
    run that a character just ended, a long chunk of prose). So a long text is searched
    with ``anywhere``: ``rx``'s pattern with an alternative that never matches (``|(?!)``),
    which has the same matches, whole and partial, and no required literal. The result is
    what ``rx``'s partial search gives (tests/test_scan_partial.py)."""
    if len(buf) - pos <= LONG_PARTIAL:
        return rx.search(buf, pos, partial=True, timeout=timeout)
    return anywhere.search(buf, pos, partial=True, timeout=timeout)


class Field:
    """One template field.

    ``name``; ``finish(body, captures) -> value`` (content parser, then transform); ``join``
    (separator or None); ``repeats``; ``typed`` (the value may hold tool calls that
    ``tools`` types); ``dirty`` (its chunks are raw text that still needs parsing).
    """

    __slots__ = ("name", "finish", "join", "repeats", "typed", "dirty")

    def __init__(self, name: str, finish: Any, join: str | None, repeats: bool, typed: bool, dirty: bool):
        self.name = name
        self.finish = finish
        self.join = join
        self.repeats = repeats
        self.typed = typed
        self.dirty = dirty

    def __repr__(self) -> str:
        return _record_repr(self, ("name", "finish", "join", "repeats", "typed", "dirty"))


class State:
    """One region state.

    ``field``: the index of the field whose region it is in (the free state: the implicit
    field, or CLOSE for the null region). ``scan``, ``end_scan`` and ``quiet``: see the
    module docstring (``quiet`` may be None: always scan). ``memos``: ``(slot, tail)`` of
    each held-regex memo its scan keeps (``self._memo[slot]``), where ``tail`` is the
    literal that ends the pattern's lazy gap. ``ws_hold``: a run of whitespace held (by
    ``quiet``, or by a scan once it is long) stays held while only whitespace follows (no
    watched delimiter starts with whitespace or can match whitespace alone; a
    whitespace-led one may grow from the run: compiler/regexinfo.py's ws_lasting). ``runs``: ``(alive, past,
    rest, run, F)`` for each watched delimiter ``HEAD C+ F REST`` (compiler/regexinfo.py's
    run_splits): a held text that ``alive`` (``HEAD C*``) matches whole, and where no ``F``
    ends a ``past`` (``HEAD C* F``) with a beginning of ``rest`` after it, is a match still
    inside its run of ``C``: it stays held while what follows is all ``C`` (``run``), and
    the scan need not run. An entry ``(run, alive, stops)`` is a watched delimiter's runs of
    one class read way by way (compiler/regexinfo.py's run_holds; runtime/base.py's
    _run_lasts): a held text that ends in the class (``run``), that ``alive`` matches whole,
    and where for each way some ``(F, rest)`` of ``stops`` finds no ``F`` with ``rest``
    matching after it, stays held the same way. ``tails``: ``(head, others)`` for each watched delimiter that is
    ``HEAD`` then everything to the end of the text (``[\\s\\S]*``; compiler/regexinfo.py's
    tail_split): a held text that ``head`` matches from its start, where none of the state's
    other delimiters (``others``) matches, even partially, is that delimiter's match for good
    (more text only extends it to the end): it stays held to the end of the stream, and
    what follows is set aside unscanned. ``pump``: ``K`` when every watched delimiter
    matches alike around a run of one whitespace character longer than ``K`` however much
    longer it grows (compiler/regexinfo.py's ws_pump), -1 when not known: a held text that
    ends in such a run (twice ``K`` and more) stays held while only that character follows.
    ``any_pump``: the same ``K`` for a run of any one character (compiler/regexinfo.py's
    any_pump: a tool name or id written as a long run of one letter), -1 when not known.
    ``reach``: in a parser whose context is unbounded (CONTEXT < 0), ``(k, ws)`` when every
    watched delimiter looks back a bounded way (compiler/regexinfo.reach): the scan reads
    the context's last ``k`` characters, or (``ws``) its shortest end with ``k`` characters
    other than whitespace and the whitespace run before them; None: all of it.
    """

    __slots__ = ("field", "scan", "end_scan", "quiet", "memos", "ws_hold", "runs", "tails", "pump", "any_pump", "reach")

    def __init__(
        self,
        field: int,
        scan: Any,
        end_scan: Any,
        quiet: Any,
        memos: tuple,
        ws_hold: bool,
        runs: tuple = (),
        tails: tuple = (),
        pump: int = -1,
        any_pump: int = -1,
        reach: tuple | None = None,
    ):
        self.field = field
        self.scan = scan
        self.end_scan = end_scan
        self.quiet = quiet
        self.memos = memos
        self.ws_hold = ws_hold
        self.runs = runs
        self.tails = tails
        self.pump = pump
        self.any_pump = any_pump
        self.reach = reach

    def __repr__(self) -> str:
        return _record_repr(
            self, ("field", "scan", "end_scan", "quiet", "memos", "ws_hold", "runs", "tails", "pump", "any_pump", "reach")
        )


def _record_repr(record: Any, names: tuple[str, ...]) -> str:
    fields = ", ".join(f"{name}={getattr(record, name)!r}" for name in names)
    return f"{type(record).__name__}({fields})"


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


#: A literal's proper beginnings of up to this many characters are kept in a set (one hash
#: lookup asks whether a text is one); a longer beginning of a longer literal is asked of the
#: literal itself (``str.startswith``). So a set holds at most this many beginnings of each
#: literal, and a delimiter's tables grow with its length, not with its length squared.
SHORT_BEGINNINGS = 64


def beginnings(literals: tuple[str, ...] | list[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """``(short, long)``: the proper beginnings of ``literals`` of at most SHORT_BEGINNINGS
    characters, and the literals that have longer ones. A text is a proper beginning of one
    of the literals exactly when :func:`long_beginning` says so of these two."""
    short = frozenset(lit[:k] for lit in literals for k in range(1, min(len(lit), SHORT_BEGINNINGS + 1)))
    long = tuple(dict.fromkeys(lit for lit in literals if len(lit) > SHORT_BEGINNINGS + 1))
    return short, long


def long_beginning(text: str, long: tuple[str, ...]) -> bool:
    """True when ``text``, longer than SHORT_BEGINNINGS characters, is a proper beginning
    of one of ``long`` (the long literals of :func:`beginnings`)."""
    if len(text) <= SHORT_BEGINNINGS:
        return False  # (the short set answers for those)
    for lit in long:
        if len(lit) > len(text) and lit.startswith(text):
            return True
    return False


def quiet_table(marks: tuple[tuple[str, ...], tuple[str, ...]]) -> tuple:
    """A state's MARKS prepared for :func:`quiet_cut`: ``(marks, direct prefixes,
    whitespace-led prefixes, first characters, longest mark, any whitespace-led mark,
    long direct marks, long whitespace-led marks)``, where the prefix sets hold the proper
    beginnings of a direct / whitespace-led mark (a one-character mark has none), those of
    a long mark up to SHORT_BEGINNINGS characters (see :func:`beginnings`)."""
    direct, ws_led = marks
    every = tuple(dict.fromkeys(direct + ws_led))
    direct_prefixes, long_direct = beginnings(direct)
    ws_prefixes, long_ws = beginnings(ws_led)
    firsts = "".join(sorted({m[0] for m in every}))
    return (
        every, direct_prefixes, ws_prefixes, firsts, max(map(len, every)), bool(ws_led), long_direct, long_ws
    )


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
    every, direct, ws_led, firsts, longest, ws_lead, long_direct, long_ws = quiet
    for mark in every:
        if mark in x:
            return -1
    if x in direct or (long_direct and long_beginning(x, long_direct)):
        return 0  # the common case: a delimiter is being written from the start
    n = len(x)
    start = n - longest + 1 if n > longest else 0
    cut = n
    for c in firsts:
        i = x.find(c, start)
        while 0 <= i < cut:
            rest = x[i:]
            if rest in ws_led or (long_ws and long_beginning(rest, long_ws)):
                cut = ws_run_start(x, 0, i)  # a whitespace-led match starts before it
                break
            if rest in direct or (long_direct and long_beginning(rest, long_direct)):
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
        if _marked_elsewhere(x, marks, prefix, k):
            continue
        match = rx.match(x, 0, partial=True)
        if match is not None and match.partial:
            return True
        # (another delimiter may start with the same prefix: gpt-oss's <|channel|>)
    return False


def _marked_elsewhere(x: str, marks: tuple[str, ...], prefix: str, k: int) -> bool:
    """True when a mark other than ``prefix`` at ``k`` occurs in ``x``."""
    for mark in marks:
        at = x.find(mark)
        if at >= 0 and (at != k or mark != prefix or x.find(mark, k + 1) >= 0):
            return True
    return False


def edge_moves(rx: Any, buf: str, match: Any, timeout: float | None = None) -> bool:
    r"""True when the complete ``match`` of ``rx``, which ends before the end of ``buf``, is
    not final yet: matched again at its start with one more character (``\x00``, neither a
    newline nor the end of the text) appended to ``buf``, it moves or its named groups
    change (it leaned on ``$``, ``\Z`` or a lookahead at the end). The reference's rule;
    generated scans ask it only for patterns that can lean on the end (regexinfo), with the
    parser's ``timeout`` for a pattern that may backtrack without bound."""
    again = rx.match(buf + "\x00", match.start(), timeout=timeout)
    return again is None or again.span() != match.span() or again.groupdict() != match.groupdict()


def ws_run_end(buf: str, i: int) -> int:
    """End of the run of ``\\s`` characters that starts at ``i``."""
    n = len(buf)
    while i < n and buf[i] in REGEX_WS:
        i += 1
    return i


#: the first window :func:`first_of` searches (each next one twice as wide)
FIRST_WINDOW = 128


def first_of(buf: str, lits: tuple, start: int, top: int = -1, lead: str = "") -> int:
    """Where the first occurrence of any of ``lits`` in ``buf`` from ``start`` on starts (no
    later than ``top``, when ``top`` is not negative); -1 when there is none. At one place
    the literal listed first counts (the caller tries its regex there anyway).

    In time linear in how far that occurrence is: the literals are looked for in windows
    that double in width (FIRST_WINDOW first), so a literal that occurs only far away (or
    never: a region's ``</s>`` while the next call's ``[TOOL_CALLS]`` is near) is not looked
    for to the end of the buffer at each scan, which would make a whole parse quadratic in
    the number of calls. ``lead``: the literals' common first character when it is rare in
    text (not a letter, digit, space or common punctuation): it is found first (memchr), and
    when a literal starts there no window is searched."""
    n = len(buf)
    last = n if top < 0 or top > n else top  # the last place an occurrence may start
    if lead:
        i = buf.find(lead, start, last + 1)
        if i < 0:
            return -1
        if buf.startswith(lits, i):
            return i
        start = i + 1
    lo = start
    width = FIRST_WINDOW
    while lo <= last:
        hi = lo + width  # occurrences that start in lo..hi
        if hi > last:
            hi = last
        best = -1
        for lit in lits:
            i = buf.find(lit, lo, hi + len(lit))
            if i >= 0:
                best = i
                hi = i - 1  # another must start before it to come first
        if best >= 0:
            return best
        lo = hi + 1
        width += width
    return -1


def prefix_partial(buf: str, i: int, prefixes: tuple[str, ...]) -> bool:
    """True when ``buf[i:]`` (the end of the buffer) may still grow into one of ``prefixes``."""
    rest = buf[i:]
    for prefix in prefixes:
        if prefix.startswith(rest):
            return True
    return False


def tail_in(buf: str, lo: int, firsts: str, beginnings: frozenset[str], long: tuple[str, ...] = ()) -> int:
    """The earliest ``k >= lo`` where ``buf[k:]`` is a proper beginning of some literals,
    whose first characters are ``firsts`` (``beginnings`` and ``long``: see
    :func:`beginnings`; ``long`` is empty when no literal is long); ``len(buf)`` when
    there is none. With ``lo`` no earlier than the longest literal's length less one
    from the end, that is where the earliest tail that may still grow into one of the
    literals starts (what :func:`partial_start` finds for one literal)."""
    best = len(buf)
    for c in firsts:
        k = buf.find(c, lo, best)
        while k >= 0:
            if buf[k:] in beginnings or (long and long_beginning(buf[k:], long)):
                best = k
                break
            k = buf.find(c, k + 1, best)
    return best


#: REGEX_WS as one string, for ``str.strip``
_WS = "".join(sorted(REGEX_WS))


def ws_tail(x: str) -> int:
    """Where the trailing whitespace run of ``x`` starts (``len(x)`` when it ends otherwise):
    what a state with a whitespace-led delimiter holds when nothing else can start in ``x``."""
    n = len(x)
    if x[n - 1] in REGEX_WS:
        return ws_run_start(x, 0, n)
    return n


def only_ws(text: str) -> bool:
    """True when every character of ``text`` is ``\\s`` (REGEX_WS)."""
    return not text.strip(_WS)
