"""Static facts about template regexes that let generated code skip the regex engine.

:func:`lead` finds how every match of a pattern must begin: an optional run of
whitespace (``\\s*`` / ``\\s+``) and then one of a few known characters. With
that, a scan can ``str.find`` those characters instead of running the regex at
every position, and a stream chunk that contains none of them can be emitted
without scanning at all.

:func:`lookback` says how much consumed input a pattern may look at before the
position a search starts from (for ``^``, ``\\b``, lookbehind, ...).

Both are conservative: a pattern they do not fully understand gets ``None`` /
"keep everything", which only costs speed, never correctness.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re as _std_re

import regex

__all__ = [
    "Lead",
    "any_pump",
    "gap_split",
    "is_zero_width",
    "lazy_group_split",
    "lead",
    "leans_on_end",
    "lookback",
    "may_backtrack",
    "run_holds",
    "run_splits",
    "skips_ahead",
    "tail_split",
    "tail_splits",
    "reach",
    "regex_only",
    "word_key_head",
    "ws_guard",
    "ws_guarded",
    "ws_lasting",
    "ws_lookbehind",
    "ws_rescans",
]

_META = set(".^$*+?{}[]\\|()")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_OPTIONAL_QUANTIFIERS = ("?", "*", "{0", "{,")

#: Context kept for patterns that look back a bounded distance (``^``, ``\b``, ...).
SHORT_LOOKBACK = 16


@dataclass(frozen=True)
class Lead:
    """Every match is ``\\s*`` (when ``ws``) followed by a character in ``firsts``, and
    there by one of ``prefixes`` (strings that start with those characters)."""

    firsts: frozenset[str]
    ws: bool
    prefixes: tuple[str, ...] = ()
    #: some branch requires its whitespace (``\\s+``)
    ws_required: bool = False
    #: every branch starts with its whitespace run (so a match at the run's start and
    #: one at the character after it are the same)
    all_ws: bool = False
    #: longer strings one of which every match starts with (after its whitespace), each
    #: extending one of ``prefixes``, through groups of alternatives
    #: (``<\\|channel\\|>(?:final|commentary)``: ``<|channel|>final``, ``<|channel|>commentary``);
    #: () when they add nothing. A scan finds candidates by ``prefixes`` and tries the
    #: regex only where one of these starts.
    filters: tuple[str, ...] = ()


class _Unknown(Exception):
    pass


def _escape(pattern: str, i: int) -> tuple[str, int]:
    """The literal character of the escape at ``pattern[i] == '\\\\'``, and the index after it."""
    if i + 1 >= len(pattern):
        raise _Unknown
    c = pattern[i + 1]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], i + 2
    if c.isascii() and not c.isalnum() and c != "_":
        return c, i + 2  # escaped punctuation or space: itself
    raise _Unknown  # classes (\w, \d), anchors (\b, \A), numeric escapes, ...


def _class(pattern: str, i: int) -> tuple[set[str], int]:
    """A simple character class ``[abc\\]]`` (no ranges, no negation)."""
    j = i + 1
    chars: set[str] = set()
    if j < len(pattern) and pattern[j] == "^":
        raise _Unknown
    while j < len(pattern) and pattern[j] != "]":
        c = pattern[j]
        if c == "\\":
            c, j = _escape(pattern, j)
        elif c in "[-&~|":  # ranges, nested sets, set operations (V1)
            raise _Unknown
        else:
            j += 1
        chars.add(c)
    if j >= len(pattern) or not chars:
        raise _Unknown
    return chars, j + 1


def _structure(pattern: str, start: int = 0):
    """Yield ``(index, char, depth)`` for the characters of ``pattern`` that are syntax:
    not escaped and not inside a character class; ``depth`` is the group nesting there."""
    depth = 0
    in_class = False
    i = start
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
        else:
            if c == ")":
                depth -= 1
            yield i, c, depth
            if c == "(":
                depth += 1
        i += 1


def _group_end(pattern: str, i: int) -> int:
    """Index of the ``)`` closing the group that opens at ``pattern[i] == '('``."""
    for j, c, depth in _structure(pattern, i):
        if c == ")" and depth == 0:
            return j
    raise _Unknown


def _split_alternatives(body: str) -> list[str]:
    parts, start = [], 0
    for i, c, depth in _structure(body):
        if c == "|" and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts


def _required_firsts(pattern: str, ahead: bool = False) -> set[str]:
    """The possible first characters of a pattern whose first element is required.
    ``ahead``: a leading lookahead counts as that element (what :func:`lead` reads; the
    other analyses refuse lookarounds)."""
    if not pattern:
        raise _Unknown
    c = pattern[0]
    if c == "\\":
        first, end = _escape(pattern, 0)
        chars = {first}
    elif c == "[":
        chars, end = _class(pattern, 0)
    elif c == "(":
        close = _group_end(pattern, 0)
        inner = pattern[1:close]
        if inner.startswith("?:"):
            inner = inner[2:]
        elif inner.startswith("?P<"):
            name_end = inner.find(">")
            if name_end < 0:
                raise _Unknown
            inner = inner[name_end + 1 :]
        elif inner.startswith("?=") and ahead:
            # a leading lookahead: the match begins where its text does (zero-width, and
            # what follows is matched from the same position)
            inner = inner[2:]
        elif inner.startswith("?"):
            raise _Unknown  # other lookarounds, flags, atomic groups, ...
        chars = set()
        for branch in _split_alternatives(inner):
            chars |= _required_firsts(branch, ahead)
        end = close + 1
    elif c in _META:
        raise _Unknown
    else:
        chars, end = {c}, 1
    if pattern.startswith(_OPTIONAL_QUANTIFIERS, end):
        raise _Unknown  # the first element may be skipped
    return chars


def _optional_lead_ways(branch: str) -> list[str]:
    """``branch`` as the ways its matches can begin: a leading optional group ``(?:X)?R`` (a
    greedy ``?``) is the two ways ``(?:X)R`` and ``R`` (Kimi-K2's optional section marker before
    its call marker); any other branch is its own one way."""
    if not branch.startswith("("):
        return [branch]
    close = _group_end(branch, 0)
    after = branch[close + 1 :]
    if not after.startswith("?") or after.startswith(("??", "?+")):
        return [branch]
    inner = branch[1:close]
    if inner.startswith("?") and not inner.startswith(("?:", "?P<")):
        return [branch]  # lookarounds and the like: _required_firsts refuses them anyway
    rest = after[1:]
    if not rest:
        raise _Unknown  # the whole branch may be empty
    return [branch[: close + 1] + rest, rest]


#: the ``(?`` groups :func:`lead` reads: plain and named groups, back references, and
#: lookarounds (zero-width: a lookahead that comes first tells how a match begins, see
#: _required_firsts; any other is passed over, its text is not a match's beginning)
_READ_GROUPS = ("(?:", "(?P<", "(?P=", "(?=", "(?!", "(?<=", "(?<!")


def _unread_syntax(pattern: str) -> bool:
    """True when ``pattern`` has a ``(?`` group :func:`lead` does not read (inline flags,
    atomic groups, conditionals...). Read as plain text: an escaped ``\\(?`` counts too
    (only speed is lost)."""
    at = pattern.find("(?")
    while at >= 0:
        if not pattern.startswith(_READ_GROUPS, at):
            return True
        at = pattern.find("(?", at + 2)
    return False


def lead(pattern: str) -> Lead | None:
    """How every match of ``pattern`` begins, or None when that is not known."""
    if _unread_syntax(pattern):
        return None  # inline flags (case-insensitivity!), atomic groups, ...: stay general
    ws = ws_required = False
    all_ws = True
    firsts: set[str] = set()
    prefixes: set[str] | None = set()  # None once one branch's prefixes are not known
    try:
        for branch in _split_alternatives(pattern):
            all_ws = all_ws and branch.startswith(("\\s*", "\\s+"))
            if branch.startswith(("\\s*?", "\\s+?")):
                # the regex module reports partial matches of a lazy whitespace run that
                # cannot become matches (r"\s*?a" on " <"): leave such patterns general
                raise _Unknown
            for prefix in ("\\s*", "\\s+"):
                if branch.startswith(prefix):
                    ws, branch = True, branch[len(prefix) :]
                    ws_required = ws_required or prefix == "\\s+"
                    break
            for way in _optional_lead_ways(branch):
                firsts |= _required_firsts(way, True)
                if prefixes is not None:
                    try:
                        prefixes |= _required_prefixes(way, True)
                    except (_Unknown, IndexError):
                        prefixes = None
    except (_Unknown, IndexError):
        return None
    if ws and any(c.isspace() for c in firsts):
        return None  # keep the whitespace prefix rule simple
    if prefixes is None:
        prefixes = set(firsts)
    kept = shortest_prefixes(prefixes)
    if len(kept) > _MAX_PREFIXES or len(firsts) > _MAX_PREFIXES:
        return None  # (a scan would look for each: the general search is quicker, and compiles in less)
    return Lead(frozenset(firsts), ws, tuple(kept), ws_required, all_ws, _filters(pattern, kept))


def branch_leads(pattern: str) -> list[Lead] | None:
    """:func:`lead` of each top-level alternative of ``pattern`` (None when one is not
    known): which literal prefixes a match reaches after whitespace, and which without
    (``\\s*\\[BEGIN FINAL RESPONSE\\]|(?=<\\|end\\|>)``: the second starts at ``<``
    itself, so a partial match of it holds no whitespace before it)."""
    branches = top_alternatives(pattern)
    if branches is None:
        return None
    leads = [lead(b) for b in branches]
    return None if any(x is None for x in leads) else leads  # type: ignore[return-value]


#: at most this many long prefixes (alternatives multiply them)
_MAX_FILTERS = 16

#: at most this many prefixes (and first characters) in a Lead: generated scans look for
#: each one, so a pattern of more alternatives is left to the regex engine's own search
_MAX_PREFIXES = 64


def _every_branch(pattern: str, test: Callable[[str], bool], groups: tuple[str, ...]) -> bool:
    """``test`` holds for every top-level alternative of ``pattern``; False for a pattern
    that opens with a ``(?`` group other than ``groups`` (inline flags) or that the branch
    reader does not know."""
    if pattern.startswith("(?") and not pattern.startswith(groups):
        return False  # inline flags
    try:
        return all(test(branch) for branch in _split_alternatives(pattern))
    except (_Unknown, IndexError):
        return False


def skips_ahead(pattern: str) -> bool:
    """True when every match of ``pattern`` begins at the start of the text (``\\A``) or with
    a literal character (in a lookahead or a group too). The regex module's search then skips
    from one such place to the next, partially as well. Other patterns (a lookbehind, a
    whitespace run or a class first) are tried at every start; in a partial search the
    regex module then looks for the pattern's required literal again from each start to the
    end of the text (it keeps only a complete occurrence), which is quadratic in the text
    searched: their partial searches of long texts go through runtime/scan.search_partial.
    Conservative: False where that is not known."""
    return _every_branch(pattern, _starts_at_known, ("(?:", "(?P<", "(?="))


def _starts_at_known(branch: str) -> bool:
    """For :func:`skips_ahead`: ``branch`` begins with ``\\A`` or a required literal character."""
    if branch.startswith("\\A"):
        return True
    if branch.startswith(("(?=", "(?:", "(?P<")):
        close = _group_end(branch, 0)
        if branch.startswith("(?="):
            inner = branch[3:close]
        else:
            if branch.startswith(_OPTIONAL_QUANTIFIERS, close + 1):
                return False  # the group may be skipped
            inner = branch[3:close] if branch.startswith("(?:") else branch[branch.index(">") + 1 : close]
        return all(_starts_at_known(b) for b in _split_alternatives(inner))
    if not branch or branch[0] in _META and branch[0] != "\\":
        return False
    end = _escape(branch, 0)[1] if branch[0] == "\\" else 1
    return not branch.startswith(_OPTIONAL_QUANTIFIERS, end)


def shortest_prefixes(texts: set[str] | list[str]) -> list[str]:
    """``texts`` less every one that extends another (which adds nothing), sorted: in sorted
    order the texts that extend one come right after it, so one pass finds them."""
    kept: list[str] = []
    for text in sorted(set(texts)):
        if not (kept and text.startswith(kept[-1])):
            kept.append(text)
    return kept



#: the guard a search of a ws_guard pattern runs behind: a match starts where the search
#: does (``\G``) or where no whitespace character comes before it
WS_GUARD = "(?:\\G|(?<!\\s))"


def ws_guard(pattern: str) -> bool:
    """True when :func:`ws_guarded` puts a guard somewhere in ``pattern``."""
    return ws_guarded(pattern) is not None


def ws_guarded(pattern: str) -> str | None:
    """``pattern`` with a whitespace guard before each way of matching that starts with a
    greedy whitespace run (``\\s*``, ``[^\\S\\n]+``, ``[ \\t]*``: a class of whitespace
    only), or None when there is none to guard. A search of the result finds exactly the
    matches a search of ``pattern`` finds, and is not tried inside whitespace runs where a
    guard applies (which would read the run to its end from every position inside it:
    quadratic in the run's length).

    The guard of a run of class ``C`` is ``(?:\\G|(?<!C))`` (:data:`WS_GUARD` for ``\\s``):
    a match starts where the search does or where no ``C`` comes before it. It is sound
    because a way of matching ``C*X`` at ``p`` after a ``C`` is also one at ``p - 1`` (the
    greedy run takes one more), so the leftmost match never starts where the guard
    rejects. Guards go, each alternative on its own (alternatives that start otherwise,
    after a lookbehind ``(?<=...\\n)[ \\t]*``, with a literal, keep no guard):

    * before a branch (or a group's alternative) that starts with such a run;
    * into a leading optional group ``(?:A|B)?`` followed by such a run: as a last,
      empty alternative ``(?:A|B|GUARD)`` (the group's own alternatives guarded the same
      way where they start with a run; the way around the group then runs behind the
      guard). Conservative: inline flags, lazy or possessive runs, repeated groups are
      left as they are."""
    if pattern.startswith("(?") and not pattern.startswith(("(?:", "(?<=", "(?<!", "(?P<", "(?=", "(?!")):
        return None  # inline flags
    try:
        leads = [_ws_start(branch) for branch in _split_alternatives(pattern)]
        if all(found is not None for found in leads) and any(leads):
            # every alternative starts with a \\s run or cannot start after whitespace: one
            # guard before them all
            return f"{WS_GUARD}(?:{pattern})"
        text, _ = _guard_alternatives(pattern)
    except (_Unknown, IndexError):
        return None
    return None if text == pattern else text


def _ws_start(branch: str) -> bool | None:
    """For :func:`ws_guarded` (one guard for all): True when ``branch`` starts with a greedy whitespace run (in
    every way of matching it, or some); False when no match of it can start right after
    whitespace; None when neither is known."""
    if branch.startswith(("\\s*", "\\s+")):
        return None if branch[3:4] in ("?", "+", "{") else True
    if branch.startswith(("\\A", "^")):
        return False
    if branch.startswith("(?<="):
        close = _group_end(branch, 0)
        for alternative in _split_alternatives(branch[4:close]):
            if not _ends_in_non_ws(alternative):
                return None
        return False
    if branch.startswith("(?:"):
        close = _group_end(branch, 0)
        if branch[close + 1 : close + 2] in ("?", "*", "+", "{"):
            return None  # the group may be skipped (or repeated)
        inner = [_ws_start(b) for b in _split_alternatives(branch[3:close])]
        if any(found is None for found in inner):
            return None
        return any(inner)
    return None


def _ends_in_non_ws(text: str) -> bool:
    """True when ``text`` (a lookbehind's branch) ends in one literal character that is not whitespace."""
    if not text:
        return False
    k = len(text) - 1
    slashes = len(text[:k]) - len(text[:k].rstrip("\\"))
    c = text[k]
    if slashes % 2:  # an escape: punctuation stands for itself (\s, \w, ... are classes)
        return c.isascii() and not c.isalnum() and c != "_" and not c.isspace()
    return c not in _META and not c.isspace()


#: the whitespace classes a guard is built for (a leading greedy run of one of them)
_WS_RUN = regex.compile(r"(\\s|\[(?:\^\\S)?(?:\\[ntrfv]| )+\]| |\\[ntrfv])[*+](?![?+])")


def _ws_guard_for(cls: str) -> str:
    """The guard of a run of ``cls`` (see :func:`ws_guarded`)."""
    return WS_GUARD if cls == "\\s" else f"(?:\\G|(?<!{cls}))"


def _guard_alternatives(body: str) -> tuple[str, bool]:
    """:func:`ws_guarded` of each alternative of ``body``; and whether some way of matching
    may still start with a run that takes whitespace, unguarded (:func:`ws_rescans`)."""
    parts, rescans = [], False
    for branch in _split_alternatives(body):
        text, left = _guard_sequence(branch)
        parts.append(text)
        rescans = rescans or left
    return "|".join(parts), rescans


def _guard_sequence(seq: str) -> tuple[str, bool]:
    """``seq`` (one alternative) with guards at its start (see :func:`ws_guarded`), and
    whether a way of matching it may still start with an unguarded whitespace run."""
    run = _WS_RUN.match(seq)
    if run is not None:
        return _ws_guard_for(run.group(1)) + seq, False
    if not seq.startswith(("(?:", "(?P<")):
        return seq, _may_start_with_ws_run(seq)
    close = _group_end(seq, 0)
    head = seq[: seq.index(">") + 1] if seq.startswith("(?P<") else "(?:"
    inner, after = seq[len(head) : close], seq[close + 1 :]
    if after[:1] in ("*", "+", "{") or after.startswith(("??", "?+")):
        return seq, _may_start_with_ws_run(seq)  # repeated, lazy or possessive: as it is
    if any(not alt for alt in _split_alternatives(inner)):
        return seq, _may_start_with_ws_run(seq)  # an empty alternative: as it is
    text, rescans = _guard_alternatives(inner)
    if not after.startswith("?"):
        return f"{head}{text}){after}", rescans
    rest = after[1:]
    run = _WS_RUN.match(rest)
    if run is not None:
        # the way around the group runs behind the guard of the run that follows it
        return f"{head}{text}|{_ws_guard_for(run.group(1))}){rest}", rescans
    return f"{head}{text})?{rest}", rescans or _may_start_with_ws_run(rest)


def ws_lasting(pattern: str) -> bool:
    """True when no match of ``pattern`` is only whitespace (lookaheads included), and a
    partial match that has read only whitespace stays partial while whitespace follows:
    every branch is ``\\A``/``^`` or a lookbehind (optional), then greedy ``\\s*``/``\\s+``
    (optional), then an element that needs a character other than whitespace. A held run
    of whitespace then stays held, unchanged, while only whitespace follows (runtime/base.py's
    lasting holds). Conservative: False where that is not known."""
    return _every_branch(pattern, _lasting_branch, ("(?:", "(?<=", "(?P<", "(?="))


def _lasting_branch(branch: str) -> bool:
    if branch.startswith(("\\A", "^")):
        branch = branch[2:] if branch.startswith("\\A") else branch[1:]
    elif branch.startswith("(?<="):
        branch = branch[_group_end(branch, 0) + 1 :]
    if branch.startswith(("\\s*", "\\s+")):
        if branch[3:4] in ("?", "+", "{"):
            return False
        branch = branch[3:]
    return _needs_non_ws(branch)


def _needs_non_ws(text: str) -> bool:
    """True when every match of ``text`` reads (consumes, or sees in a lookahead) a
    character other than whitespace, and only greedy unbounded whitespace runs before it."""
    if not text:
        return False
    c = text[0]
    if c == "(":
        close = _group_end(text, 0)
        inner = text[1:close]
        after = text[close + 1 :]
        if inner.startswith("?="):
            return all(_lasting_branch(b) for b in _split_alternatives(inner[2:])) or _needs_non_ws(after)
        if inner.startswith("?P<"):
            inner = inner[inner.find(">") + 1 :]
        elif inner.startswith("?:"):
            inner = inner[2:]
        else:
            return False  # other lookarounds, atomic groups, flags
        if after[:1] in ("?", "*"):
            rest = after[1:]
        elif after[:1] == "+":
            rest = after[1:]
            if rest.startswith(("?", "+")):
                return False
            return all(_lasting_branch(b + rest) for b in _split_alternatives(inner))
        elif after.startswith("{"):
            return False
        else:  # (A|B)C: AC|BC
            return all(_lasting_branch(b + after) for b in _split_alternatives(inner))
        if rest.startswith(("?", "+")):
            return False  # lazy or possessive group
        # the group is optional: each way through it, and the way around it
        return all(_lasting_branch(b + rest) for b in _split_alternatives(inner)) and _lasting_inner(rest)
    if c == "\\":
        char, end = _escape(text, 0)
    elif c in _META:
        return False
    else:
        char, end = c, 1
    if char.isspace():
        return False
    return text[end : end + 1] not in ("?", "*") and not text.startswith(("{0", "{,"), end)


def _lasting_inner(text: str) -> bool:
    """A group's branch (or what follows an optional group): greedy whitespace, then an element that needs a non-whitespace character."""
    if text.startswith(("\\s*", "\\s+")):
        if text[3:4] in ("?", "+", "{"):
            return False
        text = text[3:]
    return _needs_non_ws(text)

def ws_rescans(pattern: str) -> bool:
    """True when a search of ``pattern`` may read a whitespace run from every position inside
    it (quadratic in the run's length) and the scans cannot avoid it: the pattern has no
    known lead (so it is searched, see :func:`lead`) and some way of matching it may start
    with a repeated element that matches whitespace where :func:`ws_guarded` puts no
    guard. What ``respc lint`` reports."""
    if lead(pattern) is not None:
        return False  # tried only where its lead starts, from the whitespace run's start
    if pattern.startswith("(?") and not pattern.startswith(("(?:", "(?<=", "(?<!", "(?P<", "(?=", "(?!")):
        try:
            return any(_may_start_with_ws_run(branch) for branch in _split_alternatives(pattern))
        except (_Unknown, IndexError):
            return False
    try:
        return _guard_alternatives(pattern)[1]
    except (_Unknown, IndexError):
        return False


#: elements that match whitespace (among others)
_WS_ATOMS = ("\\s", ".", "\\W", "\\D", "\\S\\s", "[\\s\\S]", "\\n", " ", "\\t", "\\r")


def _may_start_with_ws_run(branch: str) -> bool:
    """True when ``branch`` may start with a repeated element that matches whitespace."""
    while branch.startswith(("(?:", "(?P<", "(")):
        if branch.startswith("(?P<"):
            branch = branch[branch.find(">") + 1 :]
        elif branch.startswith("(?:"):
            branch = branch[3:]
        elif branch.startswith("(?"):
            return False  # lookarounds, flags: not a run of characters
        else:
            branch = branch[1:]
    if branch.startswith("["):
        close = branch.find("]", 2)
        if close < 0:
            return False
        atom = branch[: close + 1]
        matches_ws = atom.startswith("[^") and "\\s" not in atom and " " not in atom or any(
            w in atom for w in ("\\s", " ", "\\n", "\\t")
        )
    else:
        atom = next((w for w in _WS_ATOMS if branch.startswith(w)), "")
        matches_ws = bool(atom)
    return matches_ws and branch[len(atom) : len(atom) + 1] in ("*", "+", "{")

def _filters(pattern: str, prefixes: list[str]) -> tuple[str, ...]:
    """Lead.filters: the long prefixes of ``pattern``'s branches, when each extends one of
    ``prefixes`` and some is longer; else ()."""
    found: set[str] = set()
    try:
        for branch in _split_alternatives(pattern):
            for ws in ("\\s*", "\\s+"):
                if branch.startswith(ws):
                    branch = branch[len(ws) :]
                    break
            found |= _long_prefixes(branch)
            if len(found) > _MAX_FILTERS:
                return ()
    except (_Unknown, IndexError):
        return ()
    found = set(shortest_prefixes(found))
    if not all(any(f.startswith(p) for p in prefixes) for f in found) or found <= set(prefixes):
        return ()
    return tuple(sorted(found))


def _long_prefixes(pattern: str) -> set[str]:
    """Strings one of which every match of ``pattern`` starts with: its leading required
    literal characters, then, through a required group, each alternative's own long
    prefixes followed by what comes after the group. ``""`` when nothing is known."""
    return _prefixes(pattern, through=True)


def _required_prefixes(pattern: str, ahead: bool = False) -> set[str]:
    """Strings one of which every match of ``pattern`` starts with (its leading required
    literal characters; alternatives of a leading group each give theirs). Falls back to
    the first characters where nothing longer is known. ``ahead``: read a leading
    lookahead (see :func:`_required_firsts`)."""
    return _prefixes(pattern, through=False, ahead=ahead)


def _prefixes(pattern: str, through: bool, ahead: bool = False) -> set[str]:
    """The leading required literal characters of ``pattern``'s matches, and where a group
    comes first, its alternatives' own. ``through``: also a group after literal characters,
    each alternative followed by what comes after the group (Lead.filters; ``""`` when
    nothing is known); else only a leading group, and the first characters when nothing
    longer is known (Lead.prefixes)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "(" and (through or not out):
            close = _group_end(pattern, i)
            after = pattern[close + 1 :]
            if after.startswith(_OPTIONAL_QUANTIFIERS):
                break
            inner = pattern[i + 1 : close]
            if inner.startswith("?:"):
                inner = inner[2:]
            elif inner.startswith("?P<"):
                inner = inner[inner.find(">") + 1 :]
            elif inner.startswith("?=") and ahead and not through:
                # a leading lookahead (``out`` is empty here): every match starts with one
                # of its text's prefixes (zero-width: nothing after it is read)
                found = set()
                for branch in _split_alternatives(inner[2:]):
                    found |= _prefixes(branch, False, ahead)
                return found
            elif inner.startswith("?"):
                break  # lookarounds, back references, ...
            found: set[str] = set()
            if not through:
                for branch in _split_alternatives(inner):
                    found |= _prefixes(branch, False, ahead)
                return found
            if after[:1] in ("+", "{"):
                after = ""  # the group may repeat: what follows its first time is not known
            head = "".join(out)
            for branch in _split_alternatives(inner):
                found |= {head + rest for rest in _prefixes(branch + after, True)}
                if len(found) > _MAX_FILTERS:
                    raise _Unknown
            return found
        if c == "\\":
            try:
                char, end = _escape(pattern, i)
            except _Unknown:
                break
        elif c in _META:
            break
        else:
            char, end = c, i + 1
        if pattern.startswith(_OPTIONAL_QUANTIFIERS, end):
            break  # this character may be absent
        out.append(char)
        if end < len(pattern) and pattern[end] in "+{":
            break  # required, but what follows may repeat it
        i = end
    if out or through:
        return {"".join(out)}
    return set(_required_firsts(pattern, ahead))


#: A pattern made only of these (and lookarounds) can only ever match empty.
_ZERO_WIDTH_TOKENS = ("^", "$", "\\A", "\\Z", "\\z", "\\b", "\\B", "\\G", "\\m", "\\M")


def is_zero_width(pattern: str) -> bool:
    """True when ``pattern`` is only anchors and lookarounds, so every match is empty."""
    i = 0
    if not pattern:
        return False
    while i < len(pattern):
        if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            try:
                i = _group_end(pattern, i) + 1
            except _Unknown:
                return False
            continue
        for token in _ZERO_WIDTH_TOKENS:
            if pattern.startswith(token, i):
                i += len(token)
                break
        else:
            return False
    return True


def lookback(pattern: str) -> int:
    """Characters before the search start that a match may depend on (-1: unbounded)."""
    if "(?<=" in pattern or "(?<!" in pattern:
        return -1
    i = 0
    needs = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            if pattern[i + 1] in "AbBmMGKX":
                needs = SHORT_LOOKBACK
            i += 2
            continue
        if c == "(" and pattern.startswith("(?", i) and not pattern.startswith("(?P", i):
            j = i + 2
            while j < len(pattern) and (pattern[j].isalpha() or pattern[j] in "-^"):
                if pattern[j] in "rw":
                    return -1  # reverse searching, Unicode word boundaries
                j += 1
            if j > i + 2:
                needs = SHORT_LOOKBACK  # inline flags: (?m) makes ^ look back, among others
        elif c == "^" and not (i > 0 and pattern[i - 1] == "["):
            needs = SHORT_LOOKBACK
        i += 1
    return needs


def reach(pattern: str) -> tuple[int, bool] | None:
    """How much consumed text a match of ``pattern`` found from a search start may look back
    on: ``(k, False)``, its last ``k`` characters; ``(k, True)``, the shortest tail holding
    ``k`` characters other than whitespace, with the whitespace run before it (a lookbehind
    of fixed parts and whitespace runs: ``(?<=\\}\\s*\\})`` is ``(2, True)``); None: all
    of it (a lookbehind over text of any length, or one not understood). :func:`lookback`
    for a pattern with no lookbehind. A lookbehind reads back from where it is tried, at or
    after the search start: what it reads before the start is the end of what it may read.
    A tail of the consumed text is then as good as all of it for the pattern, except that
    ``\\A`` and ``^`` must not see the tail's start as the text's: a lookbehind that holds
    one is not bounded, and :func:`lookback` keeps a short context for them elsewhere."""
    if "(?<=" not in pattern and "(?<!" not in pattern:
        found = lookback(pattern)
        return None if found < 0 else (found, False)
    found = _sre_tree(pattern)
    if found is None:
        return None
    tree, sre = found
    widths: list[tuple[int, bool]] = []
    others = [False]  # an anchor outside the lookbehinds (\b, ^, \A, ...): a short context

    def walk(items) -> bool:
        for op, arg in items:
            if op in (sre.ASSERT, sre.ASSERT_NOT):
                direction, body = arg
                if direction < 0:
                    width = _behind_width(list(body), sre)
                    if width is None:
                        return False
                    widths.append(width)
                elif not walk(body):
                    return False
            elif op is sre.AT:
                others[0] = True
            elif op is sre.SUBPATTERN:
                if not walk(arg[-1]):
                    return False
            elif op is sre.BRANCH:
                if not all(walk(alt) for alt in arg[1]):
                    return False
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
                if not walk(arg[2]):
                    return False
            elif op is getattr(sre, "ATOMIC_GROUP", None):
                if not walk(arg):
                    return False
            elif op in (sre.GROUPREF, getattr(sre, "GROUPREF_EXISTS", None)):
                return False
        return True

    if not walk(list(tree)):
        return None
    k = max((w for w, _ in widths), default=0)
    if others[0]:
        k = max(k, SHORT_LOOKBACK)
    return k, any(ws for _, ws in widths)


def _behind_width(items: list, sre: Any) -> tuple[int, bool] | None:
    """For :func:`reach`: ``(k, ws)`` when every way of matching ``items`` (a lookbehind's
    body) is at most ``k`` characters plus (``ws``) runs of whitespace; None otherwise (any
    other unbounded repeat, an anchor, a back reference or a nested lookbehind)."""
    total, ws = 0, False
    for op, arg in items:
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            total += 1
        elif op is sre.SUBPATTERN:
            inner = _behind_width(list(arg[-1]), sre)
            if inner is None:
                return None
            total, ws = total + inner[0], ws or inner[1]
        elif op is sre.BRANCH:
            alts = [_behind_width(list(alt), sre) for alt in arg[1]]
            if any(alt is None for alt in alts):
                return None
            total, ws = total + max(a[0] for a in alts), ws or any(a[1] for a in alts)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, body = arg
            if high == sre.MAXREPEAT:
                if not _only_ws(list(body), sre):
                    return None
                ws = True
            else:
                inner = _behind_width(list(body), sre)
                if inner is None:
                    return None
                total, ws = total + high * inner[0], ws or inner[1]
        elif op is sre.ASSERT and arg[0] > 0 or op is sre.ASSERT_NOT and arg[0] > 0:
            continue  # a lookahead reads forward
        else:
            return None  # anchors (\A would see a tail's start), nested lookbehinds, ...
    return total, ws


def _only_ws(items: list, sre: Any) -> bool:
    """For :func:`_behind_width`: every character ``items`` (a repeat's body) takes is
    whitespace (the regex module's ``\\s``, runtime.scan.REGEX_WS)."""
    for op, arg in items:
        if op is sre.LITERAL:
            if chr(arg) not in _WS_CHARS:
                return False
        elif op is sre.IN:
            if arg and arg[0][0] is sre.NEGATE:
                # [^\S...]: whitespace less some characters
                if not any(a == (sre.CATEGORY, sre.CATEGORY_NOT_SPACE) for a in arg[1:]):
                    return False
            elif not all(a == (sre.CATEGORY, sre.CATEGORY_SPACE) or (a[0] is sre.LITERAL and chr(a[1]) in _WS_CHARS) for a in arg):
                return False
        elif op is sre.SUBPATTERN:
            if not _only_ws(list(arg[-1]), sre):
                return False
        elif op is sre.BRANCH:
            if not all(_only_ws(list(alt), sre) for alt in arg[1]):
                return False
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            if not _only_ws(list(arg[2]), sre):
                return False
        else:
            return False
    return True


def _literal_text(pattern: str) -> str | None:
    """The text a pattern of plain characters and escaped punctuation matches, or None."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            try:
                c, i = _escape(pattern, i)
            except _Unknown:
                return None
            out.append(c)
        elif c in _META:
            return None
        else:
            out.append(c)
            i += 1
    return "".join(out) or None


def gap_split(pattern: str) -> tuple[str, str] | None:
    """Split ``A.*?B`` (or ``A.*B``) with a literal ``B`` into ``(A, B's text)``, or a
    pattern that ends in a lookahead over such a gap, ``P(?=H.*T)``, into ``(P(?=H), X)``
    (see :func:`_lookahead_gap_split`).

    With DOTALL, once ``A`` has matched, the gap absorbs any text, so a partial match
    of the whole pattern stays partial until ``B`` appears: a held match need not be
    searched again until then.
    """
    if "(?" in pattern.replace("(?:", "").replace("(?P<", ""):
        return _lookahead_gap_split(pattern)
    split = None
    for i, c, depth in _structure(pattern):
        if depth != 0:
            continue
        if c == "|":
            return None  # a top-level alternative would not need A or B
        if c == "." and pattern.startswith(".*", i) and (split is None or i >= split[1]):
            split = (i, i + (3 if pattern.startswith(".*?", i) else 2))
    if split is None or split[0] == 0:
        return None
    head, tail = pattern[: split[0]], pattern[split[1] :]
    text = _literal_text(tail)
    if text is None:
        return None
    return head, text


#: what may look past a match or at the end of the text (in the parts of a lookahead gap)
_GAP_UNSAFE = ("(?=", "(?!", "(?<=", "(?<!", "(?P=", "(?(", "\\b", "\\B", "\\Z", "\\z", "\\G", "$")


def _lookahead_gap_split(pattern: str) -> tuple[str, str] | None:
    r"""``(P(?=H), X)`` for a pattern ``P(?=H.*T)`` (or ``.*?``) that ends in a lookahead over
    a gap, with ``X`` a literal every match of ``T`` that does not end at ``\Z`` ends with: the
    longest common end of ``T``'s last literals (``T`` is a literal, or ``Y(?:L1|...|Lk)`` whose
    alternatives are literals or ``\Z``). None otherwise (and for a pattern with other
    lookarounds, end anchors, word boundaries or back references).

    The call-list opens of llama3.2-pythonic, llama4 and lfm2
    (``(?:\A\s*|<\|python_tag\|>\s*)(?=\[\s*NAME\s*\(.*\)\s*\]\s*(?:<\|eot_id\|>|<\|eom_id\|>|\Z))``):
    once ``P(?=H)`` has matched at a position, the gap absorbs any text, so the pattern
    matches there partially whatever follows, and completely only once some match of
    ``T`` follows ``H``. A new match of ``T`` must end in the new text (``T`` reads nothing
    past its match), so, before the end of the stream, with ``X`` (``_id|>``) at its end;
    one that ends at ``\Z`` (the text's end, while streaming) leans on that end, and the
    rule for such matches (the text with one more character, ``\x00``, must give it again:
    scan.edge_moves) rejects it when ``Y`` cannot end in ``\x00``, which is required. So a
    held match stays held, the same, until ``X`` shows up: the memo of :func:`gap_split`.
    """
    if regex_only(pattern) or not pattern.endswith(")"):
        return None
    start = None
    for i, c, depth in _structure(pattern):
        if depth == 0 and c == "|":
            return None
        if depth == 0 and c == "(":
            start = i
    if start is None or not pattern.startswith("(?=", start) or _group_end(pattern, start) != len(pattern) - 1:
        return None
    before, body = pattern[:start], pattern[start + 3 : -1]
    if "(?" in (before + body).replace("(?:", "").replace("(?P<", ""):
        return None  # other lookarounds, inline flags ((?i) would match what str.find misses), ...
    split = None
    for i, c, depth in _structure(body):
        if depth == 0 and c == "|":
            return None
        if c == "." and depth == 0 and body.startswith(".*", i):
            split = (i, i + (3 if body.startswith(".*?", i) else 2))
    if split is None or not before:
        return None
    head, tail = body[: split[0]], body[split[1] :]
    if any(token in part for part in (before, head) for token in _GAP_UNSAFE):
        return None
    if regex.search(r"(?<!\\)(?:\\\\)*\\[1-9]", pattern):
        return None
    ends = _literal_ends(tail)
    if not ends:
        return None
    common = ends[0]
    for end in ends[1:]:
        while not end.endswith(common):
            common = common[1:]
    if not common:
        return None
    return f"{before}(?={head})" if head else before, common


def _literal_ends(tail: str) -> list[str]:
    r"""The literals a match of ``tail`` that does not end at ``\Z`` ends with: ``tail`` a
    literal, or ``Y(?:L1|...|Lk)`` with each ``Li`` a literal or ``\Z``, ``Y`` reading nothing
    past its match and, when some ``Li`` is ``\Z``, unable to end in ``\x00`` (nor match
    empty). [] when it is none of those."""
    text = _literal_text(tail)
    if text is not None:
        return [text]
    if not tail.endswith(")"):
        return []
    start = None
    for i, c, depth in _structure(tail):
        if depth == 0 and c == "(":
            start = i
    if start is None or not tail.startswith("(?:", start) or _group_end(tail, start) != len(tail) - 1:
        return []
    lead_in = tail[:start]
    if any(token in lead_in for token in _GAP_UNSAFE):
        return []
    ends, at_end = [], False
    try:
        for alternative in _split_alternatives(tail[start + 3 : -1]):
            if alternative == "\\Z":
                at_end = True
                continue
            text = _literal_text(alternative)
            if text is None:
                return []
            ends.append(text)
    except (_Unknown, IndexError):
        return []
    if at_end and _may_end_in_nul(lead_in):
        return []
    return ends


def _may_end_in_nul(pattern: str) -> bool:
    """Can a match of ``pattern`` end in ``\\x00``, or be empty? (Conservative: True when
    the pattern is not understood.)"""
    parsed = _sre_tree(pattern) if pattern else None
    if parsed is None:
        return True
    tree, sre = parsed

    def may_end(items) -> bool | None:
        """True: some match ends in ``\\x00``; False: none does, and none is empty; None:
        none does, but one is empty (what comes before decides)."""
        for op, arg in reversed(list(items)):
            if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
                return _matches_nul(op, arg, sre)
            if op is sre.SUBPATTERN:
                found = may_end(arg[-1])
            elif op is sre.BRANCH:
                outcomes = [may_end(alt) for alt in arg[1]]
                found = True if True in outcomes else (None if None in outcomes else False)
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
                found = may_end(arg[2])
                if found is False and arg[0] == 0:
                    found = None
            else:
                return True  # (anchors and lookarounds are refused before this is asked)
            if found is not None:
                return found
        return None

    return may_end(tree) is not False


_KEY_GROUP = "(?P<key>"
_WORD = regex.compile(r"\w")  # one character \w matches


def _atoms(pattern: str) -> list[str] | None:
    """The characters of a pattern of plain characters and escaped punctuation, one per
    atom (so a trailing ``?`` can be told to apply to the last one), or None."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            try:
                c, i = _escape(pattern, i)
            except _Unknown:
                return None
        elif c in _META:
            return None
        else:
            i += 1
        out.append(c)
    return out


def word_key_head(head: str) -> tuple[str, str, bool, str, str] | None:
    """Split a tag head ``OPEN(?P<key>K+)CLOSE`` (then optionally ``\\s*``, or one literal
    character made optional, such as ``\\n?``), OPEN and CLOSE literal, into ``(OPEN's
    text, CLOSE's text, has \\s*, STOPS, the optional character or "")``. ``K`` is ``\\w``
    (STOPS "") or a negated set of literal characters ``[^...]`` (STOPS: those characters),
    and CLOSE must start with a character K does not match; None for another shape.

    Then a match at a position where OPEN occurs has the whole run of K characters after
    it as its key, and CLOSE is the first occurrence of CLOSE after OPEN: the head can be
    found with ``str.find``, the key checked as a run of ASCII word characters (other keys
    are asked of the regex) or as text free of STOPS (see ``runtime/content.py`` and the
    property test in tests/test_regexinfo.py). Qwen3-Coder's ``<parameter=(?P<key>[^>\\n]+)>\\n?``
    is one.
    """
    at = head.find(_KEY_GROUP)
    if at <= 0:
        return None
    body_start = at + len(_KEY_GROUP)
    if head.startswith("\\w+)", body_start):
        stops, after = "", body_start + len("\\w+)")
    elif head.startswith("[^", body_start):
        try:
            chars, j = _class(head, body_start + 1)  # (the set after its ^)
        except _Unknown:
            return None
        if not head.startswith("+)", j):
            return None
        stops, after = "".join(sorted(chars)), j + 2
    else:
        return None
    if "(?" in head[:at] + head[after:]:
        return None  # inline flags, other groups: not handled
    rest = head[after:]
    ws = rest.endswith("\\s*") and not rest.endswith("\\\\s*")
    if ws:
        rest = rest[: -len("\\s*")]
    # a last "?" makes the character before it optional (unless that "?" is escaped: an
    # odd run of backslashes before it)
    optional = rest.endswith("?") and (len(rest) - len(rest[:-1].rstrip("\\")) - 1) % 2 == 0
    if optional and ws:
        return None
    opening, atoms = _literal_text(head[:at]), _atoms(rest[:-1] if optional else rest)
    if opening is None or not atoms or len(atoms) < 1 + optional:
        return None
    closing = "".join(atoms[:-1] if optional else atoms)
    if _WORD.match(closing[0]) if not stops else closing[0] not in stops:
        return None
    return opening, closing, ws, stops, atoms[-1] if optional else ""


def lazy_group_split(pattern: str, group: str = "value") -> tuple | None:
    """Split ``HEAD(?P<group>.*?)\\s*TAIL`` (``\\s*`` optional, ``TAIL`` literal) into
    ``(HEAD, has \\s*, TAIL's text)``, and ``HEAD(?P<group>.*?)C?TAIL`` (one optional
    character, such as ``\\n?``) into ``(HEAD, False, TAIL's text, C)``; None when the
    pattern has another shape.

    With DOTALL, a match of the whole pattern at a position is HEAD's own first match
    there, provided ``TAIL`` occurs at or after HEAD's end; the group then runs to the
    first such occurrence, less the whitespace run before it (not past HEAD's end).
    So matches can be found by searching HEAD and then ``TAIL`` with ``str.find``,
    instead of trying the tail at every character of the group (see
    ``runtime/content.py``, and the property tests in tests/test_regexinfo.py).
    """
    if "(?" in pattern.replace("(?:", "").replace("(?P<", ""):
        return None  # inline flags, lookarounds, backreferences to the group: not handled
    gap = f"(?P<{group}>.*?)"
    for i, c, depth in _structure(pattern):
        if depth == 0 and c == "|":
            return None
    at = None
    for i, c, depth in _structure(pattern):
        if depth == 0 and c == "(" and pattern.startswith(gap, i):
            at = i
            break
    if at is None:
        return None
    head, tail = pattern[:at], pattern[at + len(gap) :]
    if f"(?P<{group}>" in head:
        return None
    ws = tail.startswith("\\s*") and not tail.startswith("\\s*?") and not tail.startswith("\\s*+")
    if not ws:
        # an optional character before TAIL (``\n?TAIL``): the group ends before it when
        # it is there
        try:
            char, after = _escape(tail, 0) if tail.startswith("\\") else (tail[:1], 1)
        except _Unknown:
            char, after = "", 0
        if (
            char
            and (tail.startswith("\\") or char not in _META)
            and tail.startswith("?", after)
            and not tail.startswith(("??", "?+"), after)
        ):
            text = _literal_text(tail[after + 1 :])
            return None if not text else (head, False, text, char)
    text = _literal_text(tail[3:] if ws else tail)
    if text is None:
        return None
    return head, ws, text


# --- constructs only the regex module knows ---------------------------------------
#: A ``{`` that does not open a repetition ``{m}``, ``{m,}``, ``{,n}``, ``{m,n}``: the
#: regex module's fuzzy constraints (``{e<=1}``) among others.
_NOT_REPEAT_BRACE = regex.compile(r"(?<!\\)(?:\\\\)*\{(?!\s*\d*\s*(?:,\s*\d*\s*)?\})")


def regex_only(pattern: str) -> bool:
    """True when ``pattern`` may use syntax that only the ``regex`` module gives a meaning:
    fuzzy constraints, POSIX classes, branch reset, ``\\p``, ``\\m``, named lists, recursion,
    version flags, ... -- anything Python's own parser (``re``) does not read the same way.

    The analyses of this module read patterns as ``re`` would; for such a pattern they
    answer "not known", so generated code takes the general path, which asks the regex
    module itself. Conservative: a literal ``{`` that is not a repetition counts too.
    """
    if _NOT_REPEAT_BRACE.search(pattern) or "[:" in pattern:
        return True
    sre_parse, _ = sre_modules()
    try:
        sre_parse.parse(_unique_group_names(pattern), 16)  # DOTALL, as templates are compiled
    except Exception:  # noqa: BLE001 - re does not read it: regex-module syntax
        return True
    return False


def sre_modules() -> tuple[Any, Any]:
    """Python's own regex parser and its opcode constants: ``re._parser`` and
    ``re._constants`` on 3.11+, ``sre_parse`` and ``sre_constants`` on 3.10. Their trees
    differ between versions in places (3.13 reads ``(?!)`` as ``FAILURE``): code walking
    them handles each version's form."""
    try:
        import re._constants as sre
        import re._parser as sre_parse
    except ImportError:  # Python 3.10
        import sre_constants as sre  # type: ignore[no-redef]
        import sre_parse  # type: ignore[no-redef]
    return sre_parse, sre


_GROUP_NAME = regex.compile(r"(?<!\\)((?:\\\\)*)\(\?P<(\w+)>")


def _unique_group_names(pattern: str) -> str:
    """``pattern`` with a repeated group name (which the regex module allows, as in
    ``(?:a(?P<n>x)|b(?P<n>y))``, and ``re`` does not) made unique; a back reference
    ``(?P=n)`` then names the last group of that name written before it (the one it refers
    to on its own path when no repeat encloses it). The structure ``re`` reads is the same."""
    names = [m.group(2) for m in _GROUP_NAME.finditer(pattern)]
    if len(names) == len(set(names)) or "\\g<" in pattern:
        return pattern
    count = iter(range(len(names)))
    latest: dict[str, str] = {}

    def rename(m: regex.Match) -> str:
        if m.group(2) is not None:
            latest[m.group(2)] = f"_g{next(count)}"
            return f"{m.group(1)}(?P<{latest[m.group(2)]}>"
        return f"{m.group(1)}(?P={latest.get(m.group(3), m.group(3))})"

    return _GROUP_OR_REF.sub(rename, pattern)


_GROUP_OR_REF = regex.compile(r"(?<!\\)((?:\\\\)*)(?:\(\?P<(\w+)>|\(\?P=(\w+)\))")


# --- leaning on the end of the input ----------------------------------------------
def _sre_tree(pattern: str) -> tuple[Any, Any] | None:
    """Python's parse tree of ``pattern`` (DOTALL, as templates are compiled) and the module
    of its opcodes, or None when ``re`` cannot read it."""
    sre_parse, sre = sre_modules()
    try:
        return sre_parse.parse(_unique_group_names(pattern), 16), sre
    except Exception:  # noqa: BLE001 - regex-module syntax
        return None


def _matches_nul(op: Any, arg: Any, sre: Any) -> bool:
    """Does the one-character parse-tree item ``(op, arg)`` match ``\\x00``?"""
    if op is sre.LITERAL:
        return arg == 0
    if op is sre.NOT_LITERAL or op is sre.ANY:
        return arg != 0 if op is sre.NOT_LITERAL else True
    # IN: a class; \x00 is in it (or out of it, negated) by its items
    negate = False
    found = False
    for item_op, item_arg in arg:
        if item_op is sre.NEGATE:
            negate = True
        elif item_op is sre.LITERAL:
            found = found or item_arg == 0
        elif item_op is sre.RANGE:
            found = found or item_arg[0] == 0
        elif item_op is sre.CATEGORY:
            found = found or item_arg in (sre.CATEGORY_NOT_DIGIT, sre.CATEGORY_NOT_SPACE, sre.CATEGORY_NOT_WORD)
        else:
            return True  # unknown: assume it does
    return found != negate


def leans_on_end(pattern: str) -> bool:
    """True when a complete match of ``pattern`` that ends *before* the end of the text may
    change if the text goes on (transformers 5.24's rule: such a match is final only if
    the same match comes out of the text with one more character, ``\\x00``, appended).

    A match can only change there if some way of matching looks at the end of the text:
    an end anchor (``$``, ``\\Z``), a lookaround (which may reach it), a back reference
    (conservatively), or an element that can match ``\\x00`` followed by nothing the match
    still needs (then the appended character completes a longer, preferred match).
    Everything else reads the same characters either way, so its match stands: such a
    delimiter needs no extra match. Conservative: True when the pattern is not understood.
    """
    if regex_only(pattern) or "\x00" in pattern:
        return True
    parsed = _sre_tree(pattern)
    if parsed is None:
        return True
    tree, sre = parsed

    end_codes = {sre.AT_END, sre.AT_END_STRING, sre.AT_END_LINE}
    single = {sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN}
    repeats = {sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)}

    def nullable(items) -> bool:
        return all(nullable_item(op, arg) for op, arg in items)

    def nullable_item(op, arg) -> bool:
        if op in single:
            return False
        if op is sre.AT:
            return True
        if op is sre.SUBPATTERN:
            return nullable(arg[-1])
        if op is getattr(sre, "ATOMIC_GROUP", None):
            return nullable(arg)
        if op is sre.BRANCH:
            return any(nullable(alt) for alt in arg[1])
        if op in repeats:
            return arg[0] == 0 or nullable(arg[2])
        return True  # (not reached for patterns that pass `leans`)

    def leans(items, tail_nullable: bool) -> bool:
        """Does anything in ``items`` lean, when what follows them may match empty
        (``tail_nullable``)?"""
        after = tail_nullable
        for op, arg in reversed(list(items)):
            if op in single:
                if after and _matches_nul(op, arg, sre):
                    return True
            elif op is sre.AT:
                if arg in end_codes:
                    return True
            elif op is sre.SUBPATTERN:
                if leans(arg[-1], after):
                    return True
            elif op is getattr(sre, "ATOMIC_GROUP", None):
                if leans(arg, after):
                    return True
            elif op is sre.BRANCH:
                if any(leans(alt, after) for alt in arg[1]):
                    return True
            elif op in repeats:
                # a later repetition is optional, or needs the body again: what follows the
                # body is no more "needed" than what follows the repeat (conservative)
                if leans(arg[2], after):
                    return True
            else:
                return True  # lookarounds, back references, conditionals, ...
            after = after and nullable_item(op, arg)
        return False

    return leans(tree, True)


# --- backtracking that can run away -------------------------------------------------
def may_backtrack(pattern: str) -> bool:
    """True when matching ``pattern`` may take time exponential in the text: a repetition
    (``*``, ``+``, ``{m,n}`` with n > 1) around something that can itself match in several
    ways (a repetition of varying count, or an alternation: ``(a+)+``, ``(a|aa)*``), or a
    back reference. Such patterns get the parser's
    regex time bound (see runtime/scan.py); every other one is matched without it, since a
    clock read costs the regex module about three times a typical delimiter match.

    Conservative: True when the pattern is not understood (regex-module-only syntax).
    """
    if regex_only(pattern):
        return True
    parsed = _sre_tree(pattern)
    if parsed is None:
        return True
    tree, sre = parsed
    repeats = {sre.MAX_REPEAT, sre.MIN_REPEAT}
    possessive = getattr(sre, "POSSESSIVE_REPEAT", None)
    atomic = getattr(sre, "ATOMIC_GROUP", None)

    def ambiguous(items) -> bool:
        """True when ``items`` (a parsed sequence) holds a repetition or an alternation that
        backtracking can try in several ways, or a back reference."""
        for op, av in items:
            if op in repeats:
                low, high, body = av
                if high > low or ambiguous(body):
                    return True
            elif op == sre.BRANCH:
                return True
            elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
                return True
            elif op == sre.SUBPATTERN:
                if ambiguous(av[-1]):
                    return True
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                if ambiguous(av[1]):
                    return True
        return False

    def runaway(items) -> bool:
        for op, av in items:
            if op in repeats:
                low, high, body = av
                if high > 1 and ambiguous(body):
                    return True
                if runaway(body):
                    return True
            elif op in (possessive, atomic) and op is not None:
                continue  # no backtracking into it
            elif op == sre.BRANCH:
                if any(runaway(branch) for branch in av[1]):
                    return True
            elif op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
                return True
            elif op == sre.SUBPATTERN:
                if runaway(av[-1]):
                    return True
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                if runaway(av[1]):
                    return True
        return False

    return runaway(tree)


# --- a long run of one whitespace character ------------------------------------------
#: the whitespace characters the pump analysis asks each class about (REGEX_WS)
_WS_CHARS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def ws_pump(pattern: str) -> int | None:
    r"""``K`` when a run of one whitespace character ``c`` longer than ``K`` can grow by more
    ``c`` without changing how ``pattern`` matches around it (whether, from which starts,
    partially or not, and where relative to the run's end); None when that is not known.

    It holds when every element that can match whitespace is either the body of an
    unbounded repeat of one character (``\s*``, ``[^"]+``, ``.*?``: one more ``c`` is one
    more iteration) or outside every unbounded repeat (a literal space, ``\s{2}``: at most
    ``K`` of the run's characters in all, counting the minimum of each one-character loop;
    a one-character loop may be tempered, ``(?:(?!x).)*``, its lookarounds counted too).
    A run longer than ``K`` then gives every way of matching an iteration of some loop
    inside the run, which can take one more ``c`` (or give one back), so ``u c^n v`` and
    ``u c^(n+1) v`` match alike (the classic pumping argument, lookaround bodies included).
    A back reference counts as nothing when its group can take no whitespace (it takes
    again what the group took). Not known: other back references, conditionals, an element
    matching whitespace inside a repeated group other than a ``*`` loop of one character,
    regex-module-only syntax.
    runtime/base.py holds such a run without rescanning it (scan.State.pump)."""
    return _pump(pattern, _WS_CHARS)


def any_pump(pattern: str) -> int | None:
    r""":func:`ws_pump` for a run of any one character: ``K`` when a run of one character
    ``c`` longer than ``K``, whatever ``c`` is, can grow by more ``c`` without changing how
    ``pattern`` matches around it; None when that is not known. Every element is then
    either the body of an unbounded repeat of one character or outside every unbounded
    repeat (``K`` counts the latter, lookaround bodies included): a tool name or an id
    written as a long run of one letter (``"(?P<name>[^"]+)"``, ``[\w-]+``) is held
    without rescanning (scan.State.any_pump). Not known: a repeated group of more than one
    character (``(?:,\s*\w)*``), back references, conditionals, regex-module-only syntax."""
    return _pump(pattern, None)


def _pump(pattern: str, chars: str | None) -> int | None:
    """The pump bound of ``pattern`` for runs of one of ``chars`` (None: any character)."""
    if regex_only(pattern):
        return None
    parsed = _sre_tree(pattern)
    if parsed is None:
        return None
    tree, sre = parsed
    single = {sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN}
    repeats = {sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)}
    unbounded = sre.MAXREPEAT
    compiled: dict = {}
    groups: dict[int, Any] = {}  # group number -> its body, for back references
    repeated = [0]  # how many repeats enclose the element counted

    def collect(items) -> None:
        for op, arg in items:
            if op is sre.SUBPATTERN:
                if arg[0] is not None:
                    groups[arg[0]] = arg[-1]
                collect(arg[-1])
            elif op is sre.BRANCH:
                for alt in arg[1]:
                    collect(alt)
            elif op in repeats:
                collect(arg[2])
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                collect(arg[1])
            elif op is getattr(sre, "ATOMIC_GROUP", None):
                collect(arg)

    def captures_ws(items, seen: frozenset = frozenset()) -> bool:
        """Some text a group of these items captures may hold whitespace."""
        for op, arg in items:
            if op in single:
                if takes_ws(op, arg):
                    return True
            elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
                continue  # (lookarounds capture nothing they read into the group's text)
            elif op is sre.SUBPATTERN:
                if captures_ws(arg[-1], seen):
                    return True
            elif op is sre.BRANCH:
                if any(captures_ws(alt, seen) for alt in arg[1]):
                    return True
            elif op in repeats:
                if arg[1] and captures_ws(arg[2], seen):
                    return True
            elif op is sre.GROUPREF and arg in groups and arg not in seen:
                if captures_ws(groups[arg], seen | {arg}):
                    return True
            else:
                return True
        return False

    def takes_ws(op, arg) -> bool:
        if chars is None or op is sre.ANY or op is sre.NOT_LITERAL:
            return True
        if op is sre.LITERAL:
            return chr(arg) in chars
        key = repr(arg)
        if key not in compiled:
            # the class rebuilt as a pattern of its own and asked about each whitespace character
            try:
                code = _std_re.compile(_rebuild_class(arg, sre))
                compiled[key] = any(code.fullmatch(c) for c in chars)
            except Exception:  # noqa: BLE001 - unknown item: assume it does
                compiled[key] = True
        return compiled[key]

    def count(items, in_loop: bool) -> int:
        total = 0
        for op, arg in items:
            if op in single:
                if takes_ws(op, arg):
                    if in_loop:
                        raise _Unknown(pattern)
                    total += 1
            elif op is sre.AT:
                continue
            elif op is sre.SUBPATTERN:
                total += count(arg[-1], in_loop)
            elif op is getattr(sre, "ATOMIC_GROUP", None):
                total += count(arg, in_loop)
            elif op is sre.BRANCH:
                total += max(count(alt, in_loop) for alt in arg[1])
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                total += count(arg[1], in_loop)
            elif op is sre.GROUPREF:
                # a back reference takes again what its group took: none of a run when the
                # group can take no whitespace (each group of its name written before it:
                # without a repeat around them, no other can have been taken first)
                refers = same_name.get(arg, [arg])
                if repeated[0] and len(refers) > 1 or any(g not in groups or captures_ws(groups[g]) for g in refers):
                    raise _Unknown(pattern)
            elif op in repeats:
                low, high, body = arg
                again = high > 1  # (an optional part, ``?``, runs once at most)
                repeated[0] += again
                try:
                    total += repeat(low, high, body, in_loop)
                finally:
                    repeated[0] -= again
            else:
                raise _Unknown(pattern)  # conditionals, ...
        return total

    def repeat(low, high, body, in_loop: bool) -> int:
        if high != unbounded:
            return high * count(body, in_loop)
        # one character, maybe behind lookarounds (a tempered ``(?:(?!x).)*``): the
        # lookarounds' whitespace counts, as elsewhere
        checks = [item for item in body if item[0] in (sre.ASSERT, sre.ASSERT_NOT)]
        chars = [item for item in body if item[0] not in (sre.ASSERT, sre.ASSERT_NOT)]
        if len(chars) == 1 and chars[0][0] in single:
            total = count(checks, in_loop)
            if takes_ws(*chars[0]):
                if in_loop and low:
                    raise _Unknown(pattern)
                total += low
            return total
        count(body, True)
        return 0

    # a repeated name (made unique, _g0, _g1, ... in order): a back reference, which names
    # the last group of its name written before it, may take what any of those took
    defs = [m.group(2) for m in _GROUP_NAME.finditer(pattern)]
    same_name: dict[int, list[int]] = {}
    if len(set(defs)) < len(defs):
        numbers = tree.state.groupdict
        for k, name in enumerate(defs):
            same_name[numbers[f"_g{k}"]] = [numbers[f"_g{i}"] for i in range(k + 1) if defs[i] == name]
    collect(tree)
    try:
        return count(tree, False)
    except _Unknown:
        return None


def ws_lookbehind(pattern: str) -> bool:
    r"""True when ``pattern`` has a lookbehind that reads a whitespace run backwards (some
    way of matching its body ends with an unbounded repeat that takes whitespace:
    ``(?<!x[^<]*)``) where nothing right before it keeps it from being tried at every
    position inside a run (a literal character other than whitespace, or a lookahead that
    needs one: ``(?=<)(?<!x[^<]*)<``). A search (or a run the pattern backtracks through)
    then reads the run back from each of its positions: quadratic in the run's length at
    each start, cubic over a search. A positive lookbehind that ends an alternative
    (``:\s*(?<=\[X\][\s\S]*)``) is left out: it is read where the rest of a match holds,
    and where it holds, once. What ``respc lint`` reports with :func:`ws_rescans`."""
    sre_parse, sre = sre_modules()
    for i, c, depth in _structure(pattern):
        if c != "(" or not pattern.startswith(("(?<=", "(?<!"), i):
            continue
        try:
            close = _group_end(pattern, i)
            body = pattern[i + 4 : close]
            tree = sre_parse.parse(_unique_group_names(body), 16)
        except Exception:  # noqa: BLE001 - not read: not known to
            continue
        last = depth == 0 and pattern[close + 1 : close + 2] in ("", "|")
        if last and pattern.startswith("(?<=", i):
            continue  # ends a match that is otherwise whole: read once where it holds
        if _ends_in_ws_loop(list(tree), sre) and not _kept_to_one_place(pattern[:i]):
            return True
    return False


def _ends_in_ws_loop(items: list, sre: Any) -> bool:
    """Some way of matching ``items`` (a parsed sequence) ends with an unbounded repeat of
    an element that takes whitespace (what a lookbehind reads first, going backwards)."""
    while items and items[-1][0] in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        items = items[:-1]  # (zero-width: reads nothing going back)
    if not items:
        return False
    op, arg = items[-1]
    if op is sre.SUBPATTERN:
        return _ends_in_ws_loop(list(arg[-1]), sre)
    if op is sre.BRANCH:
        return any(_ends_in_ws_loop(list(alt), sre) for alt in arg[1])
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        low, high, body = arg
        if high == sre.MAXREPEAT and _takes_any_ws(list(body), sre):
            return True
        return _ends_in_ws_loop(list(body), sre) or (low == 0 and _ends_in_ws_loop(items[:-1], sre))
    return False


def _takes_any_ws(items: list, sre: Any) -> bool:
    """Some element of ``items`` may take a whitespace character (conservative: True when not known)."""
    for op, arg in items:
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue
        if op is sre.LITERAL:
            if chr(arg) in _WS_CHARS:
                return True
        elif op in (sre.ANY, sre.NOT_LITERAL):
            return True
        elif op is sre.IN:
            try:
                code = _std_re.compile(_rebuild_class(arg, sre))
            except Exception:  # noqa: BLE001
                return True
            if any(code.fullmatch(c) for c in _WS_CHARS):
                return True
        elif op is sre.SUBPATTERN:
            if _takes_any_ws(list(arg[-1]), sre):
                return True
        elif op is sre.BRANCH:
            if any(_takes_any_ws(list(alt), sre) for alt in arg[1]):
                return True
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            if _takes_any_ws(list(arg[2]), sre):
                return True
        else:
            return True
    return False


def _kept_to_one_place(before: str) -> bool:
    """``before`` (the pattern up to a lookbehind) ends in a literal character other than
    whitespace, or in a lookahead that needs one: the lookbehind is tried only there."""
    if _ends_in_non_ws(before):
        return True
    if not before.endswith(")"):
        return False
    for j, c, depth in _structure(before):
        if c == "(" and before.startswith("(?=", j):
            try:
                if _group_end(before, j) == len(before) - 1:
                    firsts = set()
                    for branch in _split_alternatives(before[j + 3 : -1]):
                        firsts |= _required_firsts(branch)
                    return not any(f.isspace() for f in firsts)
            except (_Unknown, IndexError):
                return False
    return False


def _rebuild_class(items, sre) -> str:
    """The source of a parsed character class (``IN``'s items), for :func:`ws_pump`."""
    parts = []
    negate = ""
    for op, arg in items:
        if op is sre.NEGATE:
            negate = "^"
        elif op is sre.LITERAL:
            parts.append(regex.escape(chr(arg)))
        elif op is sre.RANGE:
            parts.append(f"{regex.escape(chr(arg[0]))}-{regex.escape(chr(arg[1]))}")
        elif op is sre.CATEGORY:
            names = {
                sre.CATEGORY_SPACE: "\\s", sre.CATEGORY_NOT_SPACE: "\\S", sre.CATEGORY_DIGIT: "\\d",
                sre.CATEGORY_NOT_DIGIT: "\\D", sre.CATEGORY_WORD: "\\w", sre.CATEGORY_NOT_WORD: "\\W",
            }
            parts.append(names[arg])
        else:
            raise _Unknown(str(op))
    return "[" + negate + "".join(parts) + "]"


# --- a held match inside a run of one character class ---------------------------------
_LOOKS_AROUND = ("(?=", "(?!", "(?<=", "(?<!", "\\b", "\\B", "\\Z", "\\A", "\\z", "\\G", "(?P=", "(?(")
_RUN_ITEM = regex.compile(r"(?:\((?:\?:|\?P<\w+>)?)?(\[(?:\\.|[^\]\\])+\]|\\[SWDswd]|\.)[+*]\)?")


def run_splits(pattern: str) -> list[tuple[str, str, str, str]]:
    r"""Every way to split ``pattern`` as ``HEAD C+ F REST`` (or ``HEAD C* F REST``) into
    ``(HEAD, C, F, REST)``, where ``C`` is one character class repeated without bound at the top
    level (``[^>\n]+``, maybe in a group: a function name; ``\s*``) and ``F`` a literal
    character ``C`` does not match, required right after it. None for a pattern with
    top-level alternatives, lookarounds, anchors or back references (the text after a
    match could change it).

    A run that ends the pattern gives ``F`` and ``REST`` "": a held match ending with the
    text stays one while only characters of ``C`` follow.

    A partial match whose text is ``HEAD`` then characters of ``C`` stays partial while
    only characters of ``C`` follow: it may go on in the run forever, and no way of
    matching can complete without an ``F``, unless one has consumed an ``F`` already and
    is still alive (the runtime checks that there is none: no prefix of the text ending
    in an ``F`` is ``HEAD C* F`` with the rest a beginning of ``REST``). So a parser may
    hold such a match without rescanning it (runtime/base.py).
    """
    if regex_only(pattern) or regex.search(r"(?<!\\)(?:\\\\)*\\[1-9]", pattern):
        return []
    for i, c, depth in _structure(pattern):
        if (depth == 0 and c == "|") or c in "^$":
            return []  # top-level alternatives (HEAD would not be one thing), or anchors
    found = _ahead_run_splits(pattern) if _looks_around(pattern) else _run_splits(pattern, True)
    try:
        lead_in, branches = _first_branches(pattern)
    except (_Unknown, IndexError):
        lead_in, branches = "", []
    for number, (branch, _) in enumerate(branches):
        if _looks_around(branch):
            continue
        others = [prefix for k, (_, prefixes) in enumerate(branches) if k != number for prefix in prefixes]
        for split in _run_splits(branch, True):
            # a HEAD that reaches into the alternative far enough to rule out the others: a
            # held text it starts is held by this alternative alone
            try:
                reached = _required_prefixes(split[0][len(lead_in) :]) if len(split[0]) > len(lead_in) else set()
            except (_Unknown, IndexError):
                continue
            if reached and _apart(reached, others) and split not in found:
                found.append(split)
    return found


def _ahead_run_splits(pattern: str) -> list[tuple[str, str, str, str]]:
    r"""The run splits of a pattern whose only lookarounds are lookaheads (``(?=``) after the run
    (magistral's ``\[TOOL_CALLS\](?P<name>[^\[\{]+)(?=\[ARGS\]|\{)(?:\[ARGS\])?``):
    those of a ``HEAD`` that matches one way, with no lookaround, and a ``REST`` whose every
    match starts (a lookahead's first characters included: :func:`lead`) with a character
    the run does not take (``F`` is ""; :func:`_run_splits`' general stop). A held match
    still in its run cannot have gone past it while only the run's characters follow."""
    if any(token in pattern for token in _LOOKS_AROUND if token != "(?="):
        return []
    return [split for split in _run_splits(pattern, True) if not split[2] and not _looks_around(split[0])]


def _looks_around(pattern: str) -> bool:
    return any(token in pattern for token in _LOOKS_AROUND)


def _apart(some: set[str], others: list[str]) -> bool:
    """No text starts with one of ``some`` and one of ``others``."""
    return not any(a.startswith(b) or b.startswith(a) for a in some for b in others)


def _first_branches(pattern: str) -> tuple[str, list[tuple[str, set[str]]]]:
    r"""The branches ``W A1 R``, ..., ``W Ak R`` of a pattern ``W(?:A1|...|Ak)R``, ``W`` nothing
    or a whitespace run, each with the literal prefixes one of which every match of its
    alternative starts with (a lookahead's own, for an alternative that starts with one),
    when no text starts with prefixes of two alternatives and none starts with whitespace:
    a match goes through the one alternative the text after the run names, so a held text
    that reaches far enough into ``W Ai`` is held by that alternative alone (gpt-oss's tool
    header, in two orders: ``\s*(?:<\|channel\|>... to=functions\.NAME|to=functions\.NAME\s*<\|channel\|>...)``;
    lfm2's call close ``\s*(?:<\|tool_call_end\|>\s*|(?=<\|im_end\|>))``). No branches for any
    other pattern. Returns ``(W, branches)``."""
    lead_in = next((w for w in ("\\s*", "\\s+") if pattern.startswith(w)), "")
    at = len(lead_in)
    if not pattern.startswith("(?:", at):
        return lead_in, []
    close = _group_end(pattern, at)
    after = pattern[close + 1 :]
    if after[:1] in ("?", "*", "+", "{"):
        return lead_in, []
    alternatives = _split_alternatives(pattern[at + 3 : close])
    branches: list[tuple[str, set[str]]] = []
    for alternative in alternatives:
        if alternative.startswith("(?="):
            prefixes = _required_prefixes(alternative[3 : _group_end(alternative, 0)])
        else:
            prefixes = _required_prefixes(alternative)
        if not prefixes or any(not p or p[0].isspace() for p in prefixes):
            return lead_in, []
        if not _apart(prefixes, [p for _, seen in branches for p in seen]):
            return lead_in, []
        branches.append((lead_in + alternative + after, prefixes))
    return lead_in, branches if len(branches) > 1 else []


def _fixed_texts(pattern: str, limit: int = 64) -> set[str] | None:
    """The texts of a pattern of literal characters and groups of alternatives (no
    quantifiers), or None (for anything else, or more than ``limit`` texts)."""
    texts = [""]
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "(":
            close = _group_end(pattern, i)
            inner = pattern[i + 1 : close]
            if inner.startswith("?:"):
                inner = inner[2:]
            elif inner.startswith("?P<"):
                inner = inner[inner.find(">") + 1 :]
            elif inner.startswith("?"):
                return None
            options: set[str] = set()
            for branch in _split_alternatives(inner):
                sub = _fixed_texts(branch, limit)
                if sub is None:
                    return None
                options |= sub
            end = close + 1
        elif c == "\\":
            try:
                char, end = _escape(pattern, i)
            except _Unknown:
                return None
            options = {char}
        elif c in _META:
            return None
        else:
            options, end = {c}, i + 1
        if pattern[end : end + 1] in ("?", "*", "+", "{"):
            return None
        texts = [t + o for t in texts for o in options]
        if len(texts) > limit:
            return None
        i = end
    return set(texts)


def top_alternatives(pattern: str) -> list[str] | None:
    """The top-level alternatives of ``pattern`` as written, or None when they cannot be
    told apart."""
    try:
        return _split_alternatives(pattern)
    except (_Unknown, IndexError):
        return None


def lookahead_texts(pattern: str) -> set[str] | None:
    """The texts a pattern that is only a lookahead at fixed texts looks at
    (``(?=<\\|im_end\\|>|<\\|endoftext\\|>)``), else None."""
    if not pattern.startswith("(?=") or _group_end(pattern, 0) != len(pattern) - 1:
        return None
    return _fixed_texts("(?:" + pattern[3:-1] + ")")


def _one_way_head(head: str) -> bool:
    """``head`` is a whitespace run (or nothing) then a fixed text, one of a few that none
    starts another (nor with whitespace): a text that starts with a match of it splits
    into that match and the rest one way only."""
    for w in ("\\s*", "\\s+"):
        if head.startswith(w):
            head = head[len(w) :]
            break
    try:
        texts = _fixed_texts(head)
    except (_Unknown, IndexError):
        return False
    if not texts or any(not t or t[0].isspace() for t in texts):
        return False
    return not any(a != b and b.startswith(a) for a in texts for b in texts)


def _run_splits(pattern: str, general_stop: bool = False) -> list[tuple[str, str, str, str]]:
    """:func:`run_splits` of a pattern with no top-level alternatives. With
    ``general_stop``, also a run followed by more than one literal character: ``REST``
    whose every match starts with whitespace or characters the run does not take (a
    known lead), after a ``HEAD`` that matches one way (:func:`_one_way_head`); then no
    way of matching has gone past the run while only its characters follow, ``F`` is ""
    and nothing is checked at run time."""
    found = []
    starts = _token_starts(pattern)
    # (overlapped: an item read from inside an escape, ``\[TOOL_CALLS\](?P<name>[^\[]+)``'s
    # ``[TOOL_CALLS\](...)[^\[]+``, must not hide the real one that starts in it)
    for match in _RUN_ITEM.finditer(pattern, overlapped=True):
        start, end = match.span()
        if start not in starts:
            continue  # escaped, or inside a class
        if (pattern[start] == "(") != (pattern[end - 1] == ")"):
            continue  # a group opened or closed without the other
        head, run_class, rest = pattern[:start], match.group(1), pattern[end:]
        if not rest and _balanced(head) and head:
            # the run ends the pattern (``</tool_call>\s*``): a complete match that ends
            # with the text stays one, ending with it, while only characters of ``C``
            # follow (``F`` is "": nothing that ends it can be consumed)
            found.append((head, run_class, "", ""))
            continue
        if not _balanced(head) or not rest:
            continue
        try:
            if rest[0] in _META and rest[0] != "\\":
                raise _Unknown
            char, next_at = _escape(rest, 0) if rest[0] == "\\" else (rest[0], 1)
        except _Unknown:
            char, next_at = "", 0
        if len(char) != 1 or rest[next_at : next_at + 1] in ("?", "*", "{", "+"):
            # not one required literal character: a REST that starts out of the run, or
            # that cannot match without a character out of it (gpt-oss's channel-first
            # header: ``NAME(?: ?(?:<\|constrain\|>)?[\w-]+)?\s*<\|message\|>``)
            if not (general_stop and _one_way_head(head)):
                continue
            info = lead(rest)
            if (
                info is not None
                and not any(
                    regex.fullmatch(run_class, x, flags=regex.DOTALL) is not None
                    for x in list(info.firsts) + (list(_WS_CHARS) if info.ws else [])
                )
            ) or _needs_out_of(rest, run_class):
                found.append((head, run_class, "", ""))
            continue
        if regex.fullmatch(run_class, char, flags=regex.DOTALL) is not None:
            continue  # the run could swallow it
        found.append((head, run_class, char, rest[next_at:]))
    return found


def _needs_out_of(pattern: str, run_class: str) -> bool:
    """True when every match of ``pattern`` takes a character ``run_class`` does not take (a
    required literal character out of the class, in every way of matching): a text made of
    the class's characters alone never matches it, so a held match still in its run of the
    class cannot complete there, whichever way it went past the run. Conservative: False
    when not known (a class, a lookaround or a back reference needs nothing)."""
    if regex_only(pattern):
        return False
    parsed = _sre_tree(pattern)
    if parsed is None:
        return False
    tree, sre = parsed
    repeats = {sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)}
    outside = regex.compile(run_class, regex.DOTALL)

    def needs(items) -> bool:
        return any(needs_item(op, arg) for op, arg in items)

    def needs_item(op, arg) -> bool:
        if op is sre.LITERAL:
            return outside.fullmatch(chr(arg)) is None
        if op is sre.SUBPATTERN:
            return needs(arg[-1])
        if op is getattr(sre, "ATOMIC_GROUP", None):
            return needs(arg)
        if op is sre.BRANCH:
            return all(needs(alt) for alt in arg[1])
        if op in repeats:
            return arg[0] > 0 and needs(arg[2])
        return False  # classes, anchors, lookarounds, back references, ...

    return needs(tree)


def _token_starts(pattern: str) -> set[int]:
    """Where the pattern's tokens begin: every index outside a character class that is not
    escaped, with the ``[`` that opens each class."""
    starts = set()
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if not in_class:
            starts.add(i)
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern.startswith("^]", i + 1) or pattern.startswith("]", i + 1):
                i += 2 if pattern[i + 1] == "]" else 3  # (a ``]`` first in a class is a member)
                continue
        i += 1
    return starts


def _balanced(text: str) -> bool:
    """True when ``text`` (a pattern prefix) closes every group it opens."""
    depth = 0
    for _, c, _ in _structure(text):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


# --- a held match inside a run, read way by way -----------------------------------------
#: at most this many ways (top-level alternatives, groups of alternatives and optional groups
#: with a run inside, each way of each) a pattern is read as (run_holds)
_MAX_WAYS = 16
#: at most this many stop characters of one way are tried (run_holds: _stops)
_MAX_STOPS = 4
_QUANTIFIER = regex.compile(r"(?:[*+?]|\{\d*(?:,\d*)?\})[?+]?")
_BACK_REFERENCE = regex.compile(r"(?<!\\)((?:\\\\)*)(?:\(\?P=\w+\)|\\[1-9][0-9]*)")


@dataclass(frozen=True)
class _Item:
    """One item of a sequence: a literal character (``char``), one character of a class
    (``one``: ``[^"]``, ``\\w``, ``.``), a group (``inner`` its text, ``opener`` ``(?:``,
    ``(?P<n>`` or ``(``), a lookaround (``opener`` ``(?=``, ``(?!``, ``(?<=`` or ``(?<!``),
    an anchor, a back reference; ``body`` its text less the quantifier ``quant``."""

    kind: str
    body: str
    quant: str = ""
    char: str = ""
    opener: str = ""
    inner: str = ""

    @property
    def source(self) -> str:
        return self.body + self.quant

    @property
    def unbounded(self) -> bool:
        return self.quant[:1] in ("*", "+") or regex.fullmatch(r"\{\d*,\}[?+]?", self.quant) is not None


def _items(seq: str) -> list[_Item]:
    """The items of ``seq``, a pattern with no top-level ``|``."""
    items = []
    i, n = 0, len(seq)
    while i < n:
        c = seq[i]
        start = i
        char = opener = inner = ""
        if c == "\\":
            e = seq[i + 1 : i + 2]
            if e and e in "AZzbBG":
                kind, i = "anchor", i + 2
            elif e and e in "dDwWsS":
                kind, i = "one", i + 2
            elif e.isdigit():
                kind, i = "ref", i + 2
                while i < n and seq[i].isdigit():
                    i += 1
            else:
                kind = "char"
                char, i = _escape(seq, i)
        elif c == "[":
            j = i + 1
            if seq.startswith("^", j):
                j += 1
            if seq.startswith("]", j):
                j += 1
            while seq[j] != "]":
                j += 2 if seq[j] == "\\" else 1
            kind, i = "one", j + 1
        elif c == "(":
            close = _group_end(seq, i)
            if seq.startswith("(?P=", i):
                kind = "ref"
            elif seq.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
                kind = "look"
                opener = seq[i : i + (4 if seq.startswith("(?<", i) else 3)]
                inner = seq[i + len(opener) : close]
            elif seq.startswith("(?:", i):
                kind, opener, inner = "group", "(?:", seq[i + 3 : close]
            elif seq.startswith("(?P<", i):
                at = seq.index(">", i) + 1
                kind, opener, inner = "group", seq[i:at], seq[at:close]
            elif seq.startswith("(?", i):
                raise _Unknown(seq)  # atomic groups, inline flags, conditionals, ...
            else:
                kind, opener, inner = "group", "(", seq[i + 1 : close]
            i = close + 1
        elif c == ".":
            kind, i = "one", i + 1
        elif c in "^$":
            kind, i = "anchor", i + 1
        elif c in "|)*+?{":
            raise _Unknown(seq)
        else:
            kind, char, i = "char", c, i + 1
        body = seq[start:i]
        q = _QUANTIFIER.match(seq, i)
        quant = q.group() if q else ""
        i += len(quant)
        items.append(_Item(kind, body, quant, char, opener, inner))
    return items


def _is_run(item: _Item) -> bool:
    """``item`` repeats one character of a class without bound (greedy or lazy, not possessive)."""
    return item.kind == "one" and item.unbounded and not (len(item.quant) > 1 and item.quant.endswith("+"))


def _has_run(pattern: str) -> bool:
    """Some item of ``pattern`` (in a group too, not in a lookaround) is an unbounded repeat."""
    for branch in _split_alternatives(pattern):
        for item in _items(branch):
            if item.unbounded or (item.kind == "group" and _has_run(item.inner)):
                return True
    return False


def _ways(pattern: str) -> list[list[_Item]]:
    """``pattern`` as the sequences of items its matches go through, one per way: its
    top-level alternatives, and within each the ways of each group that has a run inside
    (or a single alternative: a group is its inner items), an optional one with and
    without it. Any other group is one item. A positive lookahead that ends a way is read
    as part of its body (a match that needs the lookahead's text to be complete, or
    partial where that text is: the same existence of complete and partial matches)."""
    ways = []
    for branch in _split_alternatives(pattern):
        for way in _sequence_ways(branch):
            ways += _lookahead_read(way)
        if len(ways) > _MAX_WAYS:
            raise _Unknown(pattern)
    return ways


def _sequence_ways(seq: str) -> list[list[_Item]]:
    ways: list[list[_Item]] = [[]]
    for item in _items(seq):
        options: list[list[_Item]] = [[item]]
        if item.kind == "group" and item.quant in ("", "?", "??"):
            single = len(_split_alternatives(item.inner)) == 1
            if (single and not item.quant) or _has_run(item.inner):
                options = _ways(item.inner) + ([[]] if item.quant else [])
        ways = [way + option for way in ways for option in options]
        if len(ways) > _MAX_WAYS:
            raise _Unknown(seq)
    return ways


def _lookahead_read(way: list[_Item]) -> list[list[_Item]]:
    if way and way[-1].kind == "look" and way[-1].opener == "(?=" and not way[-1].quant:
        return [way[:-1] + body for body in _ways(way[-1].inner)]
    return [way]


def _source(items: list[_Item]) -> str:
    return "".join(item.source for item in items)


def _ahead(head: str) -> int | None:
    """How far past its own match a match of ``head`` may read (its lookaheads' widths; 1
    for a word boundary), or None: unbounded, an end anchor, a back reference (what it
    matches is not the head's own)."""
    parsed = _sre_tree(head)
    if parsed is None or _BACK_REFERENCE.search(head):
        return None
    tree, sre = parsed
    most = 0

    def walk(items) -> None:
        nonlocal most
        for op, arg in items:
            if op is sre.AT:
                if arg in (sre.AT_END, sre.AT_END_STRING, getattr(sre, "AT_END_LINE", None)):
                    raise _Unknown(head)
                if arg in (sre.AT_BOUNDARY, sre.AT_NON_BOUNDARY, getattr(sre, "AT_UNI_BOUNDARY", None)):
                    most = max(most, 1)
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                direction, body = arg
                if direction == 1:
                    width = body.getwidth()[1]
                    if width >= sre.MAXREPEAT:
                        raise _Unknown(head)
                    most = max(most, width)
                walk(body)
            elif op is sre.SUBPATTERN:
                walk(arg[-1])
            elif op is sre.BRANCH:
                for alt in arg[1]:
                    walk(alt)
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)):
                walk(arg[2])
            elif op is getattr(sre, "ATOMIC_GROUP", None):
                walk(arg)
            elif op in (sre.GROUPREF, getattr(sre, "GROUPREF_EXISTS", None)):
                raise _Unknown(head)

    try:
        walk(tree)
    except _Unknown:
        return None
    return most


def _stops(way: list[_Item], run: Any) -> tuple[tuple[str, str], ...]:
    """``(F, REST)`` for some characters ``F`` of ``way`` that every match of it takes (a
    literal item, not repeated) and ``run`` does not match, ``REST`` what the way goes on
    with after ``F`` (a back reference read as any text: a superset of what it matches):
    the last one, and the first one after each unbounded repeat (where a held text's run
    may be; its ``REST`` is the most telling one past it), latest first, at most
    _MAX_STOPS of them."""
    stops = [k for k, item in enumerate(way) if item.kind == "char" and not item.quant and run.fullmatch(item.char) is None]
    if not stops:
        return ()
    chosen = [stops[-1]]
    for k in range(len(way) - 1, -1, -1):
        if way[k].unbounded:
            after = next((j for j in stops if j > k), None)
            if after is not None and after not in chosen:
                chosen.append(after)
    chosen = sorted(chosen, reverse=True)[:_MAX_STOPS]
    return tuple(
        (way[k].char, _BACK_REFERENCE.sub(lambda m: m.group(1) + "(?:[\\s\\S]*)", _source(way[k + 1 :]))) for k in chosen
    )


def run_holds(pattern: str) -> list[tuple[str, str, tuple[tuple[tuple[str, str], ...], ...]]]:
    r"""``(C, ALIVE, STOPS)`` for each class ``C`` some way of matching ``pattern`` repeats
    without bound (:func:`_ways`: each top-level alternative, each way through a group that
    has a run inside or an optional one, a trailing lookahead read as text), when every way
    takes some character ``C`` does not. ``ALIVE`` is ``(?:H1|...|Hk)C{w,}``, ``Hi`` what a
    way matches before a run of ``C`` (no back reference or end anchor in it; ``w``: how
    far a lookahead in one reads past it); ``STOPS`` holds, for each way, ``(F, REST)``
    pairs: a character ``F`` out of ``C`` that every match of the way takes, and the
    pattern the way goes on with after it (see :func:`_stops`).

    A held text ``T`` (from where the scan holds to the end of the text, which is in ``C``)
    that ``ALIVE`` matches whole, and where for every way some ``(F, REST)`` has no ``F``
    in ``T`` with ``REST`` matching (partially or not) right after it, holds a partial
    match from its start that stays one while only characters of ``C`` follow, and no
    match can complete anywhere in it meanwhile: a way of matching from any start either
    has not taken its ``F`` (which cannot come from the run) or has, in ``T``, and cannot go
    on. So the scan would hold all of it again (runtime/base.py holds it without
    rescanning: _run_lasts). Conservative: ``[]`` for what it does not read (regex-module
    syntax, atomic groups, inline flags, more than _MAX_WAYS ways)."""
    if regex_only(pattern):
        return []
    try:
        ways = _ways(pattern)
    except (_Unknown, IndexError, ValueError):
        return []
    classes = []
    for way in ways:
        for item in way:
            if _is_run(item) and item.body not in classes:
                classes.append(item.body)
    found = []
    for cls in classes:
        try:
            run = regex.compile(cls, regex.DOTALL)
        except regex.error:
            continue
        # a way every character it must take of which the class takes: the run held is of
        # the class less the last of them (mistral's close, ``\s*\}`` after an optional id
        # ``"[^"]*"``: a run of ``[^"]`` less ``}``)
        left_out = []
        for way in ways:
            required = [item.char for item in way if item.kind == "char" and not item.quant]
            if all(run.fullmatch(c) is not None for c in required):
                if not required:
                    break
                if required[-1] not in left_out:
                    left_out.append(required[-1])
        else:
            held = cls
            if left_out:
                held = "(?:(?![" + "".join(regex.escape(c) for c in left_out) + "])" + cls + ")"
                run = regex.compile(held, regex.DOTALL)
            hold = _run_hold(ways, cls, held, run)
            if hold is not None:
                found.append(hold)
    return found


def _run_hold(ways: list[list[_Item]], cls: str, held: str, run: Any) -> tuple | None:
    """:func:`run_holds`' entry for the runs of class ``cls`` (``held``, ``run``: the class
    a held run may take, its source and regex), or None."""
    heads: list[str] = []
    ahead = 0
    for way in ways:
        for k, item in enumerate(way):
            if item.body != cls or not _is_run(item):
                continue
            if not any(x.kind == "char" and not x.quant and run.fullmatch(x.char) is None for x in way[k + 1 :]):
                continue  # no stop after the run: a text held in it went through them all
            head = _source(way[:k])
            reads = _ahead(head) if head else 0
            if reads is not None and head not in heads:
                heads.append(head)
                ahead = max(ahead, reads)
    if not heads:
        return None
    stops = []
    for way in ways:
        pairs = _stops(way, run)
        if not pairs:
            return None
        if pairs not in stops:
            stops.append(pairs)
    # a way whose stops hold another way's is told by that way's check: one of those clears it
    stops = [
        p for k, p in enumerate(stops) if not any(set(q) < set(p) or (set(q) == set(p) and j < k) for j, q in enumerate(stops))
    ]
    alive = "(?:" + "|".join(heads) + ")" + held + ("*" if not ahead else "{%d,}" % ahead)
    try:
        for source in [alive] + [rest for pairs in stops for _, rest in pairs]:
            regex.compile(source, regex.DOTALL)
    except regex.error:
        return None
    return held, alive, tuple(stops)


# --- a delimiter that runs to the end of the text -------------------------------------
#: spellings of "any characters, as many as there are" (greedy or possessive) at the end of
#: a pattern; ``.`` matches every character since templates are compiled with DOTALL. A lazy
#: ``[\s\S]*?`` is not one (at the end of a pattern it matches nothing).
_TAILS = tuple(
    wrap.format(t + q)
    for t in ("[\\s\\S]", "[\\S\\s]", "[\\w\\W]", "[\\W\\w]", "[\\d\\D]", "[\\D\\d]", ".")
    for q in ("*", "*+")
    for wrap in ("{}", "(?:{})", "(?s:{})")
)
_HEAD_UNSAFE = _LOOKS_AROUND + ("(?P<", "^", "$", "\\z")


def tail_split(pattern: str) -> str | None:
    r"""``HEAD`` when ``pattern`` is ``HEAD`` followed by a match of everything to the end of
    the text (``[\s\S]*``, ``(?s:.*)``, or ``.*``, DOTALL as templates are compiled; see
    _TAILS), at the top level, and ``HEAD`` cannot look past its own match but through
    negative lookaheads that :func:`tail_splits` checks (_lookahead_probes): no top-level
    alternatives, other lookarounds, anchors, word boundaries, back references or named
    groups, and it cannot match empty. None otherwise.

    Once ``HEAD`` has matched (completely) at some position, ``pattern`` matches from there
    to the end of the text however the text goes on, and its match has no captures: a held
    match there is final but for its end (the runtime's tail hold, runtime/base.py).
    Conservative: None for what it does not understand.
    """
    if regex_only(pattern):
        return None
    for tail in _TAILS:
        if not pattern.endswith(tail) or len(pattern) == len(tail):
            continue
        head = pattern[: -len(tail)]
        backslashes = len(head) - len(head.rstrip("\\"))
        if backslashes % 2 or _lookahead_probes(head) is None:
            return None
        if regex.search(r"(?<!\\)(?:\\\\)*\\[1-9]", head) or not _balanced(head):
            return None
        if any(depth == 0 and c == "|" for _, c, depth in _structure(head)):
            return None
        whole, head_tree = _sre_tree(pattern), _sre_tree(head)
        if whole is None or head_tree is None:
            return None
        tree, sre = whole
        if len(list(tree)) != len(list(head_tree[0])) + 1 or not _matches_everything(list(tree)[-1], sre):
            return None
        try:
            if regex.fullmatch(head, "", flags=regex.DOTALL) is not None:
                return None  # a head that matches nothing: the delimiter would match anywhere
        except regex.error:
            return None
        return head
    return None


def _lookahead_probes(head: str) -> list[str] | None:
    r"""For a tail hold's ``head`` that looks past its match only through negative lookaheads
    ``(?!Y)`` (``Y`` without lookarounds, anchors or back references: gigachat3's content
    close, ``<\|message_sep\|>(?!\s*function call)``), ``head`` with each one in turn made
    positive, ``(?=Y)``: where none of those matches at a held match's start, even
    partially, no ``Y`` there is complete or still being written, so each lookahead comes
    out as it does now however the text goes on. ``[]`` for a head with no lookaround;
    None for one :func:`tail_split` does not read (other lookarounds, anchors, ...)."""
    probes = []
    for i, c, _ in _structure(head):
        if c == "(" and head.startswith("(?!", i):
            try:
                body = head[i + 3 : _group_end(head, i)]
            except _Unknown:
                return None
            if any(token in body for token in _HEAD_UNSAFE) or _BACK_REFERENCE.search(body):
                return None
            probes.append(head[:i] + "(?=" + head[i + 3 :])
    rest = head
    for probe in probes:
        rest = rest.replace("(?!", "(?:", 1)
    if any(token in rest for token in _HEAD_UNSAFE):
        return None
    return probes


def tail_splits(pattern: str) -> list[tuple[str, tuple[str, ...]]]:
    r"""``(HEAD, BEFORE)`` for each way a match of ``pattern`` can run to the end of the text:
    the whole pattern is ``HEAD`` + everything (:func:`tail_split`; ``BEFORE`` is empty), or one
    of its top-level alternatives is (``BEFORE``: the alternatives before it, which the regex
    tries first), or it is ``L\s*(?:A1|...|Ak)``, ``L`` a literal or nothing, with no ``Ai``
    able to start with whitespace (then it is ``L\s*A1|...|L\s*Ak``: the run is taken whole
    whichever alternative matches; an ``Ai`` may be ``\Z``, as gigachat3's
    ``\}\s*(?:(?:<\|message_sep\|>|</s>)[\s\S]*|\Z)``) and some ``L\s*Ai`` is. A held match from where ``HEAD`` matched, where no ``BEFORE``
    matches even partially, runs to the end of the text whatever follows. Conservative:
    ``[]`` for what it does not understand."""
    if regex_only(pattern):
        return []
    head = tail_split(pattern)
    if head is not None:
        return [(head, tuple(_lookahead_probes(head) or ()))]
    try:
        branches = _split_alternatives(pattern)
        if len(branches) == 1:
            # LIT\s*(?:A1|...|Ak), LIT a literal or nothing: LIT matches one way, and the
            # run is taken whole whichever alternative matches
            at = pattern.find("\\s*(?:")
            lit, body = pattern[:at], pattern[at + 3 :]
            if at < 0 or (lit and _literal_text(lit) is None) or _group_end(body, 0) != len(body) - 1:
                return []
            alternatives = _split_alternatives(body[3:-1])
            for alternative in alternatives:
                if alternative != "\\Z" and any(regex.match(r"\s", c) for c in _required_firsts(alternative)):
                    return []  # (\Z matches after the whole run only)
            branches = [lit + "\\s*" + alternative for alternative in alternatives]
    except (_Unknown, IndexError):
        return []
    out = []
    for j, branch in enumerate(branches):
        head = tail_split(branch)
        if head is not None:
            out.append((head, tuple(branches[:j]) + tuple(_lookahead_probes(head) or ())))
    return out


def _matches_everything(item: tuple, sre: Any) -> bool:
    """True when the parse-tree ``item`` is a repetition from 0 without bound of one
    character class that holds every character (in a group that captures nothing)."""
    op, arg = item
    while op is sre.SUBPATTERN and arg[0] is None and len(list(arg[-1])) == 1:
        op, arg = list(arg[-1])[0]
    if op not in (sre.MAX_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)):
        return False
    low, high, body = arg
    body = list(body)
    if low != 0 or high != sre.MAXREPEAT or len(body) != 1:
        return False
    op, arg = body[0]
    if op is sre.ANY:
        return True  # DOTALL
    if op is not sre.IN:
        return False
    pairs = (
        {sre.CATEGORY_SPACE, sre.CATEGORY_NOT_SPACE},
        {sre.CATEGORY_WORD, sre.CATEGORY_NOT_WORD},
        {sre.CATEGORY_DIGIT, sre.CATEGORY_NOT_DIGIT},
    )
    categories = {a for o, a in arg if o is sre.CATEGORY}
    return len(categories) == len(list(arg)) and any(pair <= categories for pair in pairs)
