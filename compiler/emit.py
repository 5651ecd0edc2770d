"""Python source emission: IR -> module source, through jinja2 code templates.

Template data reaches the source only through :func:`literal` (``repr`` of
JSON scalars, rebuilt containers) and comments through :func:`comment_text`
(ASCII-escaped, one line), so nothing a template says can become code.
"""

from __future__ import annotations

import json
import math
import os
import re
from functools import lru_cache
from typing import Any

import jinja2

from .ir import CLOSE, Delimiter, Field, State, TemplateIR, Watch
from .regexinfo import lazy_group_split, regex_only, word_key_head
from .validate import PLACEHOLDER

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
    if f.content == "xml-inline" and not regex_only(args["tag_pattern"]):
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
        body = [
            f"value = {parsed}",
            f"# {comment_text(f.path)}.transform, applied to each item (transform_each)",
            "out = []",
            f"for item in _tf.each(value, {literal(f.name)}):",
            f"    item = _tf.item(item, {literal(f.name)})",
            f"    out.append({transform_expr(f.transform, True)})",
            "return out",
        ]
    else:
        body = [
            f"value = {parsed}",
            f"# {comment_text(f.path)}.transform",
            f"return {transform_expr(f.transform, False)}",
        ]
    return {"name": name, "preamble": preamble, "comment": described + ", then transform", "body": body}


# --- scanning -----------------------------------------------------------------
def _describe(d: Delimiter) -> str:
    if d.is_literal:
        shown = ", ".join(comment_text(s) for s in d.literals)
        extra = " (one extends another: a match at the edge waits)" if d.extends else ""
        kind = "literal" if d.kind == "literal" else f"literal set{extra}"
        return f"{comment_text(d.path)}: {kind} {shown}"
    return f"{comment_text(d.path)}: {d.kind.replace('_', '-')} {comment_text(d.pattern or '')}"


def _rx(name: str, method: str, args: str) -> str:
    """A call of a compiled regex's ``match``/``search``: partial while streaming, plain at end
    of stream (the ``partial=`` keyword costs the regex module ~0.5 µs a call)."""
    return f"{name}.{method}({args}) if eos else {name}.{method}({args}, partial=True)"


class _ScanWriter:
    """Writes the body of one state's scan method, watch by watch."""

    def __init__(self, regex_names: dict, memo_slots: dict[str, int], beginnings: dict):
        self.lines: list[str] = []
        self.regex_names = regex_names
        self.beginnings = beginnings  # literals -> name of the module's set of their beginnings
        self.memo_slots = memo_slots
        self.first = True
        self.single = False  # the state watches one delimiter: commit it directly

    def emit(self, line: str, level: int = 0) -> None:
        self.lines.append("    " * level + line)

    def candidate(self, start: str, end: str, action: int, match: str, level: int, length: str = "") -> None:
        entry = f"({start}, {end}, {action}, {match})"
        if self.single:
            self.emit(f"if {start} < hold:", level)
            self.emit(f"return {entry}", level + 1)
        elif self.first:
            self.emit(f"best = {entry}", level)
            self.emit(f"lim = {start}", level)
        else:
            longer = f"{length or f'{end} - {start}'} > best[1] - best[0]"
            self.emit(f"if best is None or {start} < best[0] or ({start} == best[0] and {longer}):", level)
            self.emit(f"best = {entry}", level + 1)
            self.emit(f"lim = {start}", level + 1)

    def tail_in(self, lits: tuple[str, ...], lo: str) -> str:
        """``_base.tail_in`` over the proper beginnings of ``lits`` (a module-level set)."""
        key = tuple(sorted(set(lits)))
        name = self.beginnings.get(key)
        if name is None:
            name = self.beginnings[key] = f"_BEGINNINGS_{len(self.beginnings)}"
        firsts = "".join(sorted({lit[0] for lit in lits}))
        return f"_base.tail_in(buf, {lo}, {literal(firsts)}, {name})"

    def find(self, lit: str, top: str = "lim") -> str:
        """``buf.find(lit, pos)``; past the first watch, only up to where an occurrence could
        still beat the best candidate (start before it, or at it and be longer)."""
        if self.single or self.first:
            return f"buf.find({literal(lit)}, pos)"
        return f"buf.find({literal(lit)}, pos, {top} + {len(lit)})"

    def _find_first(self, firsts: list[str], start: str, level: int, upto: str = "") -> None:
        """``i`` = the first position >= ``start`` (and <= ``upto``, if given) holding one of
        ``firsts`` (-1: none)."""
        if len(firsts) > 1 and start != "pos":
            self.emit(f"k = {start}", level)
            start = "k"

        def find(c: str) -> str:
            return f"buf.find({literal(c)}, {start}, {upto} + {len(c)})" if upto else f"buf.find({literal(c)}, {start})"

        self.emit(f"i = {find(firsts[0])}", level)
        for c in firsts[1:]:
            self.emit(f"j = {find(c)}", level)
            self.emit("if j >= 0 and (i < 0 or j < i):", level)
            self.emit("i = j", level + 1)

    def _candidates(self, name: str, info: Any, level: int) -> None:
        """Run the regex only where a match can start (see regexinfo.lead): where one of its
        required literal prefixes occurs (found with ``str.find``) when all are longer than
        one character, else where one of its first characters does (skipping places where
        no prefix follows). While streaming, the earliest place where the buffer ends in a
        proper beginning of a prefix is a candidate too (such a beginning is a partial match)."""
        by_prefix = bool(info.prefixes) and all(len(prefix) > 1 for prefix in info.prefixes)
        looked = list(info.prefixes) if by_prefix else sorted(info.firsts)
        shown = ", ".join(comment_text(c) for c in looked)
        lead_in = "whitespace, then " if info.ws else ""
        self.emit(f"# every match is {lead_in}one of: {shown}; try the regex only there", level)
        self.emit("m = None", level)
        if not self.first:
            # past the best candidate or held text, only a complete match that overrides an
            # earlier partial one can change the result
            self.emit("bound = hold if best is None or best[0] > hold else best[0]", level)
        start = "j" if info.ws else "i"  # where a match at this candidate would start
        # the first prefix found past the bound ends the search; for a whitespace-led
        # pattern, past the whitespace run that starts at the bound (a match starts where
        # the run before its prefix does, so within that run it still starts by the bound)
        upto = ""
        if by_prefix and not self.first:
            upto = "bound"
            if info.ws:
                # (while streaming the buffer is short: not worth a call)
                self.emit("top = _base.ws_run_end(buf, bound) if eos and bound < n else n", level)
                upto = "top"
        self._find_first(looked, "pos", level, upto)
        self.emit("while i >= 0:", level)
        if info.ws:
            self.emit("j = _base.ws_run_start(buf, pos, i)", level + 1)
        if not self.first:
            self.emit(f"if {start} > bound and m is None:", level + 1)
            self.emit("break", level + 2)
        prefixes = info.prefixes
        if not by_prefix and any(len(prefix) > 1 for prefix in prefixes):
            shown = literal(prefixes[0]) if len(prefixes) == 1 else literal(tuple(prefixes))
            longest = max(len(prefix) for prefix in prefixes)
            self.emit(f"if not buf.startswith({shown}, i) and (", level + 1)
            self.emit(f"eos or n - i >= {longest} or not _base.prefix_partial(buf, i, {literal(tuple(prefixes))})", level + 2)
            self.emit("):", level + 1)
            self.emit("# no match, whole or partial, can start here: it would begin with one of these", level + 2)
            self._find_first(looked, "i + 1", level + 2)
            self.emit("continue", level + 2)
        self._try_at(name, info, start, level + 1)
        self.emit("if c is not None:", level + 1)
        self.emit("if not c.partial:", level + 2)
        self.emit("m = c  # the leftmost complete match", level + 3)
        self.emit("break", level + 3)
        self.emit("if m is None:", level + 2)
        self.emit("m = c  # the leftmost partial one, unless a complete one follows", level + 3)
        self._find_first(looked, "i + 1", level + 1)
        if by_prefix:
            longest = max(len(prefix) for prefix in looked)
            self.emit("if not eos and (m is None or m.partial):", level)
            self.emit("# the buffer may end in a prefix being written: a candidate after those above,", level + 1)
            self.emit("# which counts if it comes before a partial match found there", level + 1)
            lo = f"n - {longest - 1} if n - {longest - 1} > pos else pos"
            self.emit(f"i = {self.tail_in(tuple(looked), lo)}", level + 1)
            self.emit("if i < n and (m is None or i < m.start()):", level + 1)
            if info.ws:
                self.emit("j = _base.ws_run_start(buf, pos, i)", level + 2)
            inner = level + 2
            if not self.first:
                # a partial match there holds from its start: nothing changes unless that is
                # before the hold, and not after the best candidate
                self.emit(f"if {start} <= bound and {start} < hold:", level + 2)
                inner += 1
            self._try_at(name, info, start, inner)
            self.emit("if c is not None:", inner)
            self.emit("m = c", inner + 1)
        if info.ws:
            self.emit("if m is None and not eos:", level)
            self.emit("# a trailing whitespace run may still become a match", level + 1)
            self.emit("i = _base.ws_run_start(buf, pos, n)", level + 1)
            self.emit("if i < hold:", level + 1)
            self.emit("hold = i", level + 2)

    def _try_at(self, name: str, info: Any, start: str, level: int) -> None:
        """``c`` = the regex's match at ``start`` (whole or partial); for a pattern with a
        whitespace lead that not every branch has, also at ``i`` (past the run)."""
        self.emit(f"c = {_rx(name, 'match', f'buf, {start}')}", level)
        if info.ws and not info.all_ws:
            self.emit("if (c is None or c.partial) and j < i:", level)
            self.emit("# a branch without the whitespace lead may match at the character itself", level + 1)
            self.emit(f"d = {_rx(name, 'match', 'buf, i')}", level + 1)
            self.emit("if d is not None and (c is None or not d.partial):", level + 1)
            self.emit("c = d", level + 2)

    def _memo_check(self, w: Watch, d: Delimiter) -> None:
        head, tail = d.gap
        slot = self.memo_slots[d.path]
        self.emit(f"# a held match of this pattern is past its head and in the gap before {comment_text(tail)}:")
        self.emit("# it stays held (not searched again) until that literal shows up")
        self.emit(f"memo = self._memo[{slot}]")
        self.emit("if (")
        self.emit("memo is not None", 1)
        self.emit("and not eos", 1)
        self.emit("and memo[0] >= pos + self._off", 1)
        probe = f"max(memo[1] - self._off - {len(tail) - 1}, memo[0] - self._off)"
        self.emit(f"and buf.find({literal(tail)}, {probe}) < 0", 1)
        self.emit("):")
        self.emit("m = None", 1)
        self.emit("self._memo[" + str(slot) + "] = (memo[0], n + self._off)", 1)
        self.emit("if memo[0] - self._off < hold:", 1)
        self.emit("hold = memo[0] - self._off", 2)
        self.emit("else:")

    def _memo_store(self, d: Delimiter) -> None:
        slot = self.memo_slots[d.path]
        head_name = self.regex_names[("head", d.gap[0])]
        self.emit("if m is not None and m.partial:", 1)
        self.emit(f"# remember the held match once its head {comment_text(d.gap[0])} has matched", 2)
        self.emit(
            f"self._memo[{slot}] = (m.start() + self._off, n + self._off) "
            f"if {head_name}.match(buf, m.start()) is not None else None",
            2,
        )
        self.emit("else:", 1)
        self.emit(f"self._memo[{slot}] = None", 2)

    def watch(self, w: Watch, free: bool) -> None:
        d = w.delim
        role = f"open {comment_text(w.field.name)}" if w.is_open else f"close {comment_text(w.field.name)}"
        self.emit(f"# {role} -- {_describe(d)}")
        # a match with named groups goes along: they join the transform scope (an open's, then
        # a close's, which override the open's)
        match_arg = "m" if d.groups else "None"
        if d.kind == "literal":
            lit = d.literals[0]
            self.emit(f"i = {self.find(lit)}")
            self.emit("if i >= 0:")
            self.candidate("i", f"i + {len(lit)}", w.action, "None", 1, str(len(lit)))
            if len(lit) > 1:  # a one-character literal has no partial form
                self.emit("elif not eos:")
                self.emit(f"# held: a tail of the buffer that may grow into {comment_text(lit)}", 1)
                self.emit(f"i = buf.find({literal(lit[0])}, n - {len(lit) - 1} if n - {len(lit) - 1} > pos else pos)", 1)
                self.emit("if i >= 0:", 1)
                self.emit(f"i = _base.partial_start(buf, i, {literal(lit)})", 2)
                self.emit("if i < hold:", 2)
                self.emit("hold = i", 3)
        elif d.kind == "literal_set":
            self.emit("s = -1")
            if not (self.single or self.first):
                # Only at end of stream: a literal of the set found after the best candidate
                # keeps the partial check below from lowering the hold, and while streaming
                # that check could reach before the best candidate.
                self.emit("top = lim if eos else n")
            for lit in d.literals:  # longest first: at one position the longest wins
                self.emit(f"i = {self.find(lit, 'top')}")
                self.emit("if i >= 0 and (s < 0 or i < s):")
                self.emit(f"s, e = i, i + {len(lit)}", 1)
            self.emit("if s >= 0:")
            if d.extends:
                self.emit("if not eos and e == n:", 1)
                self.emit("if s < hold:", 2)
                self.emit("hold = s", 3)
                self.emit("else:", 1)
                self.candidate("s", "e", w.action, "None", 2)
            else:
                self.candidate("s", "e", w.action, "None", 1)
            longest = len(d.literals[0])
            if longest > 1:
                self.emit("elif not eos:")
                self.emit("# held: the earliest tail of the buffer that may grow into one of these", 1)
                lo = f"n - {longest - 1} if n - {longest - 1} > pos else pos"
                self.emit(f"i = {self.tail_in(tuple(d.literals), lo)}", 1)
                self.emit("if i < hold:", 1)
                self.emit("hold = i", 2)
        else:
            name = self.regex_names[d.pattern]
            info = d.lead
            if d.gap is not None:
                self._memo_check(w, d)
                level = 1
            else:
                level = 0
            if info is None:
                self.emit(f"m = {_rx(name, 'search', 'buf, pos')}", level)
            else:
                self._candidates(name, info, level)
            if d.gap is not None:
                self._memo_store(d)
            if free and w.is_open and info is None:
                # Progress rule (see docs/parity.md): no zero-width open again where a
                # region just opened and closed without consuming input.
                self.emit("if m is not None and m.end() == m.start() == self._ban - self._off:")
                self.emit(f"m = ({_rx(name, 'search', 'buf, m.start() + 1')}) if m.start() < n else None", 1)
            self.emit("if m is not None:")
            self.emit("s, e = m.span()", 1)
            if d.leans:
                self.emit("# a complete match before the end of the buffer may still lean on that end:", 1)
                self.emit("# it commits only if the buffer with one more character gives it again", 1)
                self.emit(f"if m.partial or (not eos and (e == n or _base.edge_moves({name}, buf, m))):", 1)
            else:
                self.emit("if m.partial or (e == n and not eos):", 1)
            self.emit("if s < hold:", 2)
            self.emit("hold = s", 3)
            self.emit("else:", 1)
            self.candidate("s", "e", w.action, match_arg, 2)
        self.first = False


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
    writer = _ScanWriter(regex_names, memo_slots, beginnings)
    if not s.watches:
        writer.emit("# nothing to watch: every byte belongs to this region until the end")
        writer.emit("return len(buf)")
    else:
        writer.emit("n = len(buf)")
        writer.emit("hold = n")
        writer.single = len(s.watches) == 1
        if not writer.single:
            writer.emit("best = None")
            writer.emit("lim = n  # where the best candidate starts")
        for w in s.watches:
            writer.watch(w, s.free)
        if not writer.single:
            writer.emit("if best is not None and best[0] < hold:")
            writer.emit("return best", 1)
        writer.emit("return hold")
    watched = ", ".join(
        f"{'open' if w.is_open else 'close'} {comment_text(w.field.name)}" for w in s.watches
    ) or "nothing"
    return {"name": name, "comment": f"State: {title}; watches {watched}.", "body": writer.lines}


def _end_state(s: State, idents: list[str], regex_names: dict) -> dict | None:
    """The state's end-of-stream scan, when every watched delimiter starts with one literal
    of two or more characters: only where that literal occurs can anything match, so the
    delimiters are tried there, in order, instead of each searched through the rest of the
    output. None when the state's general scan is used at the end of stream too."""
    if len(s.watches) < 2 and not any(w.delim.kind == "literal_set" for w in s.watches):
        return None  # one delimiter: its own search is as selective
    starts: list[str] = []
    for w in s.watches:
        d = w.delim
        if d.is_literal:
            starts.extend(d.literals)
        elif d.kind == "regex" and d.lead is not None and not d.lead.ws and d.lead.prefixes:
            starts.extend(d.lead.prefixes)
        else:
            return None
    common = os.path.commonprefix(starts)
    if len(common) < 2:
        return None
    name = "_end_free" if s.free else f"_end_{idents[s.index]}"
    lines = [
        "n = len(buf)",
        f"k = buf.find({literal(common)}, pos)",
        "while k >= 0:",
        "    best = None",
    ]
    for number, w in enumerate(s.watches):
        d = w.delim
        role = f"open {comment_text(w.field.name)}" if w.is_open else f"close {comment_text(w.field.name)}"
        lines.append(f"    # {role} -- {_describe(d)}")
        first = number == 0
        if d.is_literal:
            keyword = "if"
            for lit in d.literals:  # longest first: at one position the longest wins
                test = f"buf.startswith({literal(lit)}, k)"
                if not first:
                    test += f" and (best is None or {len(lit)} > best[1] - k)"
                lines.append(f"    {keyword} {test}:")
                lines.append(f"        best = (k, k + {len(lit)}, {w.action}, None)")
                keyword = "elif"
        else:
            rx = regex_names[d.pattern]
            prefixes = d.lead.prefixes
            shown = literal(prefixes[0]) if len(prefixes) == 1 else literal(tuple(prefixes))
            match_arg = "m" if d.groups else "None"
            lines.append(f"    if buf.startswith({shown}, k):")
            lines.append(f"        m = {rx}.match(buf, k)")
            test = "m is not None" if first else "m is not None and (best is None or m.end() - k > best[1] - k)"
            lines.append(f"        if {test}:")
            lines.append(f"            best = (k, m.end(), {w.action}, {match_arg})")
    lines += [
        "    if best is not None:",
        "        return best",
        f"    k = buf.find({literal(common)}, k + 1)",
        "return n",
    ]
    watched = ", ".join(f"{'open' if w.is_open else 'close'} {comment_text(w.field.name)}" for w in s.watches)
    return {
        "name": name,
        "comment": f"At end of stream: every delimiter of this state ({watched}) starts with "
        f"{comment_text(common)}; try them where it occurs, leftmost first, the longest at one place.",
        "body": lines,
    }


def _pending_entry(state: State, regex_names: dict) -> str:
    """Source of the state's PENDING entry: ``((prefixes, whitespace-led, regex), ...)``
    for the regex delimiters a held partial match can be re-checked on alone (see
    ``runtime.base.still_pending``), or ``None``."""
    if state.marks is None:
        return "None"
    entries = []
    for w in state.watches:
        d = w.delim
        info = d.lead
        if d.kind != "regex" or info is None or d.gap is not None or (info.ws and not info.all_ws):
            continue
        entries.append(f"({literal(tuple(info.prefixes))}, {info.ws}, {regex_names[d.pattern]})")
    if not entries:
        return "None"
    return "(" + ", ".join(entries) + ",)"


def _anchor_body(anchor: Delimiter, regex_names: dict[str, str]) -> list[str]:
    if anchor.kind == "literal" and not _has_border(anchor.literals[0]):
        lit = anchor.literals[0]
        return [
            f"i = prefix.rfind({literal(lit)})",
            f"return prefix if i < 0 else prefix[i + {len(lit)} :]",
        ]
    name = regex_names[anchor.regex_source]
    return [
        "last = -1",
        f"for m in {name}.finditer(prefix):",
        "    last = m.end()",
        "return prefix if last < 0 else prefix[last:]",
    ]


def _has_border(text: str) -> bool:
    """True when a proper prefix of ``text`` is also a suffix (occurrences may overlap)."""
    return any(text[:k] == text[-k:] for k in range(1, len(text)))


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

    def add_regex(pattern: str, path: str, ident: str) -> None:
        if pattern not in regex_names:
            name = f"_RE_{ident.upper()}_{len(regexes)}"
            regex_names[pattern] = name
            regexes.append({"name": name, "pattern": pattern, "path": comment_text(path)})

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
                        regex_names[head] = f"_RE_{ident.upper()}_{role.upper()}_HEAD_{len(regexes)}"
                        regexes.append(
                            {"name": regex_names[head], "pattern": d.gap[0], "path": comment_text(d.path) + " (head)"}
                        )
    anchor = ir.anchor
    if not (anchor.kind == "literal" and not _has_border(anchor.literals[0])):
        add_regex(anchor.regex_source, anchor.path, "anchor")

    states = []
    scan_table = []
    free_name = "_state_free"
    beginnings: dict[tuple[str, ...], str] = {}
    end_names: dict[int, str] = {}  # IR state index -> its end-of-stream scan
    for s in ir.states:
        if not s.free and s.field.implicit:
            continue  # the implicit field is the free state
        states.append(_state(s, idents, regex_names, memo_slots, beginnings))
        end = _end_state(s, idents, regex_names)
        if end is not None:
            states.append(end)
            end_names[s.index] = end["name"]
    for f, ident in zip(ir.fields, idents):
        scan_table.append(free_name if f.implicit else f"_state_{ident}")
    scan_table.append(free_name)
    free_state = ir.states[-1]
    # per runtime state (fields in order, then the free state): the IR state it scans in
    state_of = [free_state if f.implicit else ir.states[f.index] for f in ir.fields] + [free_state]
    end_table = [end_names.get(st.index, name) for st, name in zip(state_of, scan_table)]
    fast_table = tuple(st.fast for st in state_of)
    marks_table = tuple(st.marks for st in state_of)
    pending_table = [_pending_entry(st, regex_names) for st in state_of]
    finishers = [_finisher(f, ident) for f, ident in zip(ir.fields, idents)]
    return _environment().get_template("module.py.j2").render(
        version=version,
        hash=template_hash,
        template=template,
        regexes=regexes,
        beginnings=[
            {
                "name": name,
                "literals": literal(lits),
                "members": literal(tuple(sorted({lit[:k] for lit in lits for k in range(1, len(lit))}))),
            }
            for lits, name in beginnings.items()
        ],
        finishers=finishers,
        loose=any(f.loose for f in ir.fields),
        field_list=", ".join(comment_text(f.name) for f in ir.fields),
        fields=tuple(f.name for f in ir.fields),
        defaults=ir.defaults,
        required=ir.required,
        implicit=ir.implicit.index if ir.implicit is not None else CLOSE,
        dirty=tuple(f.dirty for f in ir.fields),
        join=tuple(f.join for f in ir.fields),
        repeats=tuple(f.repeats for f in ir.fields),
        typed=tuple(f.typed for f in ir.fields),
        context=ir.context,
        one_pass=not any(
            "\\G" in d.pattern for f in ir.fields for d in (f.open, f.close) if d is not None and d.pattern is not None
        ),
        anchor={"path": comment_text(anchor.path), "body": _anchor_body(anchor, regex_names)},
        states=states,
        scan_table=scan_table,
        end_table=end_table,
        finish_table=[f["name"] for f in finishers],
        fast=fast_table,
        marks=marks_table,
        pending=pending_table,
        memos=len(memo_slots),
        memo_states=tuple(state for state, _ in memo_info),
        memo_tails=tuple(tail for _, tail in memo_info),
    )


def format_source(source: str) -> str:
    """Format with black (pinned), so the output is stable and reviews well."""
    import black

    mode = black.Mode(line_length=100, target_versions={black.TargetVersion.PY310})
    return black.format_str(source, mode=mode)
