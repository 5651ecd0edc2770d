"""Python source emission: IR -> module source, through jinja2 code templates.

Template data reaches the source only through :func:`literal` (``repr`` of
JSON scalars, rebuilt containers) and comments through :func:`comment_text`
(ASCII-escaped, one line), so nothing a template says can become code.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import string
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import jinja2

import regex

from .ir import CLOSE, Delimiter, Field, State, TemplateIR, Watch
from .regexinfo import (
    lazy_group_split,
    lead,
    may_backtrack,
    regex_only,
    run_holds,
    run_splits,
    skips_ahead,
    tail_splits,
    word_key_head,
    ws_guarded,
)
from .validate import PLACEHOLDER
from ..runtime.scan import REGEX_WS as _REGEX_WS
from ..runtime.scan import SHORT_BEGINNINGS, beginnings as _scan_beginnings

__all__ = ["literal", "render_module", "format_source"]


# --- safe literals -----------------------------------------------------------
#: Containers nested deeper than this are written as JSON text read at run time: Python's
#: parser refuses 200 nested brackets, and black slows down long before that.
MAX_LITERAL_DEPTH = 32


def _depth(value: Any, limit: int) -> int:
    """How deeply ``value``'s dicts and lists nest (counted up to ``limit`` + 1)."""
    if not isinstance(value, (dict, list)) or limit < 0:
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(child, limit - 1) for child in children), default=0)


def literal(value: Any) -> str:
    """A Python expression that evaluates to (a fresh copy of) JSON value ``value``."""
    if isinstance(value, (dict, list)) and _depth(value, MAX_LITERAL_DEPTH) > MAX_LITERAL_DEPTH:
        # too deep for a literal: its JSON text (a str literal) is read when the code runs
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=True)
        return f"_tf.json_value({text!r})"
    return _literal(value)


def _literal(value: Any) -> str:
    if value is None or value is True or value is False:
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(float(value))
    if isinstance(value, (list, tuple)):
        items = ", ".join(_literal(v) for v in value)
        if isinstance(value, tuple):
            return f"({items},)" if len(value) == 1 else f"({items})"
        return f"[{items}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def comment_text(text: str) -> str:
    """Template text made safe for a ``#`` comment: one line, ASCII, escaped."""
    return json.dumps(text, ensure_ascii=True)[1:-1]


def _ident(name: str) -> str:
    ident = re.sub(r"[^0-9A-Za-z_]+", "_", name).strip("_").lower()[:40]
    if not ident or ident[0].isdigit():
        ident = "f_" + ident
    return ident


def _identifiers(fields: list[Field]) -> list[str]:
    """Readable, unique, deterministic identifiers for the fields."""
    seen: set[str] = {"free", "null"}
    out = []
    for f in fields:
        ident = _ident(f.name)
        if ident in seen:
            ident = f"{ident}_{f.index}"
        seen.add(ident)
        out.append(ident)
    return out


# --- transforms ---------------------------------------------------------------
def _placeholder_expr(path: str, each: bool) -> str:
    root, *keys = path.split(".")
    if each:
        expr = f"_tf.member(item, caps, {literal(root)}, {literal(path)})"
    elif root == "content":
        expr = "value"
    else:
        expr = f"_tf.capture(caps, {literal(root)}, {literal(path)})"
    if keys:
        expr = f"_tf.dig({expr}, {literal(tuple(keys))}, {literal(path)})"
    return expr


def transform_expr(node: Any, each: bool) -> str:
    """The transform template ``node`` as one Python expression (evaluation order kept)."""
    if isinstance(node, (dict, list)) and _depth(node, MAX_LITERAL_DEPTH) > MAX_LITERAL_DEPTH:
        # too deep to inline: filled in at run time, the same lookups in the same order
        scope = "item" if each else "None"
        return f"_tf.fill({literal(node)}, value, caps, {scope})"
    if isinstance(node, dict):
        return "{" + ", ".join(f"{literal(k)}: {transform_expr(v, each)}" for k, v in node.items()) + "}"
    if isinstance(node, list):
        return "[" + ", ".join(transform_expr(v, each) for v in node) + "]"
    if isinstance(node, str):
        whole = PLACEHOLDER.fullmatch(node)
        if whole:
            return _placeholder_expr(whole.group(1), each)
    return literal(node)


def _parse_expr(f: Field, parser_name: str) -> tuple[list[str], str]:
    """(module-level preamble, expression of ``body``) for the field's content parser."""
    args = f.content_args
    if f.loose:
        return [
            f"# {comment_text(f.path)}.content_args: not all of them read by the {comment_text(f.content)} parser,",
            "# or not of the types it takes (a TemplateWarning): read as the reference reads them",
            f"{parser_name} = _loose.parser({literal(f.content)}, {literal(args)})",
        ], f"{parser_name}(body)"
    strip = args.get("strip", True)
    clean = "body.strip()" if strip else "body"
    if f.content == "text":
        return [], clean
    if f.content == "int":
        return [], f"int({clean})"
    if f.content == "float":
        return [], f"float({clean})"
    if f.content == "bool":
        return [], f'{clean}.lower() in ("true", "1")'
    hints = ""
    if f.content == "xml-inline" and may_backtrack(args["tag_pattern"]):
        hints = f", {literal({'bounded': True})}"  # matched under the default time bound (finditer)
    elif f.content == "xml-inline" and not regex_only(args["tag_pattern"]):
        split = lazy_group_split(args["tag_pattern"])
        if split is not None:
            found: dict = {"tag_split": split}
            key_head = word_key_head(split[0])
            if key_head is not None:
                found["key_head"] = key_head
            hints = f", {literal(found)}"
    preamble = [
        f"# {comment_text(f.path)}.content: {comment_text(f.content)}, bound once to its content_args",
        f"{parser_name} = _content.make_parser({literal(f.content)}, {literal(args)}{hints})",
    ]
    return preamble, f"{parser_name}(body)"


def _finisher(f: Field, ident: str) -> dict:
    name = f"_finish_{ident}"
    preamble, parsed = _parse_expr(f, f"_parse_{ident}")
    described = f"{comment_text(f.path)}: content {comment_text(f.content)}"
    if not f.has_transform:
        return {"name": name, "preamble": preamble, "comment": described, "body": [f"return {parsed}"]}
    if f.transform_each:
        w = Writer()
        w.line(f"value = {parsed}")
        w.line(f"# {comment_text(f.path)}.transform, applied to each item (transform_each)")
        w.line("out = []")
        with w.block(f"for item in _tf.each(value, {literal(f.name)}):"):
            w.line(f"item = _tf.item(item, {literal(f.name)})")
            w.line(f"out.append({transform_expr(f.transform, True)})")
        w.line("return out")
        body = w.lines
    else:
        body = [
            f"value = {parsed}",
            f"# {comment_text(f.path)}.transform",
            f"return {transform_expr(f.transform, False)}",
        ]
    return {"name": name, "preamble": preamble, "comment": described + ", then transform", "body": body}


# --- scanning -----------------------------------------------------------------
class Writer:
    """Lines of Python source, indented by the blocks they are written in."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._indent = ""

    def line(self, text: str) -> None:
        self.lines.append(self._indent + text)

    @contextlib.contextmanager
    def block(self, header: str) -> Iterator[None]:
        """``header`` (an ``if``/``while``/``else:`` line), then what the ``with`` body writes, one level in."""
        self.line(header)
        outer = self._indent
        self._indent = outer + "    "
        try:
            yield
        finally:
            self._indent = outer


def _describe(d: Delimiter) -> str:
    if d.is_literal:
        shown = ", ".join(comment_text(s) for s in d.literals)
        extra = " (one extends another: a match at the edge waits)" if d.extends else ""
        kind = "literal" if d.kind == "literal" else f"literal set{extra}"
        return f"{comment_text(d.path)}: {kind} {shown}"
    return f"{comment_text(d.path)}: {d.kind.replace('_', '-')} {comment_text(d.pattern or '')}"


def _role(w: Watch) -> str:
    """``open NAME`` / ``close NAME``: what the watch's delimiter does, for comments."""
    return f"{'open' if w.is_open else 'close'} {comment_text(w.field.name)}"


#: the suffix of a generated regex's name when the pattern may backtrack without bound
#: (regexinfo.may_backtrack): its calls go through ``_scan.timed``, under the parser's time
#: bound and budget, which the others do not pay for (a clock read costs the regex module
#: ~1.4 µs a call)
BOUNDED = "_BOUNDED"


def _call(name: str, callee: str, args: str) -> str:
    """``callee(args)``, a call that runs regex ``name``: through ``_scan.timed`` (the time
    bound and the parse's budget) when the regex needs it."""
    return f"_scan.timed(self, {callee}, {args})" if name.endswith(BOUNDED) else f"{callee}({args})"


def _rx(name: str, method: str, args: str, anywhere: str | None = None) -> str:
    """A call of a compiled regex's ``match``/``search``: partial while streaming, plain at end
    of stream (the ``partial=`` keyword costs the regex module ~0.5 µs a call). A partial
    search with an ``anywhere`` variant (the pattern without a required literal) goes through
    ``_scan.search_partial``, linear over a long text."""
    callee = f"{name}.{method}"
    if anywhere is not None:
        streamed = _call(name, "_scan.search_partial", f"{name}, {anywhere}, {args}")
    else:
        streamed = _call(name, callee, args + ", partial=True")
    return f"{_call(name, callee, args)} if eos else {streamed}"


#: characters common in model output: a literal that starts with none of these (``<`` of
#: ``<|channel|>``, ``[`` of ``[TOOL_CALLS]``) is found by way of its first character
_COMMON = frozenset(string.ascii_letters + string.digits + string.whitespace + ".,;:!?'\"()-")


def find_into(w: Writer, var: str, lit: str, start: str, top: str = "") -> None:
    """Write ``var = `` where ``lit`` first occurs in ``buf`` from ``start`` on (and starts by
    ``top``, if given), -1 if nowhere. A literal that starts with a rare character is looked
    for by that character first: CPython finds one character with memchr, about ten times
    quicker than a short literal, which pays where a scan walks a long region body to its
    close. Only when that first occurrence does not start the literal is the literal itself
    searched for, from there on (text full of that character costs one call more)."""
    if len(lit) < 2 or lit[0] in _COMMON:
        w.line(f"{var} = buf.find({literal(lit)}, {start}, {top} + {len(lit)})" if top else f"{var} = buf.find({literal(lit)}, {start})")
        return
    w.line(f"{var} = buf.find({literal(lit[0])}, {start}, {top} + 1)" if top else f"{var} = buf.find({literal(lit[0])}, {start})")
    with w.block(f"if {var} >= 0 and not buf.startswith({literal(lit)}, {var}):"):
        rest = f", {top} + {len(lit)}" if top else ""
        w.line(f"{var} = buf.find({literal(lit)}, {var} + 1{rest})")


def _tail_from(longest: int) -> str:
    """Where a tail of the buffer that may grow into a literal of ``longest`` characters can start."""
    return f"n - {longest - 1} if n - {longest - 1} > pos else pos"


class _ScanWriter(Writer):
    """Writes the body of one state's scan method, watch by watch."""

    def __init__(self, regex_names: dict, memo_slots: dict[str, int], beginnings: dict):
        super().__init__()
        self.regex_names = regex_names
        self.beginnings = beginnings  # literals -> name of the module's set of their beginnings
        self.memo_slots = memo_slots
        self.first = True
        self.free = False  # the free state's scan
        self.single = False  # the state watches one delimiter: commit it directly
        # Ties between candidates that start at one place and are as long are broken by the
        # watches' order (ir.State.watches). The scan checks literals first (cheap, and the
        # first one found bounds the regexes' candidate loops), so where a watch is written
        # after one that ranks below it, the best candidate's rank (``r``) decides the tie.
        self.rank = 0  # this watch's place in the tie-break order
        self.ranked = False  # a watch ranked below this one is written before it
        self.tracks_rank = False  # some watch is: the scan keeps ``r``

    def candidate(self, start: str, end: str, action: int, match: str, length: str = "") -> None:
        entry = f"({start}, {end}, {action}, {match})"
        if self.single:
            with self.block(f"if {start} < hold:"):
                self.line(f"return {entry}")
            return
        if self.first:
            self.line(f"best = {entry}")
        else:
            size = length or f"{end} - {start}"
            wins = f"{size} > best[1] - best[0]"
            if self.ranked:  # as long as the best one: the better ranked wins
                wins = f"{wins} or ({size} == best[1] - best[0] and r > {self.rank})"
            with self.block(f"if best is None or {start} < best[0] or ({start} == best[0] and ({wins})):"):
                self.line(f"best = {entry}")
                self.line(f"lim = {start}")
                if self.tracks_rank:
                    self.line(f"r = {self.rank}")
            return
        self.line(f"lim = {start}")
        if self.tracks_rank:
            self.line(f"r = {self.rank}")

    def hold_at(self, start: str) -> None:
        """Hold the text from ``start`` on, if that is before what is held already."""
        with self.block(f"if {start} < hold:"):
            self.line(f"hold = {start}")

    def tail_in(self, lits: tuple[str, ...], lo: str) -> str:
        """``_scan.tail_in`` over the proper beginnings of ``lits`` (a module-level set)."""
        key = tuple(sorted(set(lits)))
        name = self.beginnings.get(key)
        if name is None:
            name = self.beginnings[key] = f"_BEGINNINGS_{len(self.beginnings)}"
        firsts = "".join(sorted({lit[0] for lit in lits}))
        long = f", {name}_LONG" if _scan_beginnings(key)[1] else ""
        return f"_scan.tail_in(buf, {lo}, {literal(firsts)}, {name}{long})"

    def find(self, var: str, lit: str, top: str = "lim") -> None:
        """``var = buf.find(lit, pos)``; past the first watch, only up to where an occurrence
        could still beat the best candidate (start before it, or at it and be longer)."""
        find_into(self, var, lit, "pos", "" if self.single or self.first else top)

    def watch(self, w: Watch, free: bool) -> None:
        """The scan for one watched delimiter: a candidate, or text held for it."""
        self.line(f"# {_role(w)} -- {_describe(w.delim)}")
        if w.delim.kind == "literal":
            self._watch_literal(w)
        elif w.delim.kind == "literal_set":
            self._watch_literal_set(w)
        else:
            self._watch_regex(w, free)
        self.first = False

    def _watch_literal(self, w: Watch) -> None:
        lit = w.delim.literals[0]
        if self.free and not self.single:
            self._remembered_find(w.delim.path, lit, "i", "" if self.first else "lim")
        else:
            self.find("i", lit)
        with self.block("if i >= 0:"):
            self.candidate("i", f"i + {len(lit)}", w.action, "None", str(len(lit)))
        if len(lit) > 1:  # a one-character literal has no partial form
            with self.block("elif not eos:"):
                self.line(f"# held: a tail of the buffer that may grow into {comment_text(lit)}")
                self.line(f"i = buf.find({literal(lit[0])}, {_tail_from(len(lit))})")
                with self.block("if i >= 0:"):
                    self.line(f"i = _scan.partial_start(buf, i, {literal(lit)})")
                    self.hold_at("i")

    def _remembered_find(self, path: str, lit: str, var: str = "i", top: str = "") -> None:
        """``var = buf.find(lit, pos)`` (up to ``top``, if given, as :meth:`find` does) in the
        free state, whose searches run to the end of the buffer and again each time the
        state is entered (after every tool call): the outcome is remembered
        (``self._memo[slot]``: where the search started, where it found ``lit`` or -1, and
        from where nothing is known, all as offsets into the input), so a later search from
        a place it covers starts where it left off."""
        key = ("find", path, lit)
        slot = self.memo_slots.get(key)
        if slot is None:
            slot = self.memo_slots[key] = len(self.memo_slots)
        end = f"{top} + {len(lit)}" if top else ""
        self.line("# (the last search's outcome is remembered: it is not run through the same text again)")
        self.line("a = pos + self._off")
        self.line(f"f = self._memo[{slot}]")
        with self.block("if f is not None and f[0] <= a and (f[1] >= a or f[1] < 0):"):
            again = f"buf.find({literal(lit)}, f[2] - self._off if f[2] - self._off > pos else pos{', ' + end if end else ''})"
            self.line(f"{var} = f[1] - self._off if f[1] >= 0 else {again}")
        with self.block("else:"):
            find_into(self, var, lit, "pos", top)
        if top:
            # known up to where this search could find it (an occurrence past top is not looked for)
            self.line(f"self._memo[{slot}] = (a, {var} + self._off if {var} >= 0 else -1, "
                      f"({top} + 1 if {top} + {len(lit)} < n else n - {len(lit) - 1}) + self._off)")
            with self.block(f"if {var} > {top}:"):
                self.line(f"{var} = -1  # (remembered past where this search looks)")
        else:
            self.line(f"self._memo[{slot}] = (a, {var} + self._off if {var} >= 0 else -1, n + self._off - {len(lit) - 1})")

    def _watch_literal_set(self, w: Watch) -> None:
        d = w.delim
        self.line("s = -1")
        if not (self.single or self.first):
            # Only at end of stream: a literal of the set found after the best candidate
            # keeps the partial check below from lowering the hold, and while streaming
            # that check could reach before the best candidate.
            self.line("top = lim if eos else n")
        for lit in d.literals:  # longest first: at one position the longest wins
            self.find("i", lit, "top")
            with self.block("if i >= 0 and (s < 0 or i < s):"):
                self.line(f"s, e = i, i + {len(lit)}")
        with self.block("if s >= 0:"):
            if d.extends:
                with self.block("if not eos and e == n:"):
                    self.hold_at("s")
                with self.block("else:"):
                    self.candidate("s", "e", w.action, "None")
            else:
                self.candidate("s", "e", w.action, "None")
        longest = len(d.literals[0])
        if longest > 1:
            with self.block("elif not eos:"):
                self.line("# held: the earliest tail of the buffer that may grow into one of these")
                self.line(f"i = {self.tail_in(tuple(d.literals), _tail_from(longest))}")
                self.hold_at("i")

    def _watch_regex(self, w: Watch, free: bool) -> None:
        d = w.delim
        name = self.regex_names[d.pattern]
        # a search (no lead known) of a whitespace-led pattern runs behind the guard
        # (regexinfo.ws_guarded): the same matches, not tried inside whitespace runs
        searched = self.regex_names.get(("guard", d.pattern), name)
        if d.gap is None:
            self._first_search(searched, d, free)
        else:
            self._memo_check(d)
            with self.block("else:"):
                self._first_search(searched, d, free)
                self._memo_store(d)
        if free and w.is_open and d.lead is None:
            # Progress rule (see docs/parity.md): no zero-width open again where a
            # region just opened and closed without consuming input.
            with self.block("if m is not None and m.end() == m.start() == self._ban - self._off:"):
                again = _rx(searched, "search", "buf, m.start() + 1", self.regex_names.get(("anywhere", searched)))
                self.line(f"m = ({again}) if m.start() < n else None")
        with self.block("if m is not None:"):
            self.line("s, e = m.span()")
            if d.leans:
                self.line("# a complete match before the end of the buffer may still lean on that end:")
                self.line("# it commits only if the buffer with one more character gives it again")
                held = f"if m.partial or (not eos and (e == n or {_call(name, '_scan.edge_moves', f'{name}, buf, m')})):"
            else:
                held = "if m.partial or (e == n and not eos):"
            with self.block(held):
                self.hold_at("s")
            with self.block("else:"):
                # a match with named groups goes along: they join the transform scope (an
                # open's, then a close's, which override the open's)
                self.candidate("s", "e", w.action, "m" if d.groups else "None")

    def _first_search(self, name: str, d: Delimiter, free: bool) -> None:
        """``m`` = the regex's leftmost match from ``pos``: remembered in the free state when
        no lead is known (see :meth:`_remembered_search`)."""
        if free and d.lead is None and "\\G" not in d.pattern:
            self._remembered_search(name, d.path, not any(t in d.pattern for t in ("(?=", "(?!", "(?(")))
        else:
            self._search(name, d.lead, d.path)

    def _search(self, name: str, info: Any, path: str) -> None:
        """``m`` = the regex's leftmost match (whole or partial) from ``pos``, or None."""
        if info is None:
            self.line(f"m = {_rx(name, 'search', 'buf, pos', self.regex_names.get(('anywhere', name)))}")
        else:
            self._candidates(name, info, path)

    def _remembered_search(self, name: str, path: str, streamed: bool) -> None:
        """``m`` = the regex's leftmost match from ``pos`` (as :meth:`_search` with no lead), in
        the free state, whose searches run to the end of the buffer (or to their match) and
        again each time the state is entered (after every tool call): the outcome is
        remembered (``self._memo[slot]``: where the search started and where its match
        starts, or where the buffer ended, as offsets into the input). No match starts between
        those two, for good: none was found there even partially (or the stream had ended),
        and a match's start does not depend on where the search began (a lookbehind sees the
        text before it, ``^`` and ``\\A`` never match past the text's start; behind the
        whitespace guard, a match right after whitespace would imply one a character
        earlier). So a later search from a place that range covers starts at its end.
        Patterns with ``\\G`` are not remembered; those with lookaheads or conditionals
        (not ``streamed``) only from one end-of-stream search to the next (a whole output:
        the text is final), since the regex module may report a partial match at a start it
        rejected on a shorter text when a lookahead reaches the end (``##(?![\\s\\S]*#)``
        from 0: none in ``###``, partial in ``###\\n##...``)."""
        key = ("search", path)
        slot = self.memo_slots.get(key)
        if slot is None:
            slot = self.memo_slots[key] = len(self.memo_slots)
        self.line("# (the last search's outcome is remembered: it is not run through the same text again)")
        self.line("a = pos + self._off")
        self.line(f"f = self._memo[{slot}]")
        known = "f is not None and f[0] <= a <= f[1]" if streamed else "eos and f is not None and f[2] and f[0] <= a <= f[1]"
        self.line(f"k = f[1] - self._off if {known} else pos")
        self.line(f"m = {_rx(name, 'search', 'buf, k', self.regex_names.get(('anywhere', name)))}")
        self.line(f"self._memo[{slot}] = (a, (m.start() if m is not None else n) + self._off, eos)")

    def _memo_check(self, d: Delimiter) -> None:
        """The ``if`` that keeps a remembered held match held; the caller writes its ``else:``."""
        tail = d.gap[1]
        slot = self.memo_slots[d.path]
        self.line(f"# a held match of this pattern is past its head and in the gap before {comment_text(tail)}:")
        self.line("# it stays held (not searched again) until that literal shows up")
        self.line(f"memo = self._memo[{slot}]")
        with self.block("if ("):
            self.line("memo is not None")
            self.line("and not eos")
            self.line("and memo[0] >= pos + self._off")
            probe = f"max(memo[1] - self._off - {len(tail) - 1}, memo[0] - self._off)"
            self.line(f"and buf.find({literal(tail)}, {probe}) < 0")
        with self.block("):"):
            self.line("m = None")
            self.line(f"self._memo[{slot}] = (memo[0], n + self._off)")
            self.hold_at("memo[0] - self._off")

    def _memo_store(self, d: Delimiter) -> None:
        slot = self.memo_slots[d.path]
        head_name = self.regex_names[("head", d.gap[0])]
        with self.block("if m is not None and m.partial:"):
            self.line(f"# remember the held match once its head {comment_text(d.gap[0])} has matched")
            self.line(
                f"self._memo[{slot}] = (m.start() + self._off, n + self._off) "
                f"if {_call(head_name, head_name + '.match', 'buf, m.start()')} is not None else None"
            )
        with self.block("else:"):
            self.line(f"self._memo[{slot}] = None")

    def _candidates(self, name: str, info: Any, path: str = "") -> None:
        """Run the regex only where a match can start (see regexinfo.lead): where one of its
        required literal prefixes occurs (found with ``str.find``) when all are longer than
        one character, else where one of its first characters does (skipping places where
        no prefix follows). While streaming, the earliest place where the buffer ends in a
        proper beginning of a prefix is a candidate too (such a beginning is a partial match)."""
        by_prefix = bool(info.prefixes) and all(len(prefix) > 1 for prefix in info.prefixes)
        looked = list(info.prefixes) if by_prefix else sorted(info.firsts)
        shown = ", ".join(comment_text(c) for c in looked)
        lead_in = "whitespace, then " if info.ws else ""
        self.line(f"# every match is {lead_in}one of: {shown}; try the regex only there")
        self.line("m = None")
        if not self.first:
            # past the best candidate or held text, only a complete match that overrides an
            # earlier partial one can change the result
            self.line("bound = hold if best is None or best[0] > hold else best[0]")
        start = "j" if info.ws else "i"  # where a match at this candidate would start
        if self.free and self.first and by_prefix:
            # (the free state's first search runs to the end each time the state is entered)
            for number, prefix in enumerate(looked):
                self._remembered_find(path, prefix, "j" if number else "i")
                if number:
                    with self.block("if j >= 0 and (i < 0 or j < i):"):
                        self.line("i = j")
        else:
            self._find_first(looked, "pos", self._search_top(info) if by_prefix else "")
        with self.block("while i >= 0:"):
            self._try_candidate(name, info, looked, start, by_prefix)
        if by_prefix:
            self._try_tail(name, info, looked, start)
        if info.ws:
            with self.block("if m is None and not eos:"):
                self.line("# a trailing whitespace run may still become a match")
                self.line("i = _scan.ws_run_start(buf, pos, n)")
                self.hold_at("i")

    def _search_top(self, info: Any) -> str:
        """How far the prefix search goes ("": to the end of the buffer)."""
        if self.first:
            return ""
        # the first prefix found past the bound ends the search; for a whitespace-led
        # pattern, past the whitespace run that starts at the bound (a match starts where
        # the run before its prefix does, so within that run it still starts by the bound)
        if not info.ws:
            self.line("top = bound")
        else:
            # (while streaming the buffer is short: not worth a call)
            self.line("top = _scan.ws_run_end(buf, bound) if eos and bound < n else n")
        return "top"

    def _find_first(self, firsts: list[str], start: str, upto: str = "") -> None:
        """``i`` = the first position >= ``start`` (and <= ``upto``, if given) holding one of
        ``firsts`` (-1: none)."""
        if len(firsts) == 1:
            find_into(self, "i", firsts[0], start, upto)
            return
        # (one call that searches them all in widening windows: each literal found
        # separately would be looked for to the end of the buffer when it occurs only far
        # away, at every scan: quadratic in a region's delimiters, see _scan.first_of)
        lead = {c[0] for c in firsts}
        lead = lead.pop() if len(lead) == 1 and next(iter(lead)) not in _COMMON else ""
        top = f", {upto}" if upto else (", -1" if lead else "")
        lead_arg = f", {literal(lead)}" if lead else ""
        self.line(f"i = _scan.first_of(buf, {literal(tuple(firsts))}, {start}{top}{lead_arg})")

    def _try_candidate(self, name: str, info: Any, looked: list[str], start: str, by_prefix: bool) -> None:
        """The candidate loop's body: try the regex at ``i``, keep the leftmost match, find the next ``i``."""
        if info.ws:
            self.line("j = _scan.ws_run_start(buf, pos, i)")
        if not self.first:
            with self.block(f"if {start} > bound and m is None:"):
                self.line("break")
        upto = "top" if by_prefix and not self.first else ""
        if not by_prefix and any(len(prefix) > 1 for prefix in info.prefixes):
            self._skip_unprefixed(info.prefixes, looked, upto)
        elif info.filters:
            # found by a shorter prefix: the regex runs only where a long one starts
            self._skip_unprefixed(info.filters, looked, upto)
        self._try_at(name, info, start)
        with self.block("if c is not None:"):
            with self.block("if not c.partial:"):
                self.line("m = c  # the leftmost complete match")
                self.line("break")
            with self.block("if m is None:"):
                self.line("m = c  # the leftmost partial one, unless a complete one follows")
                if by_prefix and not self.first:
                    # a complete match after it overrides it, and may start anywhere
                    self.line("top = n")
        # the next candidate (past the first watch: up to the same top as the first one)
        self._find_first(looked, "i + 1", upto)

    def _skip_unprefixed(self, prefixes: tuple[str, ...], looked: list[str], upto: str) -> None:
        """Go on to the next candidate (up to ``upto``, if given) when none of ``prefixes``
        starts at ``i`` (nor, while streaming, may still start there)."""
        shown = literal(prefixes[0]) if len(prefixes) == 1 else literal(tuple(prefixes))
        longest = max(len(prefix) for prefix in prefixes)
        with self.block(f"if not buf.startswith({shown}, i) and ("):
            self.line(f"eos or n - i >= {longest} or not _scan.prefix_partial(buf, i, {literal(tuple(prefixes))})")
        with self.block("):"):
            self.line("# no match, whole or partial, can start here: it would begin with one of these")
            self._find_first(looked, "i + 1", upto)
            self.line("continue")

    def _try_tail(self, name: str, info: Any, looked: list[str], start: str) -> None:
        """While streaming, try the regex where the buffer ends in a beginning of a prefix."""
        longest = max(len(prefix) for prefix in looked)
        with self.block("if not eos and (m is None or m.partial):"):
            self.line("# the buffer may end in a prefix being written: a candidate after those above,")
            self.line("# which counts if it comes before a partial match found there")
            self.line(f"i = {self.tail_in(tuple(looked), _tail_from(longest))}")
            with self.block("if i < n and (m is None or i < m.start()):"):
                if info.ws:
                    self.line("j = _scan.ws_run_start(buf, pos, i)")
                # past the first watch, a partial match there holds from its start: nothing
                # changes unless that is before the hold, and not after the best candidate
                guard = f"if {start} <= bound and {start} < hold:"
                with contextlib.nullcontext() if self.first else self.block(guard):
                    self._try_at(name, info, start)
                    with self.block("if c is not None:"):
                        self.line("m = c")

    def _try_at(self, name: str, info: Any, start: str) -> None:
        """``c`` = the regex's match at ``start`` (whole or partial); for a pattern with a
        whitespace lead that not every branch has, also at ``i`` (past the run)."""
        self.line(f"c = {_rx(name, 'match', f'buf, {start}')}")
        if info.ws and not info.all_ws:
            with self.block("if (c is None or c.partial) and j < i:"):
                self.line("# a branch without the whitespace lead may match at the character itself")
                self.line(f"d = {_rx(name, 'match', 'buf, i')}")
                with self.block("if d is not None and (c is None or not d.partial):"):
                    self.line("c = d")


def _state(s: State, idents: list[str], regex_names: dict, memo_slots: dict[str, int], beginnings: dict) -> dict:
    if s.free:
        if s.field is not None:
            title = f"free, in implicit field {comment_text(s.field.name)} (opened lazily)"
        else:
            title = "free, in the null region (text outside every field is dropped)"
        name = "_state_free"
    else:
        title = f"inside {comment_text(s.field.path)}"
        name = f"_state_{idents[s.index]}"
    w = _ScanWriter(regex_names, memo_slots, beginnings)
    if not s.watches:
        w.line("# nothing to watch: every byte belongs to this region until the end")
        w.line("return len(buf)")
    else:
        w.line("n = len(buf)")
        w.line("hold = n")
        w.single = len(s.watches) == 1
        w.free = s.free
        if not w.single:
            w.line("best = None")
            w.line("lim = n  # where the best candidate starts")
        # literals first (see _ScanWriter); the rest in the tie-break order
        order = sorted(range(len(s.watches)), key=lambda k: (not s.watches[k].delim.is_literal, k))
        w.tracks_rank = order != sorted(order)  # some watch is written before one it ranks below
        if w.tracks_rank:
            w.line("r = 0  # the best candidate's rank in the tie-break order")
        highest = -1  # the lowest-ranked watch written so far
        for k in order:
            w.rank = k
            w.ranked = highest > k
            highest = max(highest, k)
            w.watch(s.watches[k], s.free)
        if not w.single:
            with w.block("if best is not None and best[0] < hold:"):
                w.line("return best")
        w.line("return hold")
    watched = ", ".join(_role(watch) for watch in s.watches) or "nothing"
    return {"name": name, "comment": f"State: {title}; watches {watched}.", "body": w.lines}


def _end_state(s: State, idents: list[str], regex_names: dict) -> dict | None:
    """The state's end-of-stream scan, when every watched delimiter starts with one literal
    of two or more characters: only where that literal occurs can anything match, so the
    delimiters are tried there, in order, instead of each searched through the rest of the
    output. None when the state's general scan is used at the end of stream too."""
    if len(s.watches) < 2 and not any(watch.delim.kind == "literal_set" for watch in s.watches):
        return None  # one delimiter: its own search is as selective
    starts: list[str] = []
    for watch in s.watches:
        d = watch.delim
        if d.is_literal:
            starts.extend(d.literals)
        elif d.kind == "regex" and d.lead is not None and not d.lead.ws and d.lead.prefixes:
            starts.extend(d.lead.prefixes)
        else:
            return None
    common = os.path.commonprefix(starts)
    if len(common) < 2:
        return None
    w = Writer()
    w.line("n = len(buf)")
    find_into(w, "k", common, "pos")
    with w.block("while k >= 0:"):
        w.line("best = None")
        for number, watch in enumerate(s.watches):
            w.line(f"# {_role(watch)} -- {_describe(watch.delim)}")
            _end_try(w, watch, number == 0, regex_names)
        with w.block("if best is not None:"):
            w.line("return best")
        find_into(w, "k", common, "k + 1")
    w.line("return n")
    watched = ", ".join(_role(watch) for watch in s.watches)
    return {
        "name": "_end_free" if s.free else f"_end_{idents[s.index]}",
        "comment": f"At end of stream: every delimiter of this state ({watched}) starts with "
        f"{comment_text(common)}; try them where it occurs, leftmost first, the longest at one place.",
        "body": w.lines,
    }


def _end_try(w: Writer, watch: Watch, first: bool, regex_names: dict) -> None:
    """``best`` = the watch's match at ``k`` if it is longer than ``best`` (or the first watch's)."""
    d = watch.delim
    if d.is_literal:
        keyword = "if"
        for lit in d.literals:  # longest first: at one position the longest wins
            test = f"buf.startswith({literal(lit)}, k)"
            if not first:
                test += f" and (best is None or {len(lit)} > best[1] - k)"
            with w.block(f"{keyword} {test}:"):
                w.line(f"best = (k, k + {len(lit)}, {watch.action}, None)")
            keyword = "elif"
        return
    prefixes = d.lead.prefixes
    shown = literal(prefixes[0]) if len(prefixes) == 1 else literal(tuple(prefixes))
    match_arg = "m" if d.groups else "None"
    with w.block(f"if buf.startswith({shown}, k):"):
        name = regex_names[d.pattern]
        w.line(f"m = {_call(name, name + '.match', 'buf, k')}")
        test = "m is not None" if first else "m is not None and (best is None or m.end() - k > best[1] - k)"
        with w.block(f"if {test}:"):
            w.line(f"best = (k, m.end(), {watch.action}, {match_arg})")


def _pending_entry(state: State, regex_names: dict) -> str | None:
    """Source of the state's pending table: ``((prefixes, whitespace-led, regex), ...)`` for
    the regex delimiters a held partial match of which can be re-checked alone (see
    ``runtime.scan.still_pending``), or None."""
    entries = []
    for w in state.watches:
        d = w.delim
        info = d.lead
        if d.kind != "regex" or info is None or d.gap is not None or (info.ws and not info.all_ws):
            continue
        if regex_names[d.pattern].endswith(BOUNDED):
            continue  # (still_pending would match it without the parser's time bound)
        entries.append(f"({literal(tuple(info.prefixes))}, {info.ws}, {regex_names[d.pattern]})")
    if not entries:
        return None
    return "(" + ", ".join(entries) + ",)"


def _run_holds(state: State, regex_names: dict, regexes: list[dict]) -> str:
    """Source of the state's ``runs`` (see runtime/scan.py's State): for each watched regex
    delimiter ``HEAD C+ F...`` (regexinfo.run_splits), the regexes that tell a held match
    inside its run of ``C``, and for each class it repeats read way by way
    (regexinfo.run_holds), ``(RUN, ALIVE, STOPS)``; compiled at module level."""
    entries = []

    def named(name: str, source: str, what: str) -> str:
        # one module-level regex per source (ways of a pattern share what follows a stop)
        for r in regexes:
            if r["pattern"] == source and "_HOLD_" in r["name"]:
                return r["name"]
        regexes.append({"name": name, "pattern": source, "path": comment_text(d.path) + f" (run hold: {what})"})
        return name

    for w in state.watches:
        d = w.delim
        if d.kind != "regex":
            continue
        # (a delimiter matched under the time bound gives no run split, whose regexes are
        # matched without it; a run hold's are each checked instead)
        bounded = regex_names[d.pattern].endswith(BOUNDED)
        for number, (head, run_class, stop, rest) in enumerate([] if bounded else run_splits(d.pattern)):
            names = []
            for suffix, source in (
                ("ALIVE", f"(?:{head}){run_class}*"),
                ("PAST", f"(?:{head}){run_class}*{regex.escape(stop)}"),
                ("REST", f"(?:{rest})"),
                ("RUN", f"{run_class}+"),
            ):
                name = f"{regex_names[d.pattern]}_{suffix}_{number}"
                if not any(r["name"] == name for r in regexes):
                    note = f" (run hold {number}: {suffix.lower()})"
                    regexes.append({"name": name, "pattern": source, "path": comment_text(d.path) + note})
                names.append(name)
            entries.append(f"({', '.join(names)}, {literal(stop)})")
        for number, (run_class, alive, stops) in enumerate(run_holds(d.pattern)):
            # (regexinfo.run_holds: a run of the class read way by way, any start)
            if any(may_backtrack(source) for source in [alive] + [rest for pairs in stops for _, rest in pairs]):
                continue
            base = f"{regex_names[d.pattern]}_HOLD_{number}"
            run_name = named(f"{base}_RUN", f"{run_class}+", "run")
            alive_name = named(f"{base}_ALIVE", alive, "alive")
            ways = []
            for way, pairs in enumerate(stops):
                rests = [f"({literal(stop)}, {named(f'{base}_REST_{way}_{k}', rest, 'rest')})" for k, (stop, rest) in enumerate(pairs)]
                ways.append("(" + "".join(r + ", " for r in rests) + ")")
            entries.append(f"({run_name}, {alive_name}, ({''.join(w + ', ' for w in ways)}))")
    return "(" + "".join(e + ", " for e in entries) + ")" if entries else "()"


def _tail_holds(state: State, regex_names: dict, regexes: list[dict]) -> str:
    """Source of the state's ``tails`` (see runtime/scan.py's State): for each way a watched
    regex delimiter runs to the end (``HEAD`` + everything, regexinfo.tail_splits), the regex
    of ``HEAD`` and those that must not match where it does (the alternatives the delimiter
    tries first, the state's other delimiters), compiled at module level. None of them may be
    matched under the time bound (a held text is matched once, without it)."""

    def named(source: str, note: str) -> str:
        if source in regex_names and not regex_names[source].endswith(BOUNDED):
            return regex_names[source]
        for r in regexes:
            if r["pattern"] == source and r["name"].startswith("_RE_TAIL_"):
                return r["name"]
        regexes.append({"name": f"_RE_TAIL_{len(regexes)}", "pattern": source, "path": note})
        return regexes[-1]["name"]

    def source_of(d: Delimiter) -> str:
        return d.pattern if d.pattern is not None else "|".join(regex.escape(lit) for lit in d.literals)

    entries = []
    for w in state.watches:
        d = w.delim
        if d.kind != "regex":
            continue
        others = [x.delim for x in state.watches if x is not w]
        if any(may_backtrack(source_of(o)) for o in others):
            continue
        for head, before in tail_splits(d.pattern):
            if may_backtrack(head) or any(may_backtrack(b) for b in before):
                continue
            names = [named(head, comment_text(d.path) + " (tail hold: its head)")]
            names += [named(b, comment_text(d.path) + " (tail hold: an alternative tried first)") for b in before]
            names += [named(source_of(o), comment_text(o.path) + " (tail hold: another delimiter)") for o in others]
            entries.append(f"({names[0]}, ({''.join(n + ', ' for n in names[1:])}))")
    return "(" + "".join(e + ", " for e in entries) + ")" if entries else "()"


def _quiet_state(
    s: State, idents: list[str], regex_names: dict, memo_slots: dict[str, int], context: int, tables: list[dict]
) -> dict | None:
    """The state's quiet test (see runtime/scan.py), or None when the compiler cannot write
    one (some watched delimiter may start with anything). ``tables`` collects the module-level
    tables it reads."""
    fast = s.fast
    if fast is None:
        return None
    firsts, ws_led = fast
    ident = "free" if s.free else idents[s.index]
    w = Writer()
    for watch in s.watches:
        d = watch.delim
        if d.gap is not None:
            slot = memo_slots[d.path]
            with w.block(f"if self._memo[{slot}] is not None:"):
                w.line(f"return -1  # a held match of {comment_text(d.path)} in its gap: the scan decides")
    if not firsts:  # nothing watched (or nothing that can match): the scan holds nothing
        w.line("return len(x)")
        return {"name": f"_quiet_{ident}", "comment": "Nothing is watched: nothing is held.", "body": w.lines,
                "ws_hold": False}
    shown = ", ".join(comment_text(c) for c in firsts)
    w.line(f"# every watched delimiter starts with {'whitespace or ' if ws_led else ''}one of: {shown}")
    with w.block("if " + " and ".join(f"{literal(c)} not in x" for c in firsts) + ":"):
        if ws_led:
            # a whitespace-led delimiter may grow from trailing whitespace (the test of the
            # last character inline: a call per chunk costs more than the rest of the test)
            ws = "".join(sorted(_REGEX_WS))
            w.line(f"return len(x) if x[-1] not in {literal(ws)} else _scan.ws_tail(x)")
        else:
            w.line("return len(x)  # none can start in x")
    marks = s.marks
    if marks is None or context != 0:
        # (with look-behind, whether a mark's beginning is held depends on the text before it)
        w.line("return -1")
    else:
        table = f"_QUIET_{ident.upper()}"
        direct, ws_marks = marks
        tables.append({"name": table, "value": f"_scan.quiet_table({literal(marks)})",
                       "comment": f"marks of {'the free state' if s.free else comment_text(s.field.path)}"})
        short, long = _scan_beginnings(
            [lit for watch in s.watches if watch.delim.kind == "literal" for lit in watch.delim.literals]
        )
        if short:
            name = f"_HELD_{ident.upper()}"
            tables.append({"name": name, "value": f"frozenset({literal(tuple(sorted(short)))})",
                           "comment": "the proper beginnings of the literals watched"
                           + (f" (up to {SHORT_BEGINNINGS} characters)" if long else "")})
            test = f"x in {name}"
            if long:
                tables.append({"name": f"{name}_LONG", "value": literal(long),
                               "comment": "the literals watched with longer beginnings (asked with startswith)"})
                test += f" or _scan.long_beginning(x, {name}_LONG)"
            with w.block(f"if {test}:"):
                w.line("return 0  # a literal is being written from the start of x: the scan holds it all")
        w.line("# nothing can commit unless one of its marks occurs in x")
        w.line(f"cut = _scan.quiet_cut(x, {table})")
        pending = _pending_entry(s, regex_names)
        if pending is not None:
            name = f"_PENDING_{ident.upper()}"
            tables.append({"name": name, "value": pending,
                           "comment": "regex delimiters a held partial match of which is re-checked alone"})
            with w.block(f"if cut < 0 and _scan.still_pending(x, {name}, {table}[0]):"):
                w.line("return 0  # a regex delimiter is still being written from the start of x")
        w.line("return cut")
    ws_hold = ws_led and not any(c in _REGEX_WS for c in firsts)
    return {
        "name": f"_quiet_{ident}",
        "comment": "Where the scan of x (input not consumed yet) holds when nothing can commit; -1: scan.",
        "body": w.lines,
        "ws_hold": ws_hold,
    }


def _anchor_body(anchor: Delimiter, regex_names: dict[str, str]) -> list[str]:
    if anchor.kind == "literal" and not _has_border(anchor.literals[0]):
        lit = anchor.literals[0]
        return [
            f"i = prefix.rfind({literal(lit)})",
            f"return prefix if i < 0 else prefix[i + {len(lit)} :]",
        ]
    name = regex_names[anchor.regex_source]
    w = Writer()
    w.line("last = -1")
    # (a prefix is parsed before any parser setting applies: the default time bound)
    bound = ", timeout=_scan.REGEX_TIMEOUT" if name.endswith(BOUNDED) else ""
    with w.block(f"for m in {name}.finditer(prefix{bound}):"):
        w.line("last = m.end()")
    w.line("return prefix if last < 0 else prefix[last:]")
    return w.lines


def _has_border(text: str) -> bool:
    """True when a proper prefix of ``text`` is also a suffix (occurrences may overlap): the
    longest such border, by the prefix function (linear in the length)."""
    border = [0] * len(text)
    k = 0
    for i in range(1, len(text)):
        while k and text[i] != text[k]:
            k = border[k - 1]
        if text[i] == text[k]:
            k += 1
        border[i] = k
    return bool(text) and border[-1] > 0


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("respc.compiler", "codegen"),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters["lit"] = literal
    return env


def render_module(ir: TemplateIR, template: dict, template_hash: str, version: str) -> str:
    """Render the (unformatted) module source for ``ir``."""
    idents = _identifiers(ir.fields)
    regex_names: dict = {}
    memo_slots: dict[str, int] = {}
    memo_info: list[tuple[int, str]] = []  # per memo slot: (state, literal tail)
    regexes = []
    guards: list[dict] = []  # (listed after the others: their numbers stay as they were)

    def add_regex(pattern: str, path: str, ident: str, searched: bool = True) -> None:
        if pattern not in regex_names:
            bounded = may_backtrack(pattern)
            name = f"_RE_{ident.upper()}_{len(regexes)}" + (BOUNDED if bounded else "")
            regex_names[pattern] = name
            note = " (may backtrack without bound: matched under the time bound)" if bounded else ""
            regexes.append({"name": name, "pattern": pattern, "path": comment_text(path) + note})
            if not searched or lead(pattern) is not None:
                return
            searched_name, searched_source = name, pattern
            guarded_source = ws_guarded(pattern)
            if guarded_source is not None:
                # searched (no lead): behind the guards, not tried inside whitespace runs
                guarded = name[: -len(BOUNDED)] + "_WS" + BOUNDED if bounded else name + "_WS"
                regex_names[("guard", pattern)] = guarded
                guards.append(
                    {
                        "name": guarded,
                        "pattern": guarded_source,
                        "path": comment_text(path) + " (searched: not tried inside a whitespace run, see regexinfo.ws_guard)",
                    }
                )
                searched_name, searched_source = guarded, guarded_source
            if not skips_ahead(searched_source):
                # partial searches of long texts: the same matches without a required literal
                # (see runtime/scan.search_partial)
                anywhere = searched_name[: -len(BOUNDED)] + "_ANY" + BOUNDED if bounded else searched_name + "_ANY"
                regex_names[("anywhere", searched_name)] = anywhere
                guards.append(
                    {
                        "name": anywhere,
                        "pattern": searched_source + "|(?!)",
                        "path": comment_text(path) + " (partial searches of long texts, see scan.search_partial)",
                    }
                )

    for f, ident in zip(ir.fields, idents):
        for d, role in ((f.open, "open"), (f.close, "close")):
            if d is not None and d.pattern is not None:
                add_regex(d.pattern, d.path, f"{ident}_{role}")
                if d.gap is not None:
                    memo_slots[d.path] = len(memo_slots)
                    watched_in = len(ir.fields) if (role == "open" or f.implicit) else f.index
                    memo_info.append((watched_in, d.gap[1]))
                    head = ("head", d.gap[0])
                    if head not in regex_names:
                        regex_names[head] = f"_RE_{ident.upper()}_{role.upper()}_HEAD_{len(regexes)}" + (
                            BOUNDED if may_backtrack(d.gap[0]) else ""
                        )
                        regexes.append(
                            {"name": regex_names[head], "pattern": d.gap[0], "path": comment_text(d.path) + " (head)"}
                        )
    anchor = ir.anchor
    if not (anchor.kind == "literal" and not _has_border(anchor.literals[0])):
        add_regex(anchor.regex_source, anchor.path, "anchor", searched=False)
    regexes.extend(guards)

    methods = []  # the Parser's scan and quiet methods
    tables: list[dict] = []  # module-level tables the quiet tests read
    beginnings: dict[tuple[str, ...], str] = {}
    scan_of: dict[int, str] = {}  # IR state index -> its scan, end-of-stream scan, quiet test
    end_of: dict[int, str] = {}
    quiet_of: dict[int, dict | None] = {}
    for s in ir.states:
        if not s.free and s.field.implicit:
            continue  # the implicit field is the free state
        scan = _state(s, idents, regex_names, memo_slots, beginnings)
        methods.append(scan)
        scan_of[s.index] = end_of[s.index] = scan["name"]
        end = _end_state(s, idents, regex_names)
        if end is not None:
            methods.append(end)
            end_of[s.index] = end["name"]
        quiet = quiet_of[s.index] = _quiet_state(s, idents, regex_names, memo_slots, ir.context, tables)
        if quiet is not None:
            methods.append(quiet)
    runs_of: dict[int, str] = {}  # IR state index -> its run holds (see _run_holds)
    for s in ir.states:
        runs_of[s.index] = _run_holds(s, regex_names, regexes)
    tails_of = {s.index: _tail_holds(s, regex_names, regexes) for s in ir.states}  # (see _tail_holds)
    free_state = ir.states[-1]
    state_records = []
    # per runtime state (fields in order, then the free state): the IR state it scans in
    for index, st in enumerate([free_state if f.implicit else ir.states[f.index] for f in ir.fields] + [free_state]):
        quiet = quiet_of[st.index]
        field = index if index < len(ir.fields) else (ir.implicit.index if ir.implicit is not None else CLOSE)
        memos = tuple((slot, tail) for slot, (watched_in, tail) in enumerate(memo_info) if watched_in == index)
        title = f"fields.{comment_text(ir.fields[index].name)}" if index < len(ir.fields) else "the free state"
        if index < len(ir.fields) and ir.fields[index].implicit:
            title += " (the implicit field: never entered, its text is the free state's)"
        state_records.append(
            {
                "comment": title,
                "field": field,
                "scan": scan_of[st.index],
                "end_scan": end_of[st.index],
                "quiet": quiet["name"] if quiet else "None",
                "memos": literal(memos),
                "ws_hold": bool(quiet and quiet["ws_hold"]) or st.ws_lasting,
                "runs": runs_of[st.index],
                "tails": tails_of[st.index],
                "pump": st.ws_pump,
                "any_pump": st.any_pump,
                # (only an unbounded context is cut per state: a bounded one is already short)
                "reach": literal(st.reach) if ir.context < 0 and st.reach is not None else None,
            }
        )
    finishers = [_finisher(f, ident) for f, ident in zip(ir.fields, idents)]
    field_records = [
        {
            "name": literal(f.name),
            "finish": fin["name"],
            "join": literal(f.join),
            "repeats": f.repeats,
            "typed": f.typed,
            "dirty": f.dirty,
        }
        for f, fin in zip(ir.fields, finishers)
    ]
    return _environment().get_template("module.py.j2").render(
        version=version,
        hash=template_hash,
        template=template,
        regexes=regexes,
        beginnings=[
            {
                "name": name,
                "literals": literal(lits),
                "members": literal(tuple(sorted(short))),
                "long": literal(long) if long else None,
            }
            for lits, name in beginnings.items()
            for short, long in [_scan_beginnings(lits)]
        ],
        tables=tables,
        finishers=finishers,
        loose=any(f.loose for f in ir.fields),
        field_list=", ".join(comment_text(f.name) for f in ir.fields),
        field_records=field_records,
        state_records=state_records,
        defaults=ir.defaults,
        required=ir.required,
        context=ir.context,
        one_pass=not any(
            "\\G" in d.pattern for f in ir.fields for d in (f.open, f.close) if d is not None and d.pattern is not None
        ),
        memos=len(memo_slots),
        anchor={"path": comment_text(anchor.path), "body": _anchor_body(anchor, regex_names)},
        methods=methods,
    )


def format_source(source: str) -> str:
    """Format with black (pinned), so the output is stable and reviews well."""
    import black

    mode = black.Mode(line_length=100, target_versions={black.TargetVersion.PY310})
    return black.format_str(source, mode=mode)
