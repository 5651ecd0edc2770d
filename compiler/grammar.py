"""The grammar of what a template parses: a Lark grammar (llguidance) from the IR.

``grammar_for(template, tools, ...)`` walks the parser's state machine (compiler/ir.py):
the free state (implicit content, or the null region) and one state per explicit field.
A *step* out of the free state is optional free text, one top-level alternative of an
open delimiter, the field's body and one alternative of its close; the free text is text
that holds no match of any delimiter the free state watches. Each delimiter's regex (the
``regex`` module's syntax, read with Python's own parser) is translated to llguidance's
regex syntax exactly, or :class:`GrammarUnsupported` is raised naming its path.

Lookarounds, ``\\A`` and ``\\Z`` are decided where they stand: every step is written out
once with representative text (a tool name, an instance of the arguments' schema, ``x`` for
free text) and the template's own compiled patterns are run on it, as the parser would run
them: the open must be the earliest match of the free state's watches, the close the first
match of the field's, and a close's lookahead must accept what the next step writes. A
step that fails is not in the grammar; the assertions themselves are then left out of the
written regex. Bodies come from the tools' JSON Schemas (``%json``), the call's name from
the tool names wherever the transform reads it (an open-pattern capture, or a key of the
body), and the call count from ``tool_choice`` and ``parallel_tool_calls``.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import dataclasses
from dataclasses import dataclass, field as dc_field
from typing import Any

import regex

from .ir import CLOSE, Delimiter, Field, TemplateIR, build_ir
from .regexinfo import sre_modules
from .validate import REGEX_FLAGS, TemplateError

__all__ = ["GrammarUnsupported", "grammar_for", "special_token_strings"]


class GrammarUnsupported(TemplateError):
    """No grammar can be built for this template (or these options): the message names
    the template path and why. A subclass of TemplateError (so of ValueError)."""

    def __init__(self, message: str):
        path, _, problem = message.partition(": ")
        super().__init__(path, problem)


_MAX_ALTS = 64
_sre_parse, _sre = sre_modules()
_FIELD_TEXT = "x"  # representative free text / text body
_BODY_TEXT = "r"


# --- regex: parse, split into alternatives, translate -----------------------------
_NAMED = regex.compile(r"\(\?P<(\w+)>")


def _parse(pattern: str, path: str) -> tuple[list, dict[int, str]]:
    """Python's parse tree of ``pattern`` (DOTALL) with repeated group names made unique
    (``name__2``), and {group id: original name}. Parsed once per pattern (the delimiters'
    alternatives and how far back their patterns read both parse each one): the list and
    the dict are the caller's own, the items are shared (never changed)."""
    items, names = _parsed(pattern, path)
    return list(items), dict(names)


@functools.lru_cache(maxsize=1024)
def _parsed(pattern: str, path: str) -> tuple[tuple, dict[int, str]]:
    seen: dict[str, int] = {}

    def rename(m: Any) -> str:
        n = seen[m.group(1)] = seen.get(m.group(1), 0) + 1
        return m.group(0) if n == 1 else f"(?P<{m.group(1)}__{n}>"

    try:
        tree = _sre_parse.parse(_NAMED.sub(rename, pattern), _sre.SRE_FLAG_DOTALL)
    except Exception as error:  # noqa: BLE001 - regex-module-only syntax
        raise GrammarUnsupported(f"{path}: the grammar cannot read this pattern ({error}); use syntax Python's re reads") from None
    names = {gid: (name.rpartition("__")[0] if "__" in name else name) for name, gid in tree.state.groupdict.items()}
    return tuple(tree), names


def _is_anything(item: Any, lazy: bool = False) -> bool:
    """``[\\s\\S]*`` / ``.*`` under DOTALL: any text, to the end (``lazy``: ``.*?`` too)."""
    if isinstance(item[0], str):
        return False
    op, arg = item
    if not (op is _sre.MAX_REPEAT or (lazy and op is _sre.MIN_REPEAT)) or arg[0] != 0 or arg[1] != _sre.MAXREPEAT or len(arg[2]) != 1:
        return False
    sop, sarg = list(arg[2])[0]
    if sop is _sre.ANY:
        return True
    if sop is _sre.IN:
        cats = {a for o, a in sarg if o is _sre.CATEGORY}
        return {_sre.CATEGORY_SPACE, _sre.CATEGORY_NOT_SPACE} <= cats or {_sre.CATEGORY_WORD, _sre.CATEGORY_NOT_WORD} <= cats or {_sre.CATEGORY_DIGIT, _sre.CATEGORY_NOT_DIGIT} <= cats
    return False


def _interesting(items: Any, names: dict, marks: tuple[str, ...]) -> bool:
    """The sub-tree holds a named group, an assertion, an anchor or a marker literal
    (what distribution into alternatives must expose)."""
    for item in items:
        op, arg = item[0], item[1]
        if isinstance(op, str) or op in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT, _sre.GROUPREF) or _is_anything(item):
            return True
        if op is _sre.SUBPATTERN:
            if arg[0] is not None and arg[0] in names:
                return True
            if _interesting(arg[-1], names, marks):
                return True
        elif op is _sre.BRANCH:
            if any(_interesting(b, names, marks) for b in arg[1]):
                return True
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", None)):
            if _interesting(arg[2], names, marks):
                return True
    return bool(marks) and _holds_mark(items, marks)


def _optional_literal(it: Any) -> str | None:
    """The text of an optional literal (``s?``), or None."""
    if not isinstance(it[0], str) and it[0] in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and it[1][:2] == (0, 1) and all(
            x[0] is _sre.LITERAL for x in it[1][2]):
        return "".join(chr(x[1]) for x in it[1][2])
    return None


def _holds_mark(items: Any, marks: tuple[str, ...]) -> bool:
    """The sequence's literal text holds a marker, an optional letter in it (kimi's
    ``<|tool_calls?_section_begin|>``) written or not."""
    for with_optional in (False, True):
        text = []
        for it in items:
            opt = _optional_literal(it)
            if opt is not None:
                text.append(opt if with_optional else "")
            else:
                text.append(chr(it[1]) if it[0] is _sre.LITERAL else "\0")
        if any(m in "".join(text) for m in marks):
            return True
    return False


def _alternatives(items: list, names: dict, marks: tuple[str, ...], path: str) -> list[list]:
    """The top-level alternatives of a sequence: branches and groups distributed, optional
    parts that hold something interesting split into absent | present; named groups kept
    as ``("@group", name, items)``."""
    out: list[list] = [[]]
    # an optional letter here may be inside a marker: the sequence holds one with it, or (a
    # branch whose common lead Python's parser factored out) the letter is part of one
    marky: bool | str = bool(marks) and (_holds_mark(items, marks) or "part")
    for item in items:
        op, arg = item
        choices: list[list] | None = None
        if op is _sre.BRANCH and (marks or _interesting([item], names, marks)):
            choices = [c for b in arg[1] for c in _alternatives(list(b), names, marks, path)]
        elif op is _sre.SUBPATTERN:
            gid, add, delete, sub = arg
            if add & ~_sre.SRE_FLAG_DOTALL or delete:
                raise GrammarUnsupported(f"{path}: inline flags other than (?s) are not translated")
            if gid is not None and gid in names and not _holds_group(sub, names, gid):
                inner = _alternatives(list(sub), names, marks, path)
                choices = [[("@group", names[gid], alt)] for alt in inner]
            else:
                choices = _alternatives(list(sub), names, marks, path)
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and arg[0] == 0 and arg[1] == 1 and (
            _interesting(arg[2], names, marks) or (marky and _optional_literal(item) is not None and (
                marky is True or any(_optional_literal(item) in m for m in marks)))
        ):
            # (with special tokens, an optional literal too: kimi's <|tool_calls?_section_begin|>
            # is two markers, each a token)
            choices = [[]] + _alternatives(list(arg[2]), names, marks, path)
        if choices is None:
            out = [alt + [item] for alt in out]
        else:
            out = [alt + c for alt in out for c in choices]
        if len(out) > _MAX_ALTS:
            raise GrammarUnsupported(f"{path}: more than {_MAX_ALTS} alternatives once distributed")
    return out


def _holds_group(items: Any, names: dict, outer: int) -> bool:
    """A named group nests inside (the outer group is then read through: its parts are
    written one by one, the inner one as a tool name, say)."""
    for op, arg in items:
        if op is _sre.SUBPATTERN:
            if arg[0] is not None and arg[0] in names and arg[0] != outer:
                return True
            if _holds_group(arg[-1], names, outer):
                return True
        elif op is _sre.BRANCH:
            if any(_holds_group(b, names, outer) for b in arg[1]):
                return True
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            if _holds_group(arg[2], names, outer):
                return True
    return False


_META = set("\\.+*?()|[]{}^$#&-~/")


def _char(c: int, in_class: bool = False) -> str:
    ch = chr(c)
    if ch in _META or (in_class and ch in "^-[]"):
        return "\\" + ch
    if c < 0x20 or c == 0x7F:
        return f"\\x{c:02x}"
    return ch


_CATS = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


def _class(items: Any, path: str) -> str:
    parts, negate = [], False
    for op, arg in items:
        if op is _sre.NEGATE:
            negate = True
        elif op is _sre.LITERAL:
            parts.append(_char(arg, True))
        elif op is _sre.RANGE:
            parts.append(f"{_char(arg[0], True)}-{_char(arg[1], True)}")
        elif op is _sre.CATEGORY:
            parts.append(_CATS[str(arg)])
        else:
            raise GrammarUnsupported(f"{path}: class item {op} is not translated")
    return f"[{'^' if negate else ''}{''.join(parts)}]"


def translate(items: Any, path: str, *, contains: bool = False, groups: dict | None = None) -> str:
    """llguidance regex for a parse (sub-)tree. Assertions: left out (they are decided by
    the caller); with ``contains`` a trailing lookahead is written as what it requires (a
    text holding a match of ``A(?=B)`` is a text holding ``AB``), for free text's exclusion."""
    if not contains:
        # (each item's translation on its own, kept per item: a delimiter written with a new
        # tool name is its items translated again, only the name's literals new)
        out = []
        for item in items:
            op = item[0]
            if op is _sre.LITERAL and item[1] != _STUB_ORD:
                out.append(_char(item[1]))
                continue
            hit = _ITEM_TEXT.get(id(item))
            if hit is None or hit[0] is not item:
                if len(_ITEM_TEXT) > 65536:
                    _ITEM_TEXT.clear()
                hit = _ITEM_TEXT[id(item)] = (item, _translate(item, path))
            out.append(hit[1])
        return "".join(out)
    return _translate_items(items, path, contains, groups)


_ITEM_TEXT: dict[int, tuple[Any, str]] = {}  # id(item) -> (item, translated): the items the template caches hold
_STUB_ORD = 0xE000  # (ord of _STUB)


def _translate(item: Any, path: str) -> str:
    return _translate_items([item], path, False, None)


def _translate_items(items: Any, path: str, contains: bool, groups: dict | None) -> str:
    items = list(items)
    out = []
    for index, item in enumerate(items):
        op, arg = item[0], item[1]
        if isinstance(op, str):  # ("@group", name, items)
            out.append("(?:" + translate(item[2], path, contains=contains, groups=groups) + ")")
        elif op is _sre.LITERAL:
            if arg == ord(_STUB):
                raise GrammarUnsupported(f"{path}: a recursive subpattern ((?&name)) is not translated")
            out.append(_char(arg))
        elif op is _sre.NOT_LITERAL:
            out.append(f"[^{_char(arg, True)}]")
        elif op is _sre.ANY:
            out.append("(?s:.)")
        elif op is _sre.IN:
            out.append(_class(arg, path))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", "-")):
            lo, hi, sub = arg
            body = translate(sub, path, contains=contains, groups=groups)
            if hi == _sre.MAXREPEAT:
                q = "*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}"
            elif lo == 0 and hi == 1:
                q = "?"
            else:
                q = f"{{{lo},{hi}}}" if lo != hi else f"{{{lo}}}"
            out.append(f"(?:{body}){q}")
        elif op is _sre.BRANCH:
            out.append("(?:" + "|".join(translate(b, path, contains=contains, groups=groups) for b in arg[1]) + ")")
        elif op is _sre.SUBPATTERN:
            if arg[1] & ~_sre.SRE_FLAG_DOTALL or arg[2]:
                raise GrammarUnsupported(f"{path}: inline flags other than (?s) are not translated")
            out.append("(?:" + translate(arg[3], path, contains=contains, groups=groups) + ")")
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            if contains and op is _sre.ASSERT and arg[0] == 1 and index == len(items) - 1:
                out.append("(?:" + translate(arg[1], path, contains=True, groups=groups) + ")")
        elif op is _sre.AT:
            continue
        elif op is _sre.GROUPREF:
            if contains and groups is not None and arg in groups:
                out.append("(?:" + groups[arg] + ")")
            else:
                raise GrammarUnsupported(f"{path}: a back reference cannot be written in a grammar")
        elif op is getattr(_sre, "ATOMIC_GROUP", "-"):
            out.append("(?:" + translate(arg, path, contains=contains, groups=groups) + ")")
        else:
            raise GrammarUnsupported(f"{path}: regex construct {op} is not translated")
    return "".join(out)


def _group_sources(items: Any, names: dict, path: str, acc: dict | None = None) -> dict:
    """{group id: translated regex} of every group (what a back reference may repeat)."""
    acc = {} if acc is None else acc
    for op, arg in items:
        if op is _sre.SUBPATTERN:
            if arg[0] is not None:
                try:
                    acc[arg[0]] = translate(arg[3], path)
                except GrammarUnsupported:
                    acc[arg[0]] = "(?s:.*)"
            _group_sources(arg[3], names, path, acc)
        elif op is _sre.BRANCH:
            for b in arg[1]:
                _group_sources(b, names, path, acc)
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            _group_sources(arg[2], names, path, acc)
    return acc


def _rep(items: Any, fill: dict[str, str]) -> str | None:
    """A short representative string of a sequence (named groups in ``fill`` written as
    given); None when a back reference or an anchor in the middle makes one unknown."""
    out = []
    for item in items:
        op, arg = item[0], item[1]
        if isinstance(op, str):
            if item[1] in fill:
                out.append(fill[item[1]])
            else:
                sub = _rep(item[2], fill)
                if sub is None:
                    return None
                out.append(sub)
        elif op is _sre.LITERAL:
            out.append(chr(arg))
        elif op is _sre.NOT_LITERAL:
            out.append("a" if chr(arg) != "a" else "b")
        elif op is _sre.ANY:
            out.append("a")
        elif op is _sre.IN:
            ch = _class_char(arg)
            if ch is None:
                return None
            out.append(ch)
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", "-")):
            lo, _, sub = arg
            if lo:
                s = _rep(sub, fill)
                if s is None:
                    return None
                out.append(s * lo)
        elif op is _sre.BRANCH:
            s = _rep(arg[1][0], fill)
            if s is None:
                return None
            out.append(s)
        elif op is _sre.SUBPATTERN:
            s = _rep(arg[3], fill)
            if s is None:
                return None
            out.append(s)
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT):
            continue
        else:
            return None
    return "".join(out)


def _class_char(items: Any) -> str | None:
    return _class_char_of(_class(items, ""))


@functools.lru_cache(maxsize=1024)
def _class_char_of(probe: str) -> str | None:
    """A character the class (as translated) matches, a common one first."""
    compiled = regex.compile(probe, regex.V0)
    for ch in "a_x0 <{\n":
        if compiled.fullmatch(ch):
            return ch
    for c in range(32, 0x250):
        if compiled.fullmatch(chr(c)):
            return chr(c)
    return None


# --- delimiters ---------------------------------------------------------------------
@dataclass
class Alt:
    """One top-level alternative of a delimiter."""

    delim: Delimiter
    index: int
    items: list  # the alternative's items, assertions and anchors included
    end: bool  # ends the output (a ``[\\s\\S]*`` or ``\\Z`` tail)
    consuming: bool  # writes something (not only assertions)
    groups: dict  # gid -> translated regex (back references' exclusion)

    def body(self) -> list:
        """The items written: leading/trailing assertions, anchors and the any-text tail off."""
        cached = self.__dict__.get("_body")
        if cached is None:
            cached = self.__dict__["_body"] = self._body()
        return cached

    @functools.cached_property
    def rep(self) -> str | None:
        """The representative text of the body (no group filled)."""
        return _rep(self.body(), {})

    def _body(self) -> list:
        items = list(self.items)
        while items and not isinstance(items[-1][0], str) and (
            items[-1][0] in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT) or _is_anything(items[-1])
        ):
            items.pop()
        while items and not isinstance(items[0][0], str) and items[0][0] in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT):
            items.pop(0)
        return items


def _delim_alts(d: Delimiter, marks: tuple[str, ...]) -> list[Alt]:
    if d.is_literal:
        items_list = [[(_sre.LITERAL, ord(c)) for c in lit] for lit in d.literals]
        return [Alt(d, i, items, False, True, {}) for i, items in enumerate(items_list)]
    items, names = _parse(d.pattern, d.path)
    groups = _group_sources(items, names, d.path)
    alts = []
    for i, alt in enumerate(_alternatives(items, names, marks, d.path)):
        # a back reference to a named group: written as what fills the group (muse-glimmer's
        # name="get_weather.get_weather" for (?P<name>...)(?:\.(?P=name))?), else refused
        alt = [("@group", names[it[1]], [it]) if not isinstance(it[0], str) and it[0] is _sre.GROUPREF and it[1] in names
               else it for it in alt]
        end = bool(alt) and not isinstance(alt[-1][0], str) and (
            _is_anything(alt[-1]) or (alt[-1][0] is _sre.AT and alt[-1][1] is _sre.AT_END_STRING)
        )
        a = Alt(d, i, alt, end, False, groups)
        a.consuming = bool(a.rep or a.rep is None)
        alts.append(a)
    return alts


_NAME_PH = "\ue0f7"  # a tool name's placeholder in an alternative's pieces and text (see _named_fill)


def _named_fill(alt: Alt, fill: dict) -> tuple[str, str] | None:
    """(group, tool name) when ``fill`` writes one named group of ``alt`` as a name other than
    :data:`_NAME_PH` and the alternative does not hold the placeholder's character (then its
    pieces and representative text with the name are those with the placeholder, the
    placeholder replaced by the name); else None."""
    named = [(k, v) for k, v in fill.items() if k is not None and v is not None]
    if len(named) != 1 or not named[0][1] or _NAME_PH in named[0][1]:
        return None
    source = alt.delim.regex_source
    # (the character, as itself or as an escape: \ue0f7, \U0000e0f7, \x{e0f7}; a class range
    # around it is translated by its ends, and a representative text never picks it)
    if _NAME_PH in source or "e0f7" in source.lower():
        return None
    return named[0]


def _filled_rep(b: "Builder", a: Alt, fill: dict) -> str | None:
    """``_rep(a.body(), fill)``, kept per template; with a tool name, made from the text
    with :data:`_NAME_PH` for it (see :func:`_named_fill`: _rep writes a filled group as given)."""
    key = ("rep", a.delim.path, a.index, tuple(fill.items()), a.__dict__.get("spaced"))
    rep = b.shared.get(key, b)
    if rep is b:
        named = _named_fill(a, fill)
        if named is None:
            rep = _rep(a.body(), fill)
        else:
            base = _filled_rep(b, a, {**fill, named[0]: _NAME_PH})
            rep = None if base is None else base.replace(_NAME_PH, named[1])
        b.shared[key] = rep
    return rep


_PARTS: dict[Any, Any] = {}


def _template_parts(ir: TemplateIR, marks: tuple[str, ...]) -> tuple[dict, dict]:
    """Every delimiter's alternatives and compiled pattern (cached per delimiters and marks)."""
    key = (tuple((d.path, d.regex_source) for f in ir.fields for d in (f.open, f.close) if d is not None), marks)
    hit = _PARTS.get(key)
    if hit is None:
        alts = {}
        compiled = {}
        for f in ir.fields:
            for d in (f.open, f.close):
                if d is not None:
                    alts[d.path] = _delim_alts(d, marks)
                    compiled[d.path] = regex.compile(d.regex_source, REGEX_FLAGS)
        _drop_end_lookaheads(ir, alts)
        split = _split_on_leads(ir, alts, compiled) if not marks else False
        if len(_PARTS) > 256:
            _PARTS.clear()
        hit = _PARTS[key] = (alts, compiled, key)
        _PARTS["split", key] = split
    return hit


def _literal_strings(items: Any, limit: int = 16) -> list[str] | None:
    """The texts a sequence of literals, groups and branches of them matches (None when it
    reads anything else, or more than ``limit`` texts)."""
    out = [""]
    for op, arg in items:
        if op is _sre.LITERAL:
            out = [t + chr(arg) for t in out]
            continue
        if op is _sre.SUBPATTERN and not arg[1] and not arg[2]:
            choices = _literal_strings(arg[3], limit)
        elif op is _sre.BRANCH:
            choices = []
            for b in arg[1]:
                got = _literal_strings(list(b), limit)
                if got is None:
                    return None
                choices += got
        else:
            return None
        if choices is None or len(out) * len(choices) > limit:
            return None
        out = [t + c for t in out for c in choices]
    return out


def _end_markers(alts: list) -> set[str]:
    r"""The markers after which an alternative ends the output (``\s*<|im_end|>[\s\S]*``:
    ``<|im_end|>``): the texts of its literal lead after any leading whitespace run."""
    out = set()
    for a in alts:
        if not a.end:
            continue
        items = list(a.items)
        while items and not isinstance(items[0][0], str) and items[0][0] in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and items[0][1][0] == 0:
            items.pop(0)
        lead = list(itertools.takewhile(lambda it: _literal_strings([it]) is not None, items))
        out.update(t for t in _literal_strings(lead, 64) or () if t)
    return out


def _drop_end_lookaheads(ir: TemplateIR, alts: dict) -> None:
    r"""Leave out of the grammar a close alternative that only looks ahead at the end of the
    turn (qwen3's tool call ``</tool_call>\s*|(?=<|im_end|>)``): it lets the parser end a
    call the model cut with its end-of-turn token, which is no output for the grammar to
    offer (and its empty close after the body's whitespace is a lexeme llguidance's greedy
    lexer could not leave). The parser's patterns (``compiled``) stay whole."""
    ends: set[str] = set()
    for f in ir.fields:
        if f.close is not None:
            ends |= _end_markers(alts[f.close.path])
    if not ends:
        return
    for f in ir.fields:
        if f.close is None or f.close.path not in alts:
            continue
        kept = []
        for a in alts[f.close.path]:
            texts = None
            if len(a.items) == 1 and not isinstance(a.items[0][0], str) and a.items[0][0] is _sre.ASSERT and a.items[0][1][0] == 1:
                texts = _literal_strings(list(a.items[0][1][1]))
            if not (texts and all(t in ends for t in texts)):
                kept.append(a)
        if kept and len(kept) < len(alts[f.close.path]):
            alts[f.close.path] = kept


def _split_on_leads(ir: TemplateIR, alts: dict, compiled: dict) -> bool:
    r"""Free-state delimiters a match of which may begin with the literal lead of an end
    alternative (one that ends the reply) inside a branch or an optional group (hyperclovax's call open ``(?:\s*<|im_end|>\s*<|im_start|>
    assistant)?\s*-> tool...`` beside the end ``\s*<|im_end|>(?!...)[\s\S]*``; gigachat3's
    ``\s*<\|(?:message_sep\|>\s*function call...|function_call\|>)`` beside
    ``\s*<\|message_sep\|>(?!...)``): their branches and the optional groups holding the lead
    are distributed, so that each alternative starts with the lead's items and the step's
    lazy lexeme can be cut where the other's ends (:meth:`Builder.lazy_cuts`). True when
    one was."""
    watched = [w.delim for w in ir.states[-1].watches if not w.delim.is_literal]
    split = False
    leads = {}
    for d in watched:
        for a in alts[d.path]:
            lead = _lead_literal(a.items)
            if a.end and len(lead) >= 3:  # (an end's lazy lexeme, text and all, ends the reply)
                leads.setdefault(lead, set()).add(d.path)
    for d in watched:
        mine = [lead for lead, paths in leads.items() if d.path not in paths
                and compiled[d.path].fullmatch(lead, partial=True) is not None
                and not any(_lead_literal(a.items).startswith(lead) for a in alts[d.path])]
        if mine:
            try:
                alts[d.path] = _delim_alts(d, tuple(sorted(mine)))
            except GrammarUnsupported:
                continue
            split = True
    return split


def _lead_literal(items: list) -> str:
    """The literal text every match of a sequence starts with, after its optional lead-in
    (assertions, anchors, optional runs)."""
    i = 0
    while i < len(items) and not isinstance(items[i][0], str) and (
        items[i][0] in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT) or (items[i][0] in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and items[i][1][0] == 0)
    ):
        i += 1
    out = []
    while i < len(items) and items[i][0] is _sre.LITERAL:
        out.append(chr(items[i][1]))
        i += 1
    return "".join(out)


def _anchored(a: Alt) -> bool:
    r"""The alternative matches at the start of the text only (``\A``): a search from
    anywhere else does not find it."""
    return bool(a.items) and a.items[0] == (_sre.AT, _sre.AT_BEGINNING_STRING)


def _start_ban(alts: list[Alt], path: str) -> str:
    r"""What free text at the start of the text must not start with: a match of the
    alternatives anchored there (assertions relaxed, as :func:`_exclusion` writes them,
    leading runs kept). :func:`_exclusion` leaves them out of what free text must not
    contain: llama3.2-pythonic's ``\A\s*(?=\[name(...)\])`` kept any ``[a(b)]`` out of
    text the parser reads as text (and its ``.*`` made llguidance's lexer stop on random
    text: "too many expressions constructed")."""
    return "|".join(dict.fromkeys(translate(a.items, path, contains=True, groups=a.groups) for a in alts if _anchored(a)))


def _exclusion(alts: list[Alt], path: str, marks: tuple[str, ...] = (), anchored: bool = True) -> str:
    """llguidance regex of what free text must not contain: any match of these alternatives
    (assertions relaxed: a superset of the matches). With ``marks`` (markers written as
    special tokens), an alternative that holds one is kept out by keeping the marker's
    spelling out: a text lexeme cannot hold the token, and text that spells it in bytes
    would read as the marker (gpt-oss's alternatives, written out whole, made the lexer
    too big for llguidance). Without ``anchored``, the alternatives anchored at the text's
    start are left out (see :func:`_start_ban`)."""
    parts = []
    for a in alts:
        if not anchored and _anchored(a):
            continue
        if marks:
            text = "".join(chr(it[1]) if not isinstance(it[0], str) and it[0] is _sre.LITERAL else "\0" for it in a.items)
            held = [m for m in marks if m in text]
            if held:
                parts.append("".join(_char(ord(c)) for c in min(held, key=text.find)))
                continue
        lead = _lead_literal(a.items)
        if len(lead) >= 3:
            # a match that would begin inside the free text and end inside what is written
            # after it (a delimiter, say) is kept out by keeping its literal lead out; every
            # match holds the lead, so that keeps the whole match out too (written out, the
            # match, a lookahead's ``\(.*\)`` say, is derivatives llguidance's lexer builds
            # for every text byte: llama4's <|python_start|> call stopped it on random text)
            parts.append(translate([(_sre.LITERAL, ord(c)) for c in lead], path))
            continue
        items = [it for it in a.items if not _is_anything(it)]
        while items and not isinstance(items[0][0], str) and items[0][0] is _sre.MAX_REPEAT and items[0][1][0] == 0:
            items.pop(0)  # a leading optional run: holding the match means holding the rest
        body = translate(items, path, contains=True, groups=a.groups)
        if not body:
            raise GrammarUnsupported(f"{path}: alternative {a.index} matches the empty text; free text around it cannot be written")
        parts.append(body)
    return "|".join(dict.fromkeys(parts))


# --- tools --------------------------------------------------------------------------
def _tool_list(tools: Any) -> list[dict]:
    out = []
    for index, tool in enumerate(tools or []):
        if not isinstance(tool, dict):
            raise TypeError(f"tools[{index}]: the grammar needs JSON schema tools (dicts), got {type(tool).__name__}")
        fn = tool.get("function", tool)
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tools[{index}]: a tool needs a function name")
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        out.append({"name": name, "parameters": params})
    return out


def _instance(schema: Any, depth: int = 0) -> Any:
    """A small instance of a JSON schema (representative text)."""
    if not isinstance(schema, dict) or depth > 8:
        return "a"
    if "const" in schema:
        return schema["const"]
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return _instance(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        req = schema.get("required", list(props)[:1])
        return {k: _instance(props.get(k, {}), depth + 1) for k in props if k in req}
    if kind == "array":
        return [_instance(schema.get("items", {}), depth + 1)] * max(1, schema.get("minItems", 1))
    if kind == "integer":
        return max(0, schema.get("minimum", 0))
    if kind == "number":
        return max(0, schema.get("minimum", 0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "a"


def _value_kind(schema: Any) -> str:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return kind if isinstance(kind, str) else "any"


# --- the transform: where the call's parts come from ----------------------------------
@dataclass
class CallShape:
    """How a tool-call field's region holds a call (inverted from its transform)."""

    name_group: str | None = None  # the open-pattern capture that is the function name
    body: str = "args"  # "args": content is the arguments; "function": content is {name, arguments}
    #: with transform_each / a content key: the item keys of name/arguments/id
    name_key: tuple[str, ...] = ()
    args_key: tuple[str, ...] = ()
    id_key: tuple[str, ...] = ()
    each: bool = False
    order: tuple[str, ...] = ("id", "name", "args")  # the body's keys in the transform's order


_PH = regex.compile(r"\{(\w+(?:\.\w+)*)\}")


def _call_shape(f: Field) -> CallShape:
    t = f.transform
    path = f"{f.path}.transform"
    if isinstance(t, dict) and "function" not in t and ("name" in t or "arguments" in t):
        t = {"function": {k: v for k, v in t.items() if k in ("name", "arguments")}, **({"id": t["id"]} if "id" in t else {})}
    if not isinstance(t, dict) or not isinstance(t.get("function"), (dict, str)):
        raise GrammarUnsupported(f"{path}: a tool-call field needs a transform with a 'function' (or 'name' and 'arguments') to invert")
    shape = CallShape(each=f.transform_each)

    def source(value: Any, what: str) -> tuple[str, tuple[str, ...]]:
        m = _PH.fullmatch(value) if isinstance(value, str) else None
        if m is None:
            raise GrammarUnsupported(f"{path}: the call's {what} is not a placeholder; it cannot be inverted")
        root, *keys = m.group(1).split(".")
        return root, tuple(keys)

    fn = t["function"]
    if isinstance(fn, dict):
        seen = []
        for key in t:
            if key == "id":
                seen.append("id")
            elif key == "function":
                seen += ["name" if k == "name" else "args" for k in fn if k in ("name", "arguments")]
        shape.order = tuple(dict.fromkeys(seen + ["id", "name", "args"]))
    if isinstance(fn, str):
        root, keys = source(fn, "function")
        if f.transform_each:
            raise GrammarUnsupported(f"{path}: 'function' taken whole from a list item is not inverted")
        if root != "content":
            raise GrammarUnsupported(f"{path}: 'function' from a capture cannot carry arguments")
        shape.body = "function"
        shape.name_key, shape.args_key = (*keys, "name"), (*keys, "arguments")
        return shape
    name_root, name_keys = source(fn.get("name"), "name")
    args_root, args_keys = source(fn.get("arguments"), "arguments")
    if "id" in t:
        id_root, id_keys = source(t["id"], "id")
    else:
        id_root, id_keys = None, ()
    if f.transform_each:
        shape.body = "items"
        shape.name_key, shape.args_key = (name_root, *name_keys), (args_root, *args_keys)
        shape.id_key = (id_root, *id_keys) if id_root else ()
        return shape
    if args_root != "content":
        raise GrammarUnsupported(f"{path}: the arguments come from a capture, not the body; no schema applies")
    if name_root == "content":
        shape.body = "keyed"
        shape.name_key, shape.args_key = name_keys, args_keys
        shape.id_key = id_keys if id_root == "content" else ()
        return shape
    if name_keys:
        raise GrammarUnsupported(f"{path}: a dotted name capture cannot be inverted")
    shape.name_group = name_root
    shape.args_key = args_keys
    if args_keys:
        raise GrammarUnsupported(f"{path}: arguments inside the body of a named call are not inverted")
    return shape


def _nest(keys: tuple[str, ...], schema: dict) -> dict:
    for key in reversed(keys):
        schema = {"type": "object", "properties": {key: schema}, "required": [key]}
    return schema


def _merge(a: dict, b: dict) -> dict:
    """Two object schemas built by _nest, merged."""
    if "properties" not in a or "properties" not in b:
        return a
    props = dict(a["properties"])
    for k, v in b["properties"].items():
        props[k] = _merge(props[k], v) if k in props else v
    return {"type": "object", "properties": props, "required": list(dict.fromkeys(a["required"] + b["required"]))}


def _moved_refs(schema: Any, base: str) -> Any:
    """``schema`` with its local references (``#...``) read from ``base`` on."""
    if isinstance(schema, dict):
        return {k: base + v[1:] if k == "$ref" and isinstance(v, str) and v.startswith("#") else _moved_refs(v, base)
                for k, v in schema.items()}
    if isinstance(schema, list):
        return [_moved_refs(v, base) for v in schema]
    return schema


def _nested_params(tool: dict) -> tuple[dict, str | None]:
    r"""(the tool's parameters as written inside a larger schema, the key of its entry in
    that schema's root ``$defs`` or None). A reference of the parameters (``#/$defs/place``,
    as pydantic writes nested models) points from the root of the document it stands in: a
    call object that nests the parameters moves them, so their references are moved to
    where the root's ``$defs`` holds them (see :func:`_rooted`)."""
    hit = _NESTED.get(id(tool))
    if hit is None or hit[0] is not tool:
        params = tool["parameters"]
        if '"$ref"' not in json.dumps(params):
            hit = (tool, params, None, None)
        else:
            key = "respc-parameters-" + tool["name"]
            base = "#/$defs/" + key.replace("~", "~0").replace("/", "~1")
            hit = (tool, _moved_refs(params, base), key, base)
        if len(_NESTED) > 4096:
            _NESTED.clear()
        _NESTED[id(tool)] = hit
    return hit[1], hit[2]


#: id(tool) -> (tool, moved parameters, $defs key, pointer to it): of :func:`_nested_params`,
#: which every call schema and XML value of a build asks for
_NESTED: dict[int, tuple] = {}


def _rooted(schema: dict, tools: list[dict]) -> dict:
    """A schema of calls (:func:`_call_schema`) with the root ``$defs`` their tools' moved
    references point to (:func:`_nested_params`)."""
    defs = {}
    for tool in tools:
        moved, key = _nested_params(tool)
        if key is not None:
            defs[key] = moved
    return {**schema, "$defs": defs} if defs else schema


def _with_params_defs(schema: Any, tool: dict) -> Any:
    """A part of the tool's parameters (a property's schema) written as a document of its
    own (``%json``), with the root ``$defs`` its moved references point to."""
    moved, key = _nested_params(tool)
    if key is None or not isinstance(schema, dict):
        return schema
    sub = _moved_refs(schema, _NESTED[id(tool)][3])
    return {**sub, "$defs": {**(sub.get("$defs") or {}), key: moved}}


#: keywords that say what a schema is for, not what it admits
_ANNOTATIONS = frozenset(("title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly"))


def _deref(schema: Any, root: Any, path: str) -> Any:
    """``schema`` with the local reference at its top (``{"$ref": "#/$defs/place"}``, as
    pydantic writes a nested model or an enum) read from ``root`` (the tool's parameters),
    its other keywords kept beside the target's."""
    hops = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        if not ref.startswith("#") or root is None:
            raise GrammarUnsupported(f"{path}: a $ref to {ref!r}: only references inside the tool's parameters "
                                     "('#/...') are read; write the schema inline")
        target = root
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise GrammarUnsupported(f"{path}: $ref {ref!r} points at nothing in the tool's parameters")
        rest = {k: v for k, v in schema.items() if k != "$ref" and k not in _ANNOTATIONS}
        schema = {**target, **rest} if rest and isinstance(target, dict) else target
        hops += 1
        if hops > 16:
            raise GrammarUnsupported(f"{path}: $ref {ref!r} refers to itself")
    return schema


def _call_schema(shape: CallShape, tool: dict) -> dict:
    """The JSON schema of one call's object (a body keyed by name/arguments; the tools'
    references to be rooted with :func:`_rooted`)."""
    parts = {"name": _nest(shape.name_key, {"const": tool["name"]}), "args": _nest(shape.args_key, _nested_params(tool)[0])}
    if shape.id_key:
        parts["id"] = _nest(shape.id_key, {"type": "string", "pattern": "^[A-Za-z0-9_\\-]{1,40}$"})
    schema = None
    for part in shape.order:
        if part in parts:
            schema = parts[part] if schema is None else _merge(schema, parts[part])
    return _any_order(schema)


def _any_order(schema: dict) -> dict:
    """The object schema with its properties in any order (llguidance writes ``properties``
    in the schema's order; a model may write the call's keys in another): an ``anyOf`` of
    every ordering, for up to 3 properties."""
    props = schema.get("properties") or {}
    if not 1 < len(props) <= 3:
        return schema
    orders = list(itertools.permutations(props))
    return {"anyOf": [{**schema, "properties": {k: props[k] for k in order}} for order in orders]}


# --- the grammar --------------------------------------------------------------------
@dataclass
class Options:
    tool_choice: str
    parallel: bool
    special: frozenset
    tools: list[dict]


class Builder:
    def __init__(self, template: dict, ir: TemplateIR, options: Options):
        self.t = template
        self.ir = ir
        self.o = options
        self.rules: dict[str, str] = {}
        self.terms: dict[str, str] = {}
        self.term_names: dict[str, str] = {}
        self.rule_names: dict[str, str] = {}
        # markers that llguidance can name as special tokens (<...>); others stay text
        self.marks = tuple(sorted((m for m in options.special if _token_form(m)), key=lambda m: (-len(m), m)))
        self.free = ir.states[-1]
        self.alts, self.compiled, self.key = _template_parts(ir, self.marks)
        self.split = _PARTS.get(("split", self.key), False)  # (see _split_on_leads)
        self.calls = next((f for f in ir.fields if f.name == "tool_calls"), None)
        self.shape = _call_shape(self.calls) if self.calls is not None else None
        watches = [w.delim for w in self.free.watches]
        self.refused: list[GrammarUnsupported] = []
        self.open_failed = False  # (set by try_step when another delimiter is read where a step's open starts)
        self.open_tie = False
        self.pruned = False  # (set when rules or terms were named that the grammar may not use)
        self.seq_cache: dict[Any, list[str]] = {}
        self.releads: dict[Any, list] = {}  # (see _relead)
        self.plans: dict[int, tuple] = {}  # (see _plan)
        self.text_closes: dict[int, list] = {}  # (see _field_close)
        self.close_seqs: dict[int, list] = {}  # (see _field_close)
        self.open_parts: dict[Any, tuple] = {}  # (see _open_part)
        self.rests: dict[int, tuple] = {}  # (see _rest)
        self.search_log: list | None = None  # [(pattern, text, pos)] searched, while a node's outcomes are computed
        self.text_terms: dict[Any, str] = {}
        # a ban (see text_term) -> the texts it also bans whole (see _held_steps)
        self.ban_wholes: dict[str, str] = {}
        self.body_cache: dict[Any, Any] = {}
        self.calls_written: list[bool] = []
        # closes of explicit fields: no free-text lexeme competes with their pieces
        self.field_closes = {f.close.path for f in ir.fields if f.close is not None and not f.implicit}
        self.shared = _PARTS.setdefault(("shared", self.key), {})  # what depends on the template (and tool names)
        if len(self.shared) > 16384:
            self.shared.clear()
        key = ("free", tuple(d.path for d in watches))
        if key not in self.shared:
            free_alts = [a for d in watches for a in self.alts[d.path]]
            self.shared[key] = (_exclusion(free_alts, "free state", self.marks, anchored=False),
                                _start_ban(free_alts, "free state")) if watches else ("", "")
        # what free text must not contain; what free text at the text's start must not start with
        self.free_excl, self.start_ban = self.shared[key]
        self.empty: dict[str, bool] = self.shared.setdefault("empty", {})  # translated regex -> matches ""

    @functools.cached_property
    def once(self) -> frozenset:
        """The fields that open once (do not repeat): what of the fields used a node's
        steps depend on."""
        return frozenset(f.index for f in self.ir.fields if not f.repeats)

    def reach_back(self) -> int | None:
        """How far before where a search starts a delimiter pattern may read (see
        :func:`_reach_back`), None when unbounded (a ``(?<=...\\s*)``)."""
        key = ("reach-back",)
        hit = self.shared.get(key, self)
        if hit is self:
            reaches = [_reach_back(a.items) for alts in self.alts.values() for a in alts]
            hit = self.shared[key] = None if None in reaches else max(reaches, default=0)
        return hit

    # names
    def term(self, body: str) -> str:
        name = self.term_names.get(body)
        if name is None:
            name = self.term_names[body] = f"T{len(self.term_names)}"
            self.terms[name] = body
        return name

    def rule(self, body: str, lazy: bool = False) -> str:
        key = ("L" if lazy else "") + body
        name = self.rule_names.get(key)
        if name is None:
            name = self.rule_names[key] = f"r{len(self.rule_names)}"
            self.rules[name + ("[lazy]" if lazy else "")] = body
        return name

    # pieces of a delimiter alternative
    def pieces(self, alt: Alt, fill: dict[str, str | None], cut: int = 0, led: bool = False) -> list[tuple[str, str]]:
        """[("re", regex) | ("tok", marker) | ("lit", text)] of an alternative; a named
        group in ``fill`` is written as that literal (None: by its regex); ``cut``: the
        first run is also cut after that many items; ``led``: text comes before it (the
        first run, a lazy lexeme with the text, stops before a tool's name)."""
        if led:
            key = ("led pieces", id(alt), alt.delim.path in self.field_closes,
                   tuple(sorted((k, v) for k, v in fill.items() if k is not None)), cut)
            hit = self.shared.get(key)
            if hit is None or hit[0] is not alt:
                led_pieces = self._named_pieces(alt, fill, cut, led=True) if _names_written(fill) else self.pieces(alt, fill, cut)
                hit = self.shared[key] = (alt, led_pieces)
            return hit[1]
        known = self.alts.get(alt.delim.path)
        if "spaced" in alt.__dict__ or "written" in alt.__dict__ or "behind" in alt.__dict__:
            # a delimiter's alternative with runs written as a space, or what is left of it
            # after the held text: kept by its items (kept with it), cut as asked
            key = ("variant pieces", alt.delim.path, id(alt.items), tuple(sorted(fill.items())), cut)
            hit = self.shared.get(key)
            if hit is None or hit[0] is not alt.items:
                hit = self.shared[key] = (alt.items, self._named_pieces(alt, fill, cut))
            return hit[1]
        if not known or alt.index >= len(known) or known[alt.index] is not alt:
            # a tag pattern's part (not a delimiter's alternative): kept by its items, which
            # tag_parts keeps per template (never cut)
            key = ("tag pieces", alt.delim.path, id(alt.items), tuple(sorted(fill.items())))
            hit = self.shared.get(key)
            if hit is None or hit[0] is not alt.items:
                hit = self.shared[key] = (alt.items, self._pieces(alt, fill))
            return hit[1]
        key = ("pieces", alt.delim.path, alt.index, alt.delim.path in self.field_closes,
               tuple(sorted((k, v) for k, v in fill.items() if k is not None)), cut)
        hit = self.shared.get(key)  # what depends on the template, the markers, the fill and the cut only
        if hit is None:
            hit = self.shared[key] = self._named_pieces(alt, fill, cut)
        return hit

    def _named_pieces(self, alt: Alt, fill: dict[str, str | None], cut: int, led: bool = False) -> list[tuple[str, str]]:
        """:meth:`_pieces` of an alternative; one with a tool name filled in is made from its
        pieces with :data:`_NAME_PH` for the name (made once per template), the name put in
        where the placeholder is: the name's literals are translated one by one, so that is
        the same text, and a new tool name costs a replace. Not with markers (a name may
        hold one), nor for an alternative that holds the placeholder's character."""
        named = _named_fill(alt, fill)
        if named is None or self.marks:
            return self._pieces(alt, fill, cut, led)
        group, name = named
        written = "".join(_char(ord(c)) for c in name)
        out = []
        for kind, text in self.pieces(alt, {**fill, group: _NAME_PH}, cut, led):
            if kind != "tok" and _NAME_PH in text:
                new = text.replace(_NAME_PH, written)
                if kind == "re":
                    self.empty.setdefault(new, self.empty[text])  # (as _pieces records it)
                text = new
            out.append((kind, text))
        return out

    def _pieces(self, alt: Alt, fill: dict[str, str | None], forced: int = 0, led: bool = False) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        run: list = []

        def flush(token: str | None = None) -> None:
            if run:
                cut = len(run)
                if not out:
                    # the first run goes into a lazy lexeme with the text before it, which
                    # ends as soon as it matches: it stops at the run's last literal, and
                    # what may follow that (an optional tail, a whitespace run) is its own
                    last = [i for i, it in enumerate(run) if _fixed(it)]
                    if last:
                        cut = last[-1] + 1
                        ends = [i for i, it in enumerate(run) if len(it) == 5 and it[2] is _NAME_END]
                        if ends and (led or ends[0] == last[-1]):
                            # a tool's name: the lazy lexeme of the text and the open
                            # stops before it, so that one lexeme serves every tool (one per
                            # tool ran llguidance's lexer out of fuel at 5-20 tools), and one
                            # that ended at get_weather would leave no way on to
                            # get_weather_x; without text before it, only a name that ends
                            # the open (the lexeme ends where the free text's lexeme, which
                            # excludes the whole open, ends: llguidance does not go back to
                            # a shorter lexeme once a longer one goes on)
                            start = ends[0] + 1 - run[ends[0]][4]
                            before = [i for i in last if i < start]
                            if before:
                                cut = before[-1] + 1
                    shared = min(self.shared_lead(alt), len(run))
                    lit = shared
                    while lit and not _fixed(run[lit - 1]):
                        lit -= 1
                    # another alternative starts as this one does (olmo3's ")" and
                    # ")\s*</function_calls>"): both are cut where they part, so that what
                    # follows decides between them (llguidance drops a lexeme that ends
                    # where another goes on); a lazy lexeme ends at a literal
                    if 0 < forced < cut:
                        parts = (run[:forced], run[forced:cut], run[cut:])
                    elif shared >= cut:
                        parts = (run[:cut], run[cut:shared], run[shared:])
                    elif lit:
                        parts = (run[:lit], run[lit:cut], run[cut:])
                    else:
                        parts = (run[:cut], run[cut:])
                else:
                    parts = (run,)
                for n, part in enumerate(parts):
                    text = translate(part, alt.delim.path) if part else ""
                    if text:
                        bans = [_banned_before(part, token, alt.delim.path) if n == len(parts) - 1 else None]
                        # a name written where the parser's greedy group reads it: what follows
                        # in the piece does not go on in the group's class (gpt-oss's
                        # to=functions.NAME(?: ?...[\w-]+)?: no get_timeX)
                        bans += [translate(part[:p + 1], alt.delim.path) + it[3] + "(?s:.*)"
                                 for p, it in enumerate(part[:-1]) if len(it) == 5 and it[2] is _NAME_END]
                        bans = [b for b in bans if b]
                        if bans:
                            out.append(("lx", f"(/{text}/ & " + " & ".join(f"~/{b}/" for b in bans) + ")"))
                        else:
                            out.append(("re", text))
                            self.empty.setdefault(text, _matches_empty(part))
                run.clear()

        items = alt.__dict__.get("written")
        if items is None:
            items = alt.body()
        i = 0
        while i < len(items):
            item = items[i]
            if isinstance(item[0], str) and fill.get(item[1]) is not None:
                # the tool's name, written as literal text of the delimiter's regex (a lexeme
                # of its own would split the delimiter where a greedy part may go on)
                written = [(_sre.LITERAL, ord(c)) for c in fill[item[1]]]
                greedy = _greedy_class(item[2], alt.delim.path)
                if greedy and written:
                    written[-1] = (*written[-1], _NAME_END, greedy, len(written))  # (the name ends here: see flush)
                items = items[:i] + written + items[i + 1:]
                continue
            if self.marks and item[0] is _sre.LITERAL:
                j = i
                while j < len(items) and items[j][0] is _sre.LITERAL:
                    j += 1
                text = "".join(chr(it[1]) for it in items[i:j])
                k = 0
                while k < len(text):
                    hit = next((m for m in self.marks if text.startswith(m, k)), None)
                    if hit:
                        flush(hit)
                        out.append(("tok", hit))
                        k += len(hit)
                    else:
                        run.append(items[i + k])
                        k += 1
                i = j
                continue
            run.append(item)
            i += 1
        flush()
        return out

    def tag_parts(self, pattern: str, path: str) -> tuple[list, dict, Any, list]:
        """_parse_tag and _tag_forms of a tag pattern, kept per template."""
        key = ("tag", pattern, path)
        hit = self.shared.get(key)
        if hit is None:
            items, names, pat = _parse_tag(pattern, path)
            hit = self.shared[key] = (items, names, pat, _tag_forms(items, names, path))
        return hit

    def search(self, pat: Any, text: str, pos: int) -> Any:
        """``pat.search(text, pos)``, remembered per template: the representative texts
        repeat across tool lists (the same names, schemas of the same shape)."""
        key = ("search", pat.pattern, text, pos)
        hit = self.shared.get(key, self)
        if hit is self:
            hit = self.shared[key] = pat.search(text, pos)
        if self.search_log is not None:
            self.search_log.append((pat, text, pos))
        return hit

    def pattern_reaches(self) -> dict[str, int | None]:
        """{delimiter pattern: how far before a search's start it may read} (see
        :func:`_reach_back`: None when unbounded), per template."""
        key = ("pattern reaches",)
        hit = self.shared.get(key)
        if hit is None:
            hit = {}
            for f in self.ir.fields:
                for d in (f.open, f.close):
                    if d is not None and d.path in self.compiled:
                        try:  # (of the whole pattern's parse, every branch)
                            reach = _reach_back(_parse(d.regex_source, d.path)[0])
                        except GrammarUnsupported:
                            reach = None
                        hit[self.compiled[d.path].pattern] = reach
            self.shared[key] = hit
        return hit

    def shared_lead(self, alt: Alt) -> int:
        r"""How many leading items this alternative shares with another alternative of its
        delimiter that it is a prefix of, or that is a prefix of it, when the shorter one
        holds a lookahead deciding what comes next (0 otherwise): hunyuan-v3's
        ``</tool_call>\s*(?=<tool_call>)`` beside ``</tool_call>\s*</tool_calls>``, llama3.1's
        ``\}\s*(?=[^,\]\}\s])`` beside ``\}\s*;``, apertus's ``\}(?=\s*\]...)\s*`` beside
        ``\}\s*\](?!...)\s*``."""
        return max((n for _, n, _ in self.lead_partners(alt)), default=0)

    def lead_partners(self, alt: Alt) -> list[tuple[Alt, int, bool]]:
        """(other alternative, leading items of ``alt`` shared with it, ``alt`` is the
        shorter) for every cut :meth:`shared_lead` makes (cached per alternative)."""
        known = self.alts.get(alt.delim.path) or []
        if alt.delim.path not in self.field_closes or len(known) < 2 or not any(a is alt for a in known):
            return []  # (a tag pattern's part, say: not a delimiter's alternative)
        key = ("partners", alt.delim.path, alt.index)  # (the template's: its alternatives and field closes)
        hit = self.shared.get(key)
        if hit is not None:
            return hit
        hit = self.shared[key] = []

        def lead(a: Alt) -> list[tuple[str, int]]:
            # (translated item, index in the body) of the items that write something; a
            # lookahead between them (apertus's ``\}(?=...)\s*``) is passed over (kept per
            # alternative: each is compared with every other)
            got = a.__dict__.get("_lead")
            if got is None:
                body = a.body()
                n = 0
                while n < len(body) and not isinstance(body[n][0], str):
                    n += 1
                try:
                    got = [(t, i) for i, t in ((i, translate([it], a.delim.path)) for i, it in enumerate(body[:n])) if t]
                except GrammarUnsupported:
                    got = []
                a.__dict__["_lead"] = got
            return got
        mine = lead(alt)
        for other in known:
            if other is alt:
                continue
            theirs = lead(other)
            n = 0
            while n < min(len(mine), len(theirs)) and mine[n][0] == theirs[n][0]:
                n += 1
            short = alt if len(mine) < len(theirs) else other
            if n and n == min(len(mine), len(theirs)) < max(len(mine), len(theirs)) and _looks_ahead(short):
                hit.append((other, mine[n - 1][1] + 1, short is alt))
        return hit

    def after_short(self, alt: Alt) -> tuple[str, list[str]]:
        r"""What text after ``alt`` must not start with: the rest of a longer alternative
        it was cut from (llama3.1's ``;`` of ``\}\s*;`` after ``\}\s*(?=[^,\]\}\s])``), which
        would otherwise be taken by the text lexeme after the shorter one."""
        rests, first = [], []
        for other, _, short in self.lead_partners(alt):
            if short:
                for o2, n2, _ in self.lead_partners(other):
                    if o2 is alt:
                        body = other.body()
                        end = next((i for i, it in enumerate(body) if isinstance(it[0], str)), len(body))
                        while n2 and not _fixed(body[n2 - 1]):
                            n2 -= 1  # (as _pieces cuts it: after the last literal they share)
                        rest = translate(body[n2:end], other.delim.path)
                        if rest:
                            rests.append(rest)
                        fixed = [i for i in range(n2, end) if _fixed(body[i])]
                        if fixed and not first:
                            first = _written_items(body[n2:fixed[0] + 1], other.delim.path)
        return "|".join(dict.fromkeys(rests)), first

    def seq(self, pieces: list[tuple[str, str]], lead: str | None = None) -> list[str]:
        """Grammar items for pieces; ``lead``: a text regex (an exclusion term) that comes
        first, merged with the first regex piece into one lazy lexeme."""
        items: list[str] = []
        pieces = list(pieces)
        if lead is not None and len(pieces) > 1 and pieces[0][0] == "re" and pieces[1][0] == "tok" and self.nullable(pieces[0][1]):
            pieces.pop(0)  # whitespace before a special token: the text before it holds it
        if lead is not None:
            if pieces and pieces[0][0] == "tok" or not pieces:
                items.append(self.term(lead))
            else:
                kind, text = pieces.pop(0)
                first = "/" + text + "/" if kind == "re" else text if kind == "lx" else json.dumps(text)
                if kind == "lit":
                    first = "/" + regex.escape(text) + "/"
                items.append(self.rule(f"{self.term(lead)} {self.term(first)}", lazy=True))
        for kind, text in pieces:
            if kind == "lx":
                items.append(self.term(text))
            elif kind == "re":
                if self.nullable(text):
                    items.append(self.term(f"(/{text}/ & /(?s:.+)/)") + "?")
                else:
                    items.append(self.term("/" + text + "/"))
            elif kind == "tok":
                items.append(text)  # llguidance's special-token syntax is the token itself: <|im_end|>
            else:
                items.append(json.dumps(text))
        return items

    def nullable(self, text: str) -> bool:
        """A translated regex matches the empty text (known from its items when the builder
        translated it, else read back with the regex module)."""
        hit = self.empty.get(text)
        return _nullable(text) if hit is None else hit

    def delim_seq(self, alt: Alt, fill: dict[str, str], lead: str | None, cut: int = 0) -> list[str]:
        """``seq(pieces(alt, fill, cut), lead)`` of a delimiter's alternative, remembered: both
        only name rules and terms the builder keeps, so a second call gives the same items
        and names nothing new."""
        key = (id(alt), tuple(fill.items()), lead, cut)
        hit = self.seq_cache.get(key)
        if hit is None:
            hit = self.seq_cache[key] = self.seq(self.pieces(alt, fill, cut, led=lead is not None), lead)
        return hit

    def text_term(self, excl: str, nonempty: bool = False, ban: str = "") -> str:
        """Text holding no match of ``excl``; with ``ban``, not starting with a match of it
        (nor being one of the texts ``ban_wholes`` names for it)."""
        key = (excl, nonempty, ban)
        hit = self.text_terms.get(key)
        if hit is None:
            base = "/(?s:.+)/" if nonempty else "/(?s:.*)/"
            text = f"({base} & ~/(?s:.*)(?:{excl})(?s:.*)/)" if excl else base
            whole = self.ban_wholes.get(ban) if ban else None
            if whole:
                text = f"({text} & ~/(?:{whole})/)"
            hit = self.text_terms[key] = f"({text} & ~/(?:{ban})(?s:.*)/)" if ban else text
        return hit


def _reach_back(items: Any) -> int | None:
    """How far before where a match starts the items may read (0: not at all; a
    lookbehind of at most n characters: n, ``\\b``/``\\B``: 1; ``^``/``\\A`` only ask whether
    the search starts the text, 0), None when it is unbounded or not known here."""
    reach = 0
    for item in items:
        op, arg = item[0], item[1]
        sub: Any = ()
        if isinstance(op, str):  # ("@group", name, items)
            sub = item[2]
        elif op in (_sre.LITERAL, _sre.NOT_LITERAL, _sre.ANY, _sre.IN, _sre.GROUPREF):
            continue
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            sub = arg[1]
            if arg[0] < 0:
                try:
                    width = arg[1].getwidth()[1]
                except AttributeError:
                    return None
                if width >= _sre.MAXREPEAT:
                    return None
                reach = max(reach, width)
        elif op is _sre.AT:
            if arg in (_sre.AT_BOUNDARY, _sre.AT_NON_BOUNDARY):
                reach = max(reach, 1)
            elif arg not in (_sre.AT_END, _sre.AT_END_STRING, _sre.AT_BEGINNING, _sre.AT_BEGINNING_STRING):
                return None
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", "-")):
            sub = arg[2]
        elif op is _sre.BRANCH:
            sub = [it for b in arg[1] for it in b]
        elif op is _sre.SUBPATTERN:
            sub = arg[3]
        elif op is getattr(_sre, "ATOMIC_GROUP", "-"):
            sub = arg
        else:
            return None
        inner = _reach_back(sub)
        if inner is None:
            return None
        reach = max(reach, inner)
    return reach


def _fixed(item: Any) -> bool:
    """The item matches text of one length and is never empty (a literal, a class, a group
    or branch of such): a lazy lexeme can end after it (``(?:<|im_end|>|</s>)`` whole)."""
    op, arg = item[0], item[1]
    if isinstance(op, str):
        return False
    if op in (_sre.LITERAL, _sre.NOT_LITERAL, _sre.IN, _sre.ANY):
        return True
    if op is _sre.SUBPATTERN:
        return bool(arg[3]) and _same_width(list(arg[3]))
    if op is _sre.BRANCH:
        return all(b and _same_width(list(b)) for b in arg[1])
    return False


def _same_width(items: list) -> bool:
    return all(_fixed(it) for it in items)


def _rest(self: "Builder", a: Alt) -> list[str]:
    r"""What may follow an alternative that ends the output with ``[\s\S]*``: any text
    (the parser ignores it: an end-of-turn token after ``<|im_end|>``, say). Kept per
    alternative (it names the same rules and terms again)."""
    hit = self.rests.get(id(a))
    if hit is None or hit[0] is not a:
        hit = self.rests[id(a)] = (a, _rest_of(self, a))
    return hit[1]


def _rest_of(self: "Builder", a: Alt) -> list[str]:
    if not a.items or not _is_anything(a.items[-1]):
        return []
    banned = []
    for item in reversed(a.items[:-1]):
        if isinstance(item[0], str) or item[0] not in (_sre.ASSERT, _sre.ASSERT_NOT):
            break
        if item[0] is _sre.ASSERT or item[1][0] != 1:
            return []  # a positive lookahead (or a lookbehind) there: nothing written after
        banned.append(translate(item[1][1], a.delim.path))
    # a negative lookahead before the tail (hyperclovax's (?!\s*<|im_start|>assistant -> tool...)):
    # the text after must not start so
    if self.marks and not banned:
        # markers that are special tokens may follow too (a text lexeme cannot hold one)
        return [self.rule("(" + " | ".join([self.term("/(?s:.+)/"), *self.marks]) + ")*")]
    text = "/(?s:.+)/" if not banned else f"(/(?s:.+)/ & ~/(?:{'|'.join(banned)})(?s:.*)/)"
    if self.marks:
        # the first text, if any, keeps the lookahead (gigachat3's (?!\s*function call)); then
        # tokens, each followed by any text (no two text lexemes side by side, so the first
        # cannot be split to hide what it must not start with)
        toks = "(" + " | ".join(self.marks) + ")"
        return [self.term(text) + "?", self.rule(f"({toks} {self.term('/(?s:.+)/')}?)*")]
    return [self.term(text) + "?"]


def _names_written(fill: dict) -> bool:
    return any(v is not None for k, v in fill.items() if k is not None)


#: the third element of a literal item that ends a written tool name: (LITERAL, code,
#: _NAME_END, the class of what would go on the name, the name's length)
_NAME_END = "name-end"


def _greedy_class(items: list, path: str) -> str | None:
    """The class a named group ends in with a greedy unbounded repeat (``[^<\\s]+``), as
    translated: what, written after the group's text, the group would read as its own."""
    if not items:
        return None
    last = items[-1]
    if isinstance(last[0], str) or last[0] is not _sre.MAX_REPEAT or last[1][1] != _sre.MAXREPEAT or len(last[1][2]) != 1:
        return None
    sub = list(last[1][2])[0]
    if sub[0] not in (_sre.IN, _sre.NOT_LITERAL, _sre.ANY, _sre.LITERAL):
        return None
    try:
        return translate([sub], path)
    except GrammarUnsupported:
        return None


def _banned_before(part: list, token: str | None, path: str) -> str | None:
    r"""What a piece written right before a special token must not be, from a negative
    lookahead in it whose branches are literals running into the token (muse-glimmer's
    ``to=(?!self<|user<)[\w.\-]+<|message|>``: the recipient is not ``self`` nor ``user``),
    as the regex of the whole piece; None when there is none to write so."""
    if token is None:
        return None
    for i, it in enumerate(part):
        if isinstance(it[0], str) or it[0] is not _sre.ASSERT_NOT or it[1][0] != 1:
            continue
        sub = list(it[1][1])
        branches = [list(b) for b in sub[0][1][1]] if len(sub) == 1 and sub[0][0] is _sre.BRANCH else [sub]
        words = []
        for b in branches:
            if not b or any(x[0] is not _sre.LITERAL for x in b):
                return None
            word = "".join(chr(x[1]) for x in b)
            k = next((k for k in range(len(word)) if token.startswith(word[k:])), None)
            if k is None:
                return None  # (a branch that does not run into the token: not written)
            words.append("".join(_char(ord(c)) for c in word[:k]))
        return translate(part[:i], path) + "(?:" + "|".join(words) + ")"
    return None


def _written_items(items: list, path: str, keep_empty: bool = False) -> list[str]:
    """Each item translated (those that write nothing left out, or kept as "")."""
    out = []
    for it in items:
        if isinstance(it[0], str):
            break
        t = translate([it], path)
        if t or keep_empty:
            out.append(t)
    return out


def _looks_ahead(a: Alt) -> bool:
    """The alternative holds a lookahead (what follows it is decided by the next step, so
    the part it shares with a longer alternative can be a lexeme of its own)."""
    return any(not isinstance(it[0], str) and (it[0] in (_sre.ASSERT, _sre.ASSERT_NOT) and it[1][0] == 1
               or it[0] is _sre.AT and it[1] is _sre.AT_END_STRING) for it in a.items)


def _token_form(marker: str) -> bool:
    """llguidance's Lark names a special token as ``<...>``: a marker of that form with no
    ``>`` inside (and no whitespace) can be written so."""
    return len(marker) > 2 and marker[0] == "<" and marker[-1] == ">" and ">" not in marker[1:-1] and not any(c.isspace() for c in marker)


def _matches_empty(items: Any) -> bool:
    """The items, as :func:`translate` writes them, match the empty text (assertions and
    anchors are left out there, so they match it)."""
    for item in items:
        op, arg = item[0], item[1]
        if isinstance(op, str):  # ("@group", name, items)
            empty = _matches_empty(item[2])
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", "-")):
            empty = arg[0] == 0 or _matches_empty(arg[2])
        elif op is _sre.BRANCH:
            empty = any(_matches_empty(b) for b in arg[1])
        elif op is _sre.SUBPATTERN:
            empty = _matches_empty(arg[3])
        elif op is getattr(_sre, "ATOMIC_GROUP", "-"):
            empty = _matches_empty(arg)
        else:
            empty = op in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT)
        if not empty:
            return False
    return True


@functools.lru_cache(maxsize=4096)
def _nullable(text: str) -> bool:
    """The translated regex matches the empty text (read back with the regex module)."""
    try:
        return regex.fullmatch(text, "", regex.V0) is not None
    except regex.error:
        return False


def special_token_strings(special_tokens: Any) -> frozenset:
    """The marker strings that are special tokens: a list of strings, or a tokenizer
    (its added tokens that are special, and its all_special_tokens)."""
    if special_tokens is None:
        return frozenset()
    if isinstance(special_tokens, (list, tuple, set, frozenset)):
        if not all(isinstance(s, str) for s in special_tokens):
            raise TypeError("special_tokens must be a list of str or a tokenizer")
        return frozenset(special_tokens)
    found: set[str] = set()
    added = getattr(special_tokens, "added_tokens_decoder", None)
    if isinstance(added, dict):
        found.update(str(t) for t in added.values() if getattr(t, "special", False))
    for attr in ("all_special_tokens",):
        found.update(getattr(special_tokens, attr, None) or [])
    get = getattr(special_tokens, "get_added_tokens_decoder", None)  # a tokenizers.Tokenizer
    if callable(get):
        found.update(t.content for t in get().values() if getattr(t, "special", False))
    if not found:
        raise TypeError("special_tokens: no special tokens found; pass a list of str or a tokenizer")
    return frozenset(found)


# --- value grammars (xml-inline values, python calls, JSON dialects) -----------------
# (a \u escape of a surrogate is left out: python-call-list refuses a lone one, and the
# character itself can be written)
_JSON_STRING = r'"(?:[^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))*"'
_PY_SQ_STRING = r"'(?:[^'\\\x00-\x1f]|\\['\"\\nrt])*'"
_INT = r"-?(?:0|[1-9][0-9]*)"
_NUM = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
# python-call-list refuses an integer past 2^53 - 1 (more than 17 characters) and a float that
# is infinite (1e999): at most 15 digits before the point and two in the exponent
_PY_INT = r"-?(?:0|[1-9][0-9]{0,14})"
_PY_NUM = r"-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]{1,2})?"


def _int_bounds(schema: dict) -> tuple[int | None, int | None]:
    """The least and greatest integer a schema's bounds admit (None: unbounded)."""
    lo = hi = None
    for key, low in (("minimum", True), ("maximum", False), ("exclusiveMinimum", True), ("exclusiveMaximum", False)):
        v = schema.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
            continue
        exclusive = key.startswith("exclusive") or schema.get("exclusive" + key.capitalize()) is True
        if low:
            n = math.floor(v) + 1 if exclusive else math.ceil(v)
            lo = n if lo is None else max(lo, n)
        else:
            n = math.ceil(v) - 1 if exclusive else math.floor(v)
            hi = n if hi is None else min(hi, n)
    return lo, hi


def _same_length_range(a: str, z: str) -> str:
    """A regex of the decimal numbers from ``a`` to ``z``, both of one length."""
    if a == z:
        return a
    if len(a) == 1:
        return f"[{a}-{z}]"
    if a[0] == z[0]:
        return a[0] + "(?:" + _same_length_range(a[1:], z[1:]) + ")"
    n = len(a) - 1
    parts = [a[0] + "(?:" + _same_length_range(a[1:], "9" * n) + ")"]
    if int(z[0]) - int(a[0]) > 1:
        parts.append(f"[{int(a[0]) + 1}-{int(z[0]) - 1}][0-9]{{{n}}}")
    parts.append(z[0] + "(?:" + _same_length_range("0" * n, z[1:]) + ")")
    return "(?:" + "|".join(parts) + ")"


def _magnitudes(a: int, z: int | None) -> str:
    """A regex of the numbers from ``a`` >= 0 to ``z`` (None: no end), without leading zeros."""
    parts = []
    top = len(str(a)) if z is None else len(str(z))
    for n in range(len(str(a)), top + 1):
        lo, hi = max(a, 10 ** (n - 1) if n > 1 else 0), 10 ** n - 1 if z is None else min(z, 10 ** n - 1)
        if lo <= hi:
            parts.append(_same_length_range(str(lo), str(hi)))
    if z is None:
        parts.append(f"[1-9][0-9]{{{top},}}")
    return "|".join(parts)


def _int_regex(lo: int | None, hi: int | None, path: str) -> str:
    """A regex of the integers from ``lo`` to ``hi`` (None: unbounded), as JSON writes them."""
    parts = []
    if lo is None or lo < 0:  # the negative ones: -m for m from max(1, -hi) to -lo
        m0 = 1 if hi is None or hi >= 0 else -hi
        if lo is None or -lo >= m0:
            parts.append("-(?:" + _magnitudes(m0, None if lo is None else -lo) + ")")
    if hi is None or hi >= 0:
        a = 0 if lo is None or lo < 0 else lo
        if hi is None or hi >= a:
            parts.append("(?:" + _magnitudes(a, hi) + ")")
    if not parts:
        raise GrammarUnsupported(f"{path}: an integer schema whose bounds admit no integer ({lo} to {hi})")
    return "(?:" + "|".join(parts) + ")"


class ValueWriter:
    """Lark items for a value of a JSON schema in a given dialect."""

    def __init__(self, b: "Builder", dialect: str, path: str, string_delims: tuple[str, str] | None = None,
                 root: Any = None):
        self.b, self.dialect, self.path, self.delims = b, dialect, path, string_delims
        self.root = root  # the document the schemas' references point into (see _deref)

    def value(self, schema: Any, depth: int = 0) -> str:
        b = self.b
        schema = _deref(schema, self.root, self.path)
        if depth > 6 or not isinstance(schema, dict):
            raise GrammarUnsupported(f"{self.path}: a schema nested too deeply (or not an object) for a {self.dialect} value")
        if "enum" in schema or "const" in schema:
            values = schema.get("enum", [schema.get("const")])
            return "(" + " | ".join(self.const(v) for v in values) + ")"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return "(" + " | ".join(self.value(s, depth + 1) for s in schema[key]) + ")"
        kind = schema.get("type")
        if isinstance(kind, list):
            return "(" + " | ".join(self.value({**schema, "type": k}, depth + 1) for k in kind) + ")"
        if kind is None:  # a schema that says no type ({}, a description only): any value
            return self.any()
        if kind == "string":
            return self.string()
        if kind == "integer":
            base = "/" + (_PY_INT if self.dialect == "python" else _INT) + "/"
            bounds = _int_bounds(schema)
            if bounds == (None, None):
                return b.term(base)
            return b.term(f"(/{_int_regex(*bounds, self.path)}/ & {base})")
        if kind == "number":
            return b.term("/" + self.number() + "/")
        if kind == "boolean":
            return '("True" | "False")' if self.dialect == "python" else '("true" | "false")'
        if kind == "null":
            return '"None"' if self.dialect == "python" else '"null"'
        if kind == "array":  # (without items: of any values)
            item = self.value(schema.get("items", {}), depth + 1)
            return b.rule(f'"[" ({item} ("," " "? {item})*)? "]"')
        if kind == "object":
            props = schema.get("properties", {})
            req = [k for k in schema.get("required", []) if k in props]
            pairs = {k: f"{self.key(k)} \":\" \" \"? {self.value(props[k], depth + 1)}" for k in props}
            extra = self.extra(props, nested=True) if schema.get("additionalProperties", True) is not False else ""
            return b.rule('"{" ' + _with_extra(pairs, req, '"," " "?', extra) + ' "}"')
        raise GrammarUnsupported(f"{self.path}: schema type {kind!r} has no {self.dialect} value grammar")

    def any(self) -> str:
        """Any value of the dialect (an argument the schema does not describe)."""
        b = self.b
        name = f"any_{self.dialect}" + ("_d" if self.delims else "")
        if name not in b.rules:
            b.rules[name] = ""  # (reserved: the rule refers to itself)
            sep = '"," " "?'
            key = self.string() if self.dialect != "unquoted" else f'({b.term("/[A-Za-z_][A-Za-z0-9_]*/")} | {self.string()})'
            true, false, null = ("True", "False", "None") if self.dialect == "python" else ("true", "false", "null")
            b.rules[name] = (f'{self.string()} | {b.term("/" + self.number() + "/")} | "{true}" | "{false}" | "{null}"'
                             f' | "[" ({name} ({sep} {name})*)? "]"'
                             f' | "{{" ({key} ":" " "? {name} ({sep} {key} ":" " "? {name})*)? "}}"')
        return name

    def number(self) -> str:
        return _PY_NUM if self.dialect == "python" else _NUM

    def extra(self, props: dict, nested: bool = False) -> str:
        """A key the schema does not name (``additionalProperties``, which JSON Schema allows
        by default) and any value: a keyword argument of a Python call, or (``nested``) a
        key of an object value (a string in JSON and Python, a name or a delimited string
        in the unquoted dialect)."""
        b = self.b
        known = "|".join("".join(_char(ord(c)) for c in k) for k in props)
        if self.dialect == "python" and not nested:
            word, link = "[A-Za-z_][A-Za-z0-9_]*", '"="'
        elif self.dialect == "unquoted":
            name = "[A-Za-z_][A-Za-z0-9_]*"
            word = b.term(f"/{name}/" if not known else f"(/{name}/ & ~/(?:{known})/)")
            if self.delims is not None:  # a key that is not a name, delimited like a string
                word = f"({word} | {self.string()})"
            return b.rule(f'{word} ":" " "? {self.any()}')
        else:
            word, link = _JSON_STRING, '":" " "?'
            if self.dialect == "python":
                word = _JSON_STRING + "|" + _PY_SQ_STRING
                known = f"\"(?:{known})\"|'(?:{known})'" if known else ""
            else:
                known = f'"(?:{known})"' if known else ""
        name = f"/{word}/" if not known else f"(/{word}/ & ~/(?:{known})/)"
        return b.rule(f"{b.term(name)} {link} {self.any()}")

    def key(self, k: str) -> str:
        if self.dialect == "unquoted":
            return json.dumps(k)
        if self.dialect == "python":  # a dict key: either quote
            sq = "'" + k.replace("\\", "\\\\").replace("'", "\\'") + "'"
            return f"({json.dumps(json.dumps(k))} | {json.dumps(sq)})"
        return json.dumps(json.dumps(k))

    def string(self) -> str:
        b = self.b
        if self.delims is not None:
            open_, close = self.delims
            return f"{json.dumps(open_)} {b.rule(b.term(b.text_term(regex.escape(close))) + ' ' + b.term(json.dumps(close)), lazy=True)}"
        if self.dialect == "python":  # a Python literal: single quotes too
            return b.term("/" + _JSON_STRING + "|" + _PY_SQ_STRING + "/")
        return b.term("/" + _JSON_STRING + "/")

    def const(self, v: Any) -> str:
        if isinstance(v, str):
            if self.delims is not None:
                return json.dumps(self.delims[0] + v + self.delims[1])
            if self.dialect == "python":  # a Python literal: either quote (repr writes 'c')
                sq = "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
                return f"({json.dumps(json.dumps(v))} | {json.dumps(sq)})"
            return json.dumps(json.dumps(v))
        if isinstance(v, bool) and self.dialect == "python":
            return json.dumps("True" if v else "False")
        if v is None and self.dialect == "python":
            return '"None"'
        return json.dumps(json.dumps(v))


def _with_extra(items: dict[str, str], required: list[str], sep: str, extra: str) -> str:
    """:func:`_listed`, then any number of ``extra`` items (keys the schema does not name)."""
    if not extra:
        return _listed(items, required, sep) if items else '""'
    more = f"({sep} {extra})*"
    if not items:
        return f"({extra} {more})?"
    if set(required) & set(items):
        return f"{_listed(items, required, sep)} {more}"
    return f"(({_listed(items, required, sep, empty=False)}) {more} | {extra} {more})?"


def _listed(items: dict[str, str], required: list[str], sep: str, empty: bool = True) -> str:
    """Grammar of ``items`` written in order, each required one always and each other one
    optionally, ``sep`` between two written ones (``empty``: none written, when none is
    required)."""
    names = list(items)
    req = set(required)

    def rest(i: int) -> str:
        # items[i:], after at least one was written
        out = []
        for name in names[i:]:
            out.append(f"{sep} {items[name]}" if name in req else f"({sep} {items[name]})?")
        return " ".join(out)

    alts = []
    for i, name in enumerate(names):
        alts.append(f"{items[name]} {rest(i + 1)}".strip())
        if name in req:
            break
    else:
        if empty:
            alts.append("")
    if len(alts) == 1:
        return alts[0]
    return "(" + " | ".join(a if a else '""' for a in alts) + ")"


def _py_literal(v: Any) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if v is None:
        return "None"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_py_literal(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_py_literal(x)}" for k, x in v.items()) + "}"
    return json.dumps(v)


# --- the walk -----------------------------------------------------------------------
@dataclass(slots=True)
class Step:
    kind: str  # "field" | "unclosed" | "iclose" | "end"
    text: bool
    field: Field | None = None
    open: Alt | None = None
    close: Alt | None = None
    tool: dict | None = None  # a call field with the name in its open
    calls: int = 0


_IRS: dict[int, tuple[dict, TemplateIR]] = {}


def _ir_of(template: dict) -> TemplateIR:
    """build_ir(template) without the scanners' analyses, kept per template object (a
    compiled template's dict is not changed once compiled)."""
    hit = _IRS.get(id(template))
    if hit is None or hit[0] is not template:
        if len(_IRS) > 256:
            _IRS.clear()
        hit = _IRS[id(template)] = (template, build_ir(template, scan=False))
    return hit[1]


def _build(template: dict, tools: Any, tool_choice: str, parallel: bool, special: frozenset,
           start: tuple[int, str]) -> str:
    ir = _ir_of(template)
    tool_list = _tool_list(tools)
    names = [t["name"] for t in tool_list]
    if tool_choice not in ("auto", "required", "none") and tool_choice not in names:
        raise ValueError(f"tool_choice: {tool_choice!r} is not 'auto', 'required', 'none' or a tool name ({names})")
    if tool_choice not in ("auto", "none") and not tool_list:
        raise ValueError(f"tool_choice={tool_choice!r} needs tools")
    chosen = [t for t in tool_list if tool_choice in ("auto", "required") or t["name"] == tool_choice]
    if tool_choice == "none":
        chosen = []
    b = Builder(template, ir, Options(tool_choice, parallel, special, chosen))
    return b.walk(start)


def _walk(self: Builder, start: tuple) -> str:
    ir, o = self.ir, self.o
    free = self.free
    calls_allowed = bool(o.tools) and self.calls is not None
    must_call = o.tool_choice not in ("auto", "none")
    # the call count (0, or 1 for "one or more") changes what a node may do only when a call
    # is required or a second one is not allowed
    count_matters = must_call or not o.parallel
    if must_call and self.calls is None:
        raise GrammarUnsupported("fields: the template has no tool_calls field; a call cannot be required")
    watches = [(w, self.compiled[w.delim.path]) for w in free.watches]
    close_alts = {}
    for f in ir.fields:
        if f.close is None or f.implicit:
            continue
        alts = self.alts[f.close.path]
        close_alts[f.index] = alts

    # the zero-width closes of JSON bodies (see _json_spaced)
    json_zero = {(f.close.path, a.index) for f in ir.fields if f.close is not None and not f.implicit
                 and f.content == "json" for a in close_alts[f.index] if not a.consuming}

    shared = self.shared
    # (w, pattern, its source, order) of the watches: open_ok searches each as self.search does
    watched = [(w, pat, pat.pattern, order) for order, (w, pat) in enumerate(watches)]

    def open_ok(s: str, frm: int, d0: int, d1: int, field: Field | None, alt_delim: Delimiter) -> bool:
        best = None
        log = self.search_log
        for w, pat, source, order in watched:
            key = ("search", source, s, frm)
            m = shared.get(key, shared)
            if m is shared:
                m = shared[key] = pat.search(s, frm)
            if log is not None:
                log.append((pat, s, frm))
            if m is None:
                continue
            if m.start() < d0:
                # a match before the open's start: the earliest is not the open, nor at its
                # start (the other watches' searches cannot change that)
                self.open_tie = False
                return False
            key = (m.start(), -(m.end() - m.start()), order)
            if best is None or key < best[0]:
                best = (key, w, m)
        ok = best is not None and best[1].delim.path == alt_delim.path and best[2].span() == (d0, d1)
        # (another delimiter, or another span, found where the open starts: see _spaced_step)
        self.open_tie = not ok and best is not None and best[2].start() == d0
        return ok

    def quiet(s: str, frm: int) -> bool:
        return all(self.search(pat, s, frm) is None for _, pat in watches)

    def prev_ok(s: str, check: Any) -> bool:
        if check is None:
            return True
        pat, frm, a, z = check
        key = ("search", pat.pattern, s, frm)  # (self.search, inlined)
        m = shared.get(key, shared)
        if m is shared:
            m = shared[key] = pat.search(s, frm)
        if self.search_log is not None:
            self.search_log.append((pat, s, frm))
        return m is not None and m.span() == (a, z)

    nodes: dict[Any, tuple[str, str, Any, Any]] = {}
    step_lists: dict[Any, list] = {}  # the steps out of a node, by what they depend on
    step_cuts: dict[Any, dict] = {}  # their lazy cuts (see lazy_cuts), which depend on the steps only
    # when the patterns look back a bounded way (a lookbehind of n characters, \b, ^), two
    # nodes whose steps read the same text (from that far before their first search on,
    # and both at the start of the text or not) have the same outcomes
    outcomes: dict[Any, tuple[int, list]] = {}
    # without a bound (an unbounded lookbehind), or beyond it: nodes the same from the
    # start of their last search on, with the searches their outcomes made (see _replays)
    replayable: dict[Any, list] = {}
    reach = self.reach_back()
    # (the searches are logged for it while the template's builds of this kind replay some:
    # in the bundled templates only muse-glimmer's nodes do, and the log costs a few percent)
    hint = ("replays", must_call, o.parallel, start[0])
    logging = self.shared.get(hint, True)
    replayed = 0
    index_of = {id(f): f.index for f in ir.fields}
    order: list[Any] = []
    bodies: dict[str, list[tuple[str, ...]]] = {}

    state, left = start[0], start[1]
    held = start[3] if len(start) > 3 and state == free.index and left.endswith(start[3]) else ""
    used0 = {f.index for f in ir.fields if len(start) > 2 and f.name in start[2] and not f.repeats}
    key0 = ("start", 0, frozenset(used0))
    first = None
    if state != free.index and self.closed_at_end(ir.fields[state], left):
        # the prefix ends with the field's close, which the parser holds until more text
        # comes (hunyuan-v3's <think></think> thinking off): the output starts after it
        used0 |= {state} if not ir.fields[state].repeats else set()
        key0 = ("start", 0, frozenset(used0))
        state = free.index
    if state != free.index:
        # the prefix opened a field: its body, then its close, then the free state
        f = ir.fields[state]
        first = f
    nodes[key0] = ("n0", left, None, None)
    order.append(key0)
    pending = [key0]
    while pending:
        key = pending.pop(0)
        name, L, check, carried = nodes[key]
        prev, count, used = key[0], key[1], key[2]
        alts_out: list[str] = []
        can_end = not must_call or count > 0
        json_ws = prev in json_zero
        skey = (prev == "start", used & self.once, count, can_end, json_ws)
        steps = step_lists.get(skey)
        if steps is None:
            steps = _steps(self, watches, close_alts, first if prev == "start" else None, used, count, can_end)
            steps = step_lists[skey] = _json_spaced(self, steps) if json_ws else steps
        cuts = step_cuts.get(skey)
        if cuts is None:
            cuts = step_cuts[skey] = self.lazy_cuts([st for st, _ in steps]) if self.marks or self.split else {}
        after, rest_items = "", []
        if isinstance(prev, tuple) and len(prev) == 2 and prev[0] in self.field_closes:
            after, rest_items = self.after_short(self.alts[prev[0]][prev[1]])
        base = len(L) if check is None else check[1]
        # (an unbounded lookbehind: the whole text before, which nodes reached by the same
        # text share; exact, as a bounded one's window is)
        ekey = (id(steps), L[:base] if reach is None else L[max(0, base - reach):base], base == 0, L[base:],
                None if check is None else (check[0].pattern, check[2] - base, check[3] - base), count, carried,
                after, tuple(rest_items))
        if held and prev == "start":
            # the parser holds the prompt's last characters (functionary's ">>>", a
            # delimiter they may begin): steps whose delimiter begins with them, written
            # from where they end, and the other steps with text that, after them, makes
            # no such delimiter
            derived, held_ban, held_whole, only = _held_steps(self, steps, held)
            outs = _outcomes(self, derived, L[: len(L) - len(held)], check, open_ok, quiet, prev_ok, count, carried,
                             after, rest_items, {})
            if not only:
                outs += _outcomes(self, steps, L, check, open_ok, quiet, prev_ok, count, carried, after, rest_items,
                                  cuts, held_ban, held_whole)
            seen = ()
        else:
            seen = outcomes.get(ekey)
            if seen is None and base:
                # another node whose text differs before ``base`` only, on which every search
                # its outcomes made finds the same (moved): the same outcomes (see _replays)
                seen = next((tuple(cand[:2]) for cand in _candidates(self, replayable.get(ekey[:1] + ekey[2:], ()))
                             if _replays(self, cand, L, base)), None)
                replayed += seen is not None
        if seen is None:
            gkey = ekey[:1] + ekey[2:]
            cands = replayable.setdefault(gkey, [])
            log = [] if base and logging and len(cands) < 4 else None
            self.search_log = log
            try:
                outs = _outcomes(self, steps, L, check, open_ok, quiet, prev_ok, count, carried, after, rest_items, cuts)
            finally:
                self.search_log = None
            outcomes[ekey] = (base, outs)
            if log is not None:
                # (its searches' spans are read when a later node looks for a candidate:
                # most candidates are never looked at)
                cands.append([base, outs, (log, L[:base])])
        elif seen:
            outs = _rebased(seen, base, L)
        for ident, got in outs:
            if got is None:
                continue
            items, nxt = got
            if nxt is None:
                alts_out.append(tuple(items))
                continue
            nkey, nL, ncheck = nxt[:3]
            if not count_matters and nkey[1]:
                # (otherwise the nodes before and after a call, which read the same text, are one)
                nkey = (nkey[0], 0, *nkey[2:])
            if ident[1] != id(None):
                nkey = (*nkey[:2], used | {index_of[ident[1]]}, *nkey[2:])
            else:
                nkey = (*nkey[:2], used, *nkey[2:])
            ncarry = nxt[3] if len(nxt) > 3 else None
            if nkey not in nodes:
                nodes[nkey] = (f"n{len(nodes)}", nL, ncheck, ncarry)
                order.append(nkey)
                pending.append(nkey)
            alts_out.append((*items, nodes[nkey][0]))
        bodies[name] = list(dict.fromkeys(alts_out))
    if logging:
        self.shared[hint] = replayed > 0
    # prune nodes that cannot reach an end
    live: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, alts in bodies.items():
            if name in live:
                continue
            for alt in alts:
                last = alt[-1] if alt else ""
                if not last.startswith("n") or last in live:
                    live.add(name)
                    changed = True
                    break
    if calls_allowed and not any(self.calls_written):
        if self.refused:
            raise self.refused[0]
        where = self.calls.open.path if self.calls.open is not None else self.calls.path
        raise GrammarUnsupported(
            f"{where}: no tool call can be written: no alternative of its delimiters reads a call as the grammar "
            "would write it (a back reference, or an assertion that fails on every call)"
        )
    if "n0" not in live:
        raise GrammarUnsupported(f"{self.where()}: no output of the template can end here with these options (tool_choice={o.tool_choice!r})")
    lines = ["start: n0"]
    factored: list[str] = []
    for name, alts in bodies.items():
        if name not in live:
            continue
        good = [a for a in alts if not (a and a[-1].startswith("n")) or a[-1] in live]
        lines.append(f"{name}: " + (_factored(good, factored) if len(good) > _FACTOR_PAST else
                                     " | ".join([" ".join(a) if a else '""' for a in good])))
    lines += factored
    rules, terms = self.rules, self.terms
    if self.pruned:
        # only the rules and terms the nodes reach (a step tried several ways named more)
        used_names: set[str] = set()
        todo = [alt for line in lines[1:] for alt in [line.partition(": ")[2]]]
        by_name = {k.partition("[")[0]: v for k, v in rules.items()}
        while todo:
            for ref in _REF.findall(todo.pop()):
                if ref not in used_names:
                    used_names.add(ref)
                    if ref in by_name:
                        todo.append(by_name[ref])
        rules = {k: v for k, v in rules.items() if k.partition("[")[0] in used_names}
        terms = {k: v for k, v in terms.items() if k in used_names}
    for name, body in rules.items():
        lines.append(f"{name}: {body}")
    for name, body in terms.items():
        lines.append(f"{name}: {body}")
    return "\n".join(lines) + "\n"


_REF = regex.compile(r"\b[rTf]\d+\b")


#: a node (or a rest) of more alternatives is written factored (see _factored); one of fewer
#: keeps few items in a row of llguidance's Earley parser as it is (its limit: 2000 items),
#: and factoring it costs more than it saves (xlam: 0.7 ms a build)
_FACTOR_PAST = 48


def _factored(alts: list[tuple[str, ...]], out: list[str]) -> str:
    """The body of a rule with these alternatives (sequences of items), the alternatives
    that start with the same items written once, their rests a rule of their own (``fN``,
    appended to ``out``): a node lists each step out of it with each node after, and
    llguidance's Earley parser keeps an item per alternative it predicts, so that a node of a
    few hundred alternatives (gpt-oss with five tools) stopped it (``ParserTooComplex``)."""
    groups: dict[str, list[tuple[str, ...]]] = {}
    for alt in alts:
        groups.setdefault(alt[0] if alt else "", []).append(alt)
    written = []
    for first, group in groups.items():
        if len(group) == 1 or not first:
            written += [" ".join(a) if a else '""' for a in group]
            continue
        # (the items all of them start with: those the first and last in order share)
        low, high = min(group), max(group)
        shared, end = 1, min(len(low), len(high))
        while shared < end and low[shared] == high[shared]:
            shared += 1
        name = f"f{len(out)}"
        out.append("")  # (reserved: the rests may name rules of their own)
        rests = [a[shared:] for a in group]
        if len(rests) > _FACTOR_PAST:
            body = _factored(rests, out)
        else:  # (few: written as they are)
            body = " | ".join([" ".join(a) if a else '""' for a in rests])
        out[int(name[1:])] = f"{name}: {body}"
        written.append(" ".join(group[0][:shared] + (name,)))
    return " | ".join(written)


Builder.walk = _walk


def _plan(self: Builder, steps: list) -> tuple[list, list]:
    """(the steps :meth:`Builder.zero_width_ban` tries, [(step, identity, key of its open
    half or None, index after the run of steps with that key)]) of a node's steps, kept
    per step list (the nodes of a kind share one)."""
    hit = self.plans.get(id(steps))
    if hit is None or hit[0] is not steps:
        zero_width, plan = [], []
        run = 0  # (where the run of steps with the same key as the last began)
        last = None
        for st, ident in steps:
            a = st.open
            key = None
            if a is not None:
                kind = st.kind
                if kind == "field" or kind == "unclosed":
                    key = (id(a), None if st.tool is None else st.tool["name"], st.text, kind == "unclosed")
                if not st.text and a.rep == "" and st.field.content != "text":
                    zero_width.append(st)
            if key is None or key != last:
                # (and where the run of steps with the same half ends: when it fails, they all do)
                for entry in plan[run:]:
                    entry[3] = len(plan)
                run = len(plan)
            plan.append([st, ident, key, 0])
            last = key
        for entry in plan[run:]:
            entry[3] = len(plan)
        hit = self.plans[id(steps)] = (steps, zero_width, plan)
    return hit[1], hit[2]


def _outcomes(self: Builder, steps: list, L: str, check: Any, open_ok: Any, quiet: Any, prev_ok: Any, count: int,
              carried: str | None, after: str, rest_items: list[str], cuts: dict, held_ban: str = "",
              held_whole: str = "") -> list[tuple[tuple, Any]]:
    """[(step identity, (items, next node) or None)] of a node's steps, in the order the
    grammar writes them: a step with and without text before it is one step whose text
    may be empty; an end with text and one without, two. ``after``, ``rest_items``: of
    :meth:`Builder.after_short` for the close before; ``cuts``: of :meth:`Builder.lazy_cuts`."""
    results: dict[Any, dict[bool, Any]] = {}
    memo: dict[Any, Any] = {}  # this node's opens, shared by the steps that differ in their close
    zero_width, plan = _plan(self, steps)
    ban = self.zero_width_ban(zero_width, L, check, open_ok, quiet, prev_ok, count, carried)
    ban = "|".join(b for b in (ban, after, held_ban, "" if L else self.start_ban) if b)
    if held_whole:
        self.ban_wholes[ban] = held_whole
    # the open half of the field steps (see _field_open), per open, tool, text and unclosed or
    # not: the steps that differ only in their close share it (a failed one: (None, tie))
    halves: dict[Any, Any] = {}
    i, n = 0, len(plan)
    while i < n:
        st, ident, hkey, end = plan[i]
        i += 1
        if carried is not None and st.text:
            continue
        try:
            self.open_failed = False
            if hkey is not None:
                half = halves.get(hkey)
                if half is None and hkey[3]:
                    # an unclosed step after its open's closed ones: the same half when the
                    # previous close also reads the body's text followed by more text
                    closed = halves.get(hkey[:3] + (False,))
                    if closed is not None and closed[0] is not None:
                        known = memo[hkey[:3]][6]
                        ok = known.get(("prev", True))
                        if ok is None:
                            ok = known[("prev", True)] = prev_ok(closed[1] + _FIELD_TEXT, check)
                        half = halves[hkey] = closed if ok else (None, False)
                if half is None:
                    # an open this node's steps tried already and that failed its checks: the
                    # step fails as try_step would find (without its preamble, done then)
                    known = None
                    opened = memo.get(hkey[:3], memo)
                    if opened is None:
                        known = False
                    elif opened is not memo:
                        known = opened[6]
                        if known.get(("prev", hkey[3])) is False:
                            known = False
                        elif known.get(("open",)) is False:
                            self.open_failed = known[("tie",)]
                            known = False
                    if known is not False:
                        # (free text's markers first, as try_step writes them)
                        head = [self.free_token_run(ban)] if st.text and self.free_tokens() else []
                        half = _field_open(self, st, L, _FIELD_TEXT if st.text else "", head, check, open_ok,
                                           prev_ok, count, carried, False, memo, ban, cuts)
                    if half is None:
                        half = (None, self.open_failed)
                    halves[hkey] = half
                if half[0] is None:
                    self.open_failed = half[1]
                    got = None
                else:
                    self.tail_lead = half[6]
                    got = _field_close(self, st, half)
            else:
                got = self.try_step(st, L, check, open_ok, quiet, prev_ok, count, carried, memo=memo, ban=ban,
                                    rest_items=rest_items, cuts=cuts)
            if got is None and self.open_failed and _ws_runs(st.open):
                st, got = _spaced_step(self, st, L, check, open_ok, quiet, prev_ok, count, carried, memo, ban,
                                       rest_items, cuts)
        except GrammarUnsupported as error:
            self.refused.append(error)
            got = None
        results.setdefault(ident, {})[st.text] = (st, got)
        if got is None and hkey is not None and i < end:
            half = halves.get(hkey)
            if half is not None and half[0] is None and not (half[1] and _ws_runs(st.open)):
                # the other steps with this failed half fail as this one did: passed over, their
                # identities kept in their place (the outcomes are written in that order)
                for _, other, _, _ in plan[i:end]:
                    results.setdefault(other, {})
                i = end
    outs: list[tuple[tuple, Any]] = []
    for ident, by_text in results.items():
        with_text = by_text.get(True, (None, None))
        without = by_text.get(False, (None, None))
        if with_text[1] is not None and without[1] is not None and not (ident[0] == "end" and ident[3] == id(None)):
            # text or none: one lazy lexeme whose text may be empty (a text lexeme
            # beside a delimiter lexeme at one position would take the delimiter)
            got = _relead(self, with_text[0], with_text[1], ban, cuts)
            if got is None:
                got = self.try_step(with_text[0], L, check, open_ok, quiet, prev_ok, count, carried, nullable=True, memo=memo,
                                    ban=ban, cuts=cuts)
        elif ident[0] == "end" and ident[3] == id(None) and with_text[1] is not None and without[1] is not None:
            outs.append((ident, (with_text[1][0], None)))
            got = without[1]
        else:
            got = with_text[1] if with_text[1] is not None else without[1]
        outs.append((ident, got))
    return outs


_ONE_CHAR = (_sre.LITERAL, _sre.NOT_LITERAL, _sre.ANY, _sre.IN)


def _strip_held(items: list, held: str, path: str) -> list | None:
    r"""The items of a delimiter's alternative left to write once the parser's match has
    read ``held`` (literals and one-character items read one character each, a run of
    one-character items as many as match, the rest of the run left: ``\s*<tool_call>``
    after a held "
" is ``\s*<tool_call>``); None when the alternative cannot begin with
    ``held`` so (an item of more characters, a capture, a character that does not match)."""
    out = list(items)
    k = 0
    while k < len(held):
        if not out:
            return None
        item = out[0]
        op = item[0]
        if isinstance(op, str):
            return None
        if op in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT):
            out.pop(0)  # (decided by the check on the whole text)
        elif op in _ONE_CHAR:
            if not _full(translate([item], path), held[k]):
                return None
            out.pop(0)
            k += 1
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and len(item[1][2]) == 1 and item[1][2][0][0] in _ONE_CHAR:
            lo, hi, sub = item[1]
            piece = translate(sub, path)
            n = 0
            while k < len(held) and (hi == _sre.MAXREPEAT or n < hi) and _full(piece, held[k]):
                n += 1
                k += 1
            if k < len(held) or (hi != _sre.MAXREPEAT and n >= hi):
                if n < lo:
                    return None
                out.pop(0)
            else:
                out[0] = (op, (max(lo - n, 0), hi if hi == _sre.MAXREPEAT else hi - n, sub))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and item[1][0] == 0:
            out.pop(0)  # (written empty)
        else:
            return None
    while out and not isinstance(out[0][0], str) and out[0][0] in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT):
        out.pop(0)
    return out


def _held_steps(self: Builder, steps: list, held: str) -> tuple[list, str, str, bool]:
    r"""(the steps without text whose delimiter begins with ``held``, each with an
    alternative that writes what is left of it; what text after ``held`` must not start
    with: what is left of every such delimiter, its captures by their regex; what text
    there must not be whole: what is left of such a delimiter up to the whitespace it ends
    with, which the next delimiter's own leading ``\s*`` may write (functionary after the
    prompt's ">>>": the text "get" and then "\n<|eot_id|>" is ">>>get\n", a call); whether
    one of them is whole in ``held``, so that no other step can follow it)."""
    derived, bans, wholes, only = [], [], [], False
    made: dict[int, Any] = {}
    for w in self.free.watches:
        # every delimiter the state watches, the steps' or not (a call open when
        # tool_choice="none": text after ">>>" must not be a call either)
        for a in self.alts[w.delim.path]:
            rest = _strip_held(a.body(), held, a.delim.path)
            if rest is not None:
                try:
                    bans.append(translate(rest, a.delim.path))
                    # (spacing that may be empty leaves the ban above to match the text)
                    k, spaced = len(rest), False
                    while k and (space := _spacing(rest[k - 1], a.delim.path)) is not None:
                        k, spaced = k - 1, spaced or space
                    if spaced and k:
                        wholes.append(translate(rest[:k], a.delim.path))
                except GrammarUnsupported:
                    pass
    for st, ident in steps:
        a = st.open if st.open is not None else st.close
        if st.text or a is None:
            continue
        alt = made.get(id(a))
        if alt is None:
            rest = _strip_held(a.body(), held, a.delim.path)
            if rest is None:
                made[id(a)] = False
                continue
            alt = made[id(a)] = dataclasses.replace(a, items=list(a.items))
            alt.__dict__["written"] = rest
            if not rest and not a.end and not any(
                    not isinstance(it[0], str) and it[0] in (_sre.ASSERT, _sre.ASSERT_NOT) for it in a.items):
                only = True
        if alt is False:
            continue
        new = dataclasses.replace(st, open=alt) if st.open is not None else dataclasses.replace(st, close=alt)
        derived.append((new, (st.kind, id(st.field), id(new.open), id(new.close), id(st.tool))))
    ban = "|".join(dict.fromkeys(b for b in bans if b)) if not any(not b for b in bans) else "(?s:.*)"
    return derived, ban, "|".join(dict.fromkeys(wholes)), only


def _spacing(item: Any, path: str) -> bool | None:
    r"""Whether a delimiter's item must be written by whitespace (True: a newline), may be
    written by none (False: ``\s*``), or neither (None)."""
    try:
        piece = translate([item], path)
    except GrammarUnsupported:
        return None
    if _full(piece, ""):
        return False
    return True if any(_full(piece, ws) for ws in (" ", "\n", "\t", "\r", "\n\n")) else None


def _ws_runs(a: Alt) -> tuple[int, ...]:
    r"""The positions (in ``a.items``) of its top-level runs that may be empty and may hold a
    space (``\s*``), cached per alternative."""
    hit = a.__dict__.get("_ws_runs")
    if hit is None:
        hit = []
        if a.__dict__.get("spaced") is None:
            for i, it in enumerate(a.items):
                if (not isinstance(it[0], str) and it[0] in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and it[1][0] == 0
                        and len(it[1][2]) == 1 and it[1][2][0][0] in _ONE_CHAR):
                    try:
                        if _full(translate(it[1][2], a.delim.path), " "):
                            hit.append(i)
                    except GrammarUnsupported:
                        pass
        hit = a.__dict__["_ws_runs"] = tuple(hit)
    return hit


def _spaced_alt(self: Builder, a: Alt, runs: tuple[int, ...]) -> Alt:
    """``a`` with the runs at ``runs`` written as one space (kept per template)."""
    key = ("spaced", a.delim.path, a.index, runs)
    hit = self.shared.get(key)
    if hit is None or hit[0] is not a:
        items = [(_sre.LITERAL, 32) if i in runs else it for i, it in enumerate(a.items)]
        alt = dataclasses.replace(a, items=items)
        alt.__dict__["spaced"] = runs
        alt.__dict__["base"] = a  # (its lazy cuts are the alternative's: the same items but the runs)
        hit = self.shared[key] = (a, alt)
    return hit[1]


def _spaced_step(self: Builder, st: Step, L: str, check: Any, open_ok: Any, quiet: Any, prev_ok: Any, count: int,
                 carried: Any, memo: dict, ban: str, rest_items: Any, cuts: Any) -> tuple[Step, Any]:
    r"""A step whose open the parser does not read with every ``\s*`` run written empty
    (hyperclovax's ``<|im_end|>\s*<|im_start|>assistant\s*-> tool/function_call``: the
    content's end close takes ``assistant->``, its negative lookahead names ``assistant ->``):
    tried with every such run a space, then with as many of them as can be given back to
    ``\s*``; the runs that must hold a space are written as one (a space, not a run)."""
    runs = _ws_runs(st.open)

    def attempt(spaced: tuple[int, ...]) -> tuple[Step, Any]:
        new = dataclasses.replace(st, open=_spaced_alt(self, st.open, spaced))
        return new, self.try_step(new, L, check, open_ok, quiet, prev_ok, count, carried, memo=memo, ban=ban,
                                  rest_items=rest_items, cuts=cuts)

    self.pruned = True  # (the tries name rules and terms the grammar does not use)
    key = ("spaced runs", st.open.delim.path, st.open.index)
    hint = self.shared.get(key)
    if hint is not None:
        # the runs another node (or build) needed: tried first, kept if read here too
        got = attempt(hint)
        if got[1] is not None:
            return got
    best = attempt(runs)
    if best[1] is None:
        return st, None
    keep = runs
    for r in runs:
        trial = tuple(x for x in keep if x != r)
        got = attempt(trial)
        if got[1] is not None:
            keep, best = trial, got
    self.shared[key] = keep
    return best


#: JSON's whitespace, ``[ \t\n\r]*``, as parsed items
_JSON_WS = (_sre.MAX_REPEAT, (0, _sre.MAXREPEAT, [(_sre.IN, [(_sre.LITERAL, c) for c in (32, 9, 10, 13)])]))


def _optional(item: Any) -> bool:
    """The item is a run or an optional group that may be empty and captures nothing."""
    return (not isinstance(item[0], str) and item[0] in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and item[1][0] == 0
            and "'@group'" not in repr(item[1][2]))


def _json_spaced(self: Builder, steps: list[tuple[Step, tuple]]) -> list[tuple[Step, tuple]]:
    r"""The steps after a JSON body's zero-width close (kimi-k2's ``(?=<|tool_call_begin|>)``):
    the parser's body runs to the next delimiter's match, so what that delimiter's leading
    optional items write (``\s*``, kimi's ``(?:<|tool_calls_section_begin|>\s*)?``) is read
    as the body's end, which JSON takes as whitespace only: those items are written as
    ``[ \t\n\r]*`` (a form feed, a no-break space or a section marker there made the
    arguments a string)."""
    out = []
    for st, ident in steps:
        a = st.open if st.open is not None else st.close
        if a is not None and not st.text:
            key = ("json-ws", a.delim.path, a.index, id(a))
            hit = self.shared.get(key)
            if hit is None or hit[0] is not a:
                items = list(a.items)
                i = 0
                while i < len(items) and not isinstance(items[i][0], str) and items[i][0] in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT):
                    i += 1
                j = i
                while j < len(items) and _optional(items[j]):
                    j += 1
                alt = a
                if j > i and items[i:j] != [_JSON_WS]:
                    alt = dataclasses.replace(a, items=items[:i] + [_JSON_WS] + items[j:])
                hit = self.shared[key] = (a, alt)
            if hit[1] is not a:
                st = dataclasses.replace(st, open=hit[1]) if st.open is not None else dataclasses.replace(st, close=hit[1])
                ident = (st.kind, id(st.field), id(st.open), id(st.close), id(st.tool))
        out.append((st, ident))
    return out


def _relead(self: Builder, st: Step, got: tuple, ban: str, cuts: dict) -> tuple | None:
    """The step written with text that may be empty, from its result with text: the same
    checks (the same representative text) and the same items but the first lexeme's, whose
    text part may now be empty (None when its items do not start with that lexeme). Text
    steps have no carried text: the free-token run (:meth:`Builder.free_token_run`), if
    any, comes first in both."""
    alt = st.open if st.open is not None else st.close
    name = None if st.tool is None else st.tool["name"]
    cut = cuts.get((id(alt), name), 0)
    # (the first lexemes with and without text, per alternative, tool, ban and cut, each made
    # where it was made before: the rules and terms they name are named in the same order,
    # and a second call names nothing new)
    key = (id(alt), name if st.open is not None else None, ban, cut)
    hit = self.releads.get(key)
    if hit is None or hit[0] is not alt:
        fill = _fill(self, st) if st.open is not None else {}
        head = [self.free_token_run(ban)] if self.free_tokens() else []
        old = head + self.delim_seq(alt, fill, self.text_term(self.lead_excl, nonempty=True, ban=ban), cut)
        hit = self.releads[key] = [alt, old, None, head, fill]
    old = hit[1]
    items, nxt = got
    if items[:len(old)] != old:
        return None
    new = hit[2]
    if new is None:
        new = hit[2] = hit[3] + self.delim_seq(alt, hit[4], self.text_term(self.lead_excl, nonempty=False, ban=ban), cut)
    return new + items[len(old):], nxt


def _candidates(self: Builder, cands: list) -> Any:
    """The candidates for a replay (see _replays) whose searches all read the node's text
    from its ``base`` on, their spans made the first time they are looked at."""
    for cand in cands:
        spans = cand[2]
        if isinstance(spans, tuple):
            spans = cand[2] = _search_spans(self, *spans)
        if spans is not None:
            yield cand


def _search_spans(self: Builder, log: list, head: str) -> dict | None:
    """{(pattern, text, pos): span or None} of the searches a node's outcomes made, None when
    one was not on the node's text from ``len(head)`` on (its outcomes are then not replayed)."""
    spans: dict = {}
    seen: set = set()
    base = len(head)
    reaches = self.pattern_reaches()
    for key in log:
        if key not in seen:
            seen.add(key)
            pat, text, pos = key
            if pos < base or not text.startswith(head):
                return None
            reach = reaches.get(pat.pattern, -1)
            if reach is not None and 0 <= reach <= pos - base:
                continue  # (it reads nothing before ``base``: the same search on the other text)
            m = self.shared.get(("search", pat.pattern, text, pos))
            spans[key] = None if m is None else m.span()
    return spans


def _replays(self: Builder, cand: tuple[int, list, dict], L: str, base: int) -> bool:
    """Another node's outcomes hold for this node: its text is the other's from ``base`` on
    (the key says so) and every search the other's outcomes made (all on its text from its
    ``base`` on, a search moved by the difference) finds the same here. A node's outcomes
    depend on the text before its last search's start through those searches only, so
    they are the other's, moved (:func:`_rebased`)."""
    base0, _, log = cand
    delta = base - base0
    head = L[:base]
    search = self.search
    for (pat, text, pos), span in log.items():
        m = search(pat, head + text[base0:], pos + delta)
        if m is None:
            if span is not None:
                return False
        elif span is None or m.start() - delta != span[0] or m.end() - delta != span[1]:
            return False
    return True


def _rebased(seen: tuple[int, list], base: int, L: str) -> list[tuple[tuple, Any]]:
    """Another node's outcomes moved to this node's text (the same from ``base`` on)."""
    base0, outs = seen
    delta = base - base0
    moved = []
    for ident, got in outs:
        if got is not None and got[1] is not None:
            items, (nkey, nL, ncheck, *carry) = got
            pat, frm, a, z = ncheck
            got = (items, (nkey, L[:base] + nL[base0:], (pat, frm + delta, a + delta, z + delta), *carry))
        moved.append((ident, got))
    return moved


def _steps(self: Builder, watches: list, close_alts: dict, first: Field | None, used: frozenset, count: int,
           can_end: bool) -> list[tuple[Step, tuple]]:
    """The steps out of a node, each with its identity (the steps that differ only in
    writing text before them share one); ``first``: the field the prefix opened, at the
    start."""
    o = self.o
    calls_allowed = bool(o.tools) and self.calls is not None
    texts = (False, True)
    steps: list[Step] = []
    if first is not None:
        for c in close_alts.get(first.index, []):
            steps.append(Step("field", False, first, None, c))
        if can_end or first is self.calls:
            steps.append(Step("unclosed", False, first, None, None))
    else:
        for w, _ in watches:
            if w.is_open:
                f = w.field
                if not f.repeats and f.index in used:
                    continue  # a field that does not repeat opens once
                is_call = f is self.calls
                if is_call and (not calls_allowed or (count > 0 and not o.parallel)):
                    continue
                tools_here = [None]
                if is_call and self.shape.name_group is not None:
                    tools_here = o.tools
                for oa in self.alts[w.delim.path] + _behind_alts(self, w.delim.path):
                    for tool in tools_here:
                        for text in texts:
                            if f.close is None:
                                if can_end or is_call:
                                    steps.append(Step("unclosed", text, f, oa, None, tool))
                                continue
                            for c in close_alts.get(f.index, []):
                                steps.append(Step("field", text, f, oa, c, tool))
                            if can_end or is_call:
                                steps.append(Step("unclosed", text, f, oa, None, tool))
            else:
                for a in self.alts[w.delim.path]:
                    for text in texts:
                        if a.end:
                            if can_end:
                                steps.append(Step("end", text, None, None, a))
                        elif a.consuming:
                            steps.append(Step("iclose", text, None, None, a))
        if can_end:
            steps.append(Step("end", True))
            steps.append(Step("end", False))
    return [(st, (st.kind, id(st.field), id(st.open), id(st.close), id(st.tool))) for st in steps]


def _behind_alts(self: Builder, path: str) -> list[Alt]:
    r"""The open's alternatives led by a lookbehind of a literal of two characters or more
    (xlam's ``(?<=</think>)\s*\[...``), written with that literal first: free text that ends
    with it, then the open (the representative free text ``x`` does not end with it, so the
    alternative itself is never read). The literal is text before the open's match
    (``behind``: its length), which the checks start after. One-character lookbehinds
    (``(?<=,)``, ``(?<=\})``) are left to the closes that write them. Kept per template."""
    key = ("behind alts", path)
    hit = self.shared.get(key)
    if hit is None:
        hit = []
        for a in self.alts[path]:
            items = a.items
            if not items or isinstance(items[0][0], str) or items[0][0] is not _sre.ASSERT or items[0][1][0] != -1:
                continue
            lit = list(items[0][1][1])
            if len(lit) < 2 or any(isinstance(it[0], str) or it[0] is not _sre.LITERAL for it in lit):
                continue
            alt = dataclasses.replace(a, index=-1 - a.index, items=lit + list(items[1:]))
            alt.__dict__["behind"] = len(lit)
            hit.append(alt)
        self.shared[key] = hit
    return hit


def _closed_at_end(self: Builder, f: Field, left: str) -> bool:
    """A match of the field's close ends the text, and stays the same whatever follows
    (so the parser, holding it at the end of its input, commits it with the output's
    first character)."""
    if f.close is None or not left:
        return False
    pat = self.compiled[f.close.path]
    found = next((m for m in pat.finditer(left) if m.end() == len(left) and m.end() > m.start()), None)
    if found is None:
        return False
    for probe in ("x", " ", "\n", "<", "{", "[", "0"):
        m = pat.search(left + probe, found.start())
        if m is None or m.span() != found.span():
            return False
    return True


Builder.closed_at_end = _closed_at_end


def _where(self: Builder) -> str:
    return "fields"


Builder.where = _where


def _zero_width_ban(self: Builder, steps: list[Step], L: str, check: Any, open_ok: Any, quiet: Any, prev_ok: Any,
                    count: int, carried: str | None) -> str:
    r"""What free text at this node must not start with: the call a zero-width open (llama4's
    ``\A\s*(?=\[...\])``) lets begin here without text, up to its body's first character
    (and, for a call list, a tool name's first letter).
    No delimiter lexeme holds the text before such a call, so a text lexeme beside the
    call's first lexeme (``[``) would take it (llguidance drops a lexeme that ends where
    another goes on); text starting so is left out of the grammar."""
    bans = []
    for st in steps:
        if st.text or st.open is None or st.open.rep != "" or st.field.content == "text":
            continue
        try:
            got = self.try_step(st, L, check, open_ok, quiet, prev_ok, count, carried)
        except GrammarUnsupported:
            continue
        rep = self.body(st.field, st.tool)[1]
        if got is None or not rep:
            continue
        first = _char(ord(rep[0]))
        if st.field.content == "python-call-list":
            # the list's bracket and a tool name's first letter (text may start "[Note]")
            names = sorted({_char(ord(t["name"][0])) for t in ([st.tool] if st.tool else self.o.tools)})
            first += "(?:" + "|".join(names) + ")"
        bans.append(translate(st.open.body(), st.open.delim.path) + r"[\s]*" + first)
    return "|".join(dict.fromkeys(bans))


Builder.zero_width_ban = _zero_width_ban


def _lazy_cuts(self: Builder, steps: list[Step]) -> dict:
    r"""{(id(alternative), tool name): items} for the text-led steps of a node whose lazy
    lexeme (text and the delimiter's first piece) another step's lazy lexeme ends inside:
    lazy lexemes end as soon as they match, so the longer one would never be written
    (muse-glimmer with special tokens: the call's ``[^\S
]*to=`` before its recipient ends
    inside the reasoning's ``[^\S
]*to=self``). The longer one is cut where the shorter
    ends (the same lexeme for both), and the rest decides."""
    firsts = {}
    for st in steps:
        a = st.open if st.kind in ("field", "unclosed") else st.close
        if not st.text or a is None:
            continue
        fill = {self.shape.name_group: st.tool["name"]} if st.tool else {}
        try:
            pcs = self.pieces(a, fill)
        except GrammarUnsupported:
            continue
        if not pcs or pcs[0][0] not in ("re", "lx") or (len(pcs) > 1 and pcs[1][0] == "tok" and _nullable(pcs[0][1])):
            continue
        rep = _filled_rep(self, a, fill)
        if rep:
            firsts[(id(a), st.tool["name"] if st.tool else None)] = (a, fill, pcs[0], rep)
    cuts: dict = {}
    for kb, (b, fb, (kind_b, pb), rb) in firsts.items():
        # where b's lazy lexeme ends on its own text (a piece with an exclusion: its end)
        ends = next((j for j in range(1, len(rb) + 1) if _full(pb, rb[:j])), None) if kind_b == "re" else len(rb)
        if ends is None:
            continue
        for ka, (a, fa, (kind_a, pa), ra) in firsts.items():
            pat = _compiled_piece(pa) if kind_a == "re" and pa != pb else None
            if pat is None or pat.match(rb, 0, ends - 1) is None:
                continue  # (a match of a's piece on a prefix of b's text, before b's ends)
            body = b.body()
            for k in range(1, len(body) + 1):
                if isinstance(body[k - 1][0], str):
                    break  # (a cut falls before the first capture)
                written = translate(body[:k], b.delim.path)
                if written == pa:
                    got = self.pieces(b, fb, k)
                    if got and got[0] == ("re", pa):
                        cuts[kb] = k
                    break
                if len(written) > len(pa):
                    break
    return cuts


@functools.lru_cache(maxsize=4096)
def _compiled_piece(text: str) -> Any:
    try:
        return regex.compile(text, regex.V0)
    except regex.error:
        return None


def _full(piece: str, text: str) -> bool:
    pat = _compiled_piece(piece)
    return pat is not None and pat.fullmatch(text) is not None


Builder.lazy_cuts = _lazy_cuts


def _free_tokens(self: Builder) -> list[str]:
    """The markers free text may hold as special tokens: the template's own markers that
    begin no delimiter the free state watches (a text lexeme cannot hold a token, so text with markers is text
    lexemes and tokens in turn). Every watched delimiter that holds a marker holds one of
    the markers left out, so no sequence of these can form a delimiter, and the text
    between them spells no marker in bytes."""
    hit = self.__dict__.get("_free_tokens")
    if hit is None:
        def held(a: Alt) -> list[tuple[int, str]]:
            text = "".join(chr(it[1]) if it[0] is _sre.LITERAL else "\0" for it in a.body())
            return [(text.find(m), m) for m in self.marks if m in text]

        first = set()
        for w in self.free.watches:
            for a in self.alts[w.delim.path]:
                at = held(a)
                if at:
                    first.add(min(at)[1])
        # only the template's own markers (its delimiters', its start anchor's): an
        # end-of-sequence token in free text would end the reply where the grammar does not
        anchor = self.t.get("start_anchor") if isinstance(self.t.get("start_anchor"), str) else ""
        own = {m for alts in self.alts.values() for a in alts for _, m in held(a)} | {m for m in self.marks if m in anchor}
        hit = self.__dict__["_free_tokens"] = [m for m in self.marks if m in own and m not in first]
    return hit


def _free_token_run(self: Builder, ban: str = "") -> str:
    """``(text? token)*``: free text holding the markers of :meth:`free_tokens`."""
    text = self.term(self.text_term(self.lead_excl, nonempty=True, ban=ban))
    return self.rule(f"({text}? ({' | '.join(self.free_tokens())}))*")


def _lead_excl(self: Builder) -> str:
    """What free text must not contain: the free state's exclusion, and, where free text
    holds markers as tokens (:meth:`free_tokens`), the markers spelled in bytes too. Every
    free-text lexeme uses it, the one of the token run and the text after it alike: two
    text lexemes side by side that differ in what they exclude are an ambiguity the
    matcher's lexer cannot carry (llguidance stops at the first byte of text with "too
    many expressions constructed"), and a marker spelled in bytes decodes as the marker."""
    hit = self.__dict__.get("_lead_excl")
    if hit is None:
        spelled = "|".join("".join(_char(ord(c)) for c in m) for m in self.marks) if self.free_tokens() else ""
        hit = self.__dict__["_lead_excl"] = "|".join(x for x in (self.free_excl, spelled) if x)
    return hit


Builder.free_tokens = _free_tokens
Builder.free_token_run = _free_token_run
Builder.lead_excl = property(_lead_excl)


def _try_step(self: Builder, st: Step, L: str, check: Any, open_ok: Any, quiet: Any, prev_ok: Any, count: int,
              carried: str | None = None, nullable: bool = False, memo: dict | None = None, ban: str = "",
              rest_items: list[str] = (), cuts: dict | None = None) -> Any:
    """The grammar items of a step and the node it leads to ((key, left text, check)), or
    None when the template's patterns do not read it as written. ``memo``: the node's
    opens (the open, the body and their check), which the steps that differ only in their
    close share; ``ban``: what free text here must not start with; ``rest_items``: the
    first lexeme of a longer close the previous close was cut from, which a delimiter
    starting so is cut like; ``cuts``: from :meth:`lazy_cuts`."""
    text = _FIELD_TEXT if st.text else ""
    items: list[str] = []
    if st.text and carried is None and self.free_tokens():
        # markers the parser passes over as free text (kimi-k3's <|close|>message<|sep|>)
        items.append(self.free_token_run(ban))
    if st.kind == "field" or st.kind == "unclosed":
        return _try_field_step(self, st, L, text, items, check, open_ok, prev_ok, count, carried, nullable, memo, ban,
                               cuts)
    s = L + text
    d0 = len(s)
    lead = self.text_term(self.lead_excl, nonempty=not nullable, ban=ban) if st.text else carried
    if st.kind == "end":
        if st.close is None:
            if not prev_ok(s, check) or not quiet(s, len(L)):
                return None
            if lead is not None:
                items.append(self.term(lead) + ("?" if items else ""))
            return items, None
        a = st.close
        r = a.rep
        if r is None:
            return None
        s += r
        if not prev_ok(s, check) or not open_ok(s, len(L), d0, len(s), None, a.delim):
            return None
        items += self.delim_seq(a, {}, lead, (cuts or {}).get((id(a), None), 0)) + self.rest(a)
        return items, None
    if st.kind == "iclose":
        a = st.close
        r = a.rep
        if not r:
            return None
        s += r + _FIELD_TEXT
        if not prev_ok(s, check) or not open_ok(s, len(L), d0, d0 + len(r), None, a.delim):
            return None
        cut = (cuts or {}).get((id(a), None), 0)
        if rest_items and not st.text:
            # apertus's \s*\]\s*<|tools_suffix|> after \} beside \}\s*\](?!...): both \s*\] first
            mine = [(i, t) for i, t in enumerate(_written_items(a.body(), a.delim.path, keep_empty=True)) if t]
            if len(mine) > len(rest_items) and [t for _, t in mine[:len(rest_items)]] == rest_items:
                cut = mine[len(rest_items) - 1][0] + 1
        items += self.delim_seq(a, {}, lead, cut)
        pat = self.compiled[a.delim.path]
        return items, ((("ic", a.delim.path, a.index), min(count, 1)), L + text + r, (pat, len(L), d0, d0 + len(r)))
    raise AssertionError(st.kind)


def _try_field_step(self: Builder, st: Step, L: str, text: str, items: list[str], check: Any, open_ok: Any,
                    prev_ok: Any, count: int, carried: str | None, nullable: bool, memo: dict | None, ban: str,
                    cuts: dict | None) -> Any:
    """:func:`_try_step` of a field's step (the checks of its open first: most fail there)."""
    opened = _field_open(self, st, L, text, items, check, open_ok, prev_ok, count, carried, nullable, memo, ban, cuts)
    return None if opened is None else _field_close(self, st, opened)


def _field_open(self: Builder, st: Step, L: str, text: str, items: list[str], check: Any, open_ok: Any,
                prev_ok: Any, count: int, carried: str | None, nullable: bool, memo: dict | None, ban: str,
                cuts: dict | None) -> tuple | None:
    """The open half of :func:`_try_field_step`: (``items`` with the open's, the text to the
    body's end, the open's end, the body's end, the body's items, the call count after it,
    the tail lead), or None when the open or what it lets the previous close read fails
    its checks. What it gives depends on the step's open, tool, text and whether it is
    unclosed only (and the node): the steps that differ in their close share it."""
    f = st.field
    d0 = len(L) + len(text) + (st.open.__dict__.get("behind", 0) if st.open is not None else 0)
    memo = {} if memo is None else memo
    mkey = (id(st.open), None if st.tool is None else st.tool["name"], st.text)
    opened = memo.get(mkey, memo)
    if opened is memo:
        opened = memo[mkey] = _open_part(self, st, L + text)
    if opened is None:
        return None
    s, d1, b1, body_items, calls, self.tail_lead, known = opened
    # (the checks and the open's items, once per node: known)
    if st.open is not None:
        unclosed = st.kind == "unclosed"
        ok = known.get(("prev", unclosed))
        if ok is None:
            ok = known[("prev", unclosed)] = prev_ok(s + _FIELD_TEXT if unclosed else s, check)
        if not ok:
            return None
        ok = known.get(("open",))
        if ok is None:
            ok = known[("open",)] = open_ok(s, len(L), d0, d1, f, st.open.delim)
            known[("tie",)] = self.open_tie
        if not ok:
            self.open_failed = known[("tie",)]
            return None
        lead = self.text_term(self.lead_excl, nonempty=not nullable, ban=ban) if st.text else carried
        cut = (cuts or {}).get((id(st.open.__dict__.get("base", st.open)), st.tool["name"] if st.tool else None), 0) \
            if st.text else 0
        open_items = known.get(("seq", lead, cut), known)
        if open_items is known:
            open_items = known[("seq", lead, cut)] = self.delim_seq(st.open, _fill(self, st), lead, cut)
        items += open_items
    elif not prev_ok(s, check):
        return None
    if calls:
        self.calls_written.append(True)
    return items, s, d1, b1, body_items, min(count + calls, 1), self.tail_lead, items + body_items


def _field_close(self: Builder, st: Step, opened: tuple) -> Any:
    """The rest of :func:`_try_field_step` after :func:`_field_open` (``opened``): the body
    and the close, or the body to the end (an unclosed step)."""
    items, s, d1, b1, body_items, ncount, tail_lead, pre = opened
    f = st.field
    if st.kind != "unclosed" and f.content != "text":
        # (the steps most nodes try most: the open's and the body's items, then the close's)
        c = st.close
        r_close = c.rep
        if r_close is None:
            return None
        if f.content == "xml-inline":
            items = pre + self.delim_seq(c, {}, tail_lead)
        else:
            seq = self.close_seqs.get(id(c))  # (delim_seq(c, {}, None), kept per close)
            if seq is None:
                seq = self.close_seqs[id(c)] = self.delim_seq(c, {}, None)
            items = pre + seq
        s += r_close
        c1 = len(s)
        pat = self.compiled[c.delim.path]
        if c.end:
            return _ending(self, items, c, pat, s, d1, b1, c1, ncount)
        return items, (((c.delim.path, c.index), ncount), s, (pat, d1, b1, c1))
    items = list(items)
    if st.kind == "unclosed":
        if ncount == 0 and self.o.tool_choice not in ("auto", "none"):
            return None  # the reply ends in this region, and needs a call first
        if f.close is not None and self.search(self.compiled[f.close.path], s, d1) is not None:
            return None
        if f.content == "text":
            items.append(self.term(self.text_term(self.close_excl(f), nonempty=True)) + "?")
        else:
            items += body_items
            if f.content == "python-call-list":
                # whitespace after the list, which the parser passes over (a model's newline
                # before its end-of-turn token)
                items.append(self.term("/[ \\t\\r\\n]+/") + "?")
        return items, None
    c = st.close
    r_close = c.rep
    if r_close is None:
        return None
    s += r_close
    c1 = len(s)
    pat = self.compiled[c.delim.path]
    if not c.consuming:  # (a text field's)
        # a zero-width close: the body's text is written with what the next step opens
        if c.end:
            return None
        return items, (((c.delim.path, c.index), ncount, "carry"), s, (pat, d1, b1, c1), self.text_term(self.close_excl(f)))
    seq = self.text_closes.get(id(c))  # (the close's items after text holding none of its matches)
    if seq is None:
        seq = self.text_closes[id(c)] = self.delim_seq(c, {}, self.text_term(self.close_excl(f)))
    items += seq
    if c.end:
        return _ending(self, items, c, pat, s, d1, b1, c1, ncount)
    return items, (((c.delim.path, c.index), ncount), s, (pat, d1, b1, c1))


Builder.try_step = _try_step


def _ending(self: Builder, items: list, c: Alt, pat: Any, s: str, d1: int, b1: int, c1: int, ncount: int) -> Any:
    """A step whose close ends the reply: its items and what the close lets follow, when
    the close is the match the parser finds there (None: not, or a call is still needed)."""
    if ncount == 0 and self.o.tool_choice not in ("auto", "none"):
        return None  # this close ends the reply, which needs a call first
    m = self.search(pat, s, d1)
    if m is None or m.span() != (b1, c1):
        return None
    return items + self.rest(c), None


def _fill(self: Builder, st: Step) -> dict[str, str]:
    """The open's named groups written as given: the tool's name, when the open holds it."""
    return {self.shape.name_group: st.tool["name"]} if st.tool is not None else {}


def _open_part(self: Builder, st: Step, s: str) -> list | None:
    """[text, open end, body end, body items, calls, tail lead, {}] of a step's open and
    body after ``s`` (None when the open has no representative text); the dict keeps the
    checks and the open's items the node's steps share."""
    # (the open's text, the body's items, text and calls, and the tail lead, kept per open
    # and tool: the nodes' steps write them after their own text)
    key = (id(st.open), None if st.tool is None else st.tool["name"], id(st.field))
    part = self.open_parts.get(key)
    if part is None or part[0] is not st.open:
        part = None
        r_open = ""
        if st.open is not None:
            r_open = _filled_rep(self, st.open, _fill(self, st))
        if r_open is not None:
            body_items, body_rep, calls = self.body(st.field, st.tool)
            if body_items is not None:
                part = (st.open, r_open, body_items, body_rep, calls, self.tail_lead)
        self.open_parts[key] = part = part or (st.open, None)
    if part[1] is None:
        return None
    _, r_open, body_items, body_rep, calls, tail_lead = part
    s += r_open
    d1 = len(s)
    self.tail_lead = tail_lead
    return [s + body_rep, d1, d1 + len(body_rep), body_items, calls, tail_lead, {}]
Builder.rest = _rest


def _close_excl(self: Builder, f: Field) -> str:
    if f.close is None:
        return ""
    key = ("excl", f.close.path)
    hit = self.shared.get(key)
    if hit is None:
        hit = self.shared[key] = _exclusion(self.alts[f.close.path], f.close.path, self.marks)
    return hit


Builder.close_excl = _close_excl


def _body(self: Builder, f: Field, tool: dict | None) -> tuple[list[str] | None, str, int]:
    """(grammar items, representative text, calls it holds) of a field's body (built once
    per field and tool)."""
    key = (f.index, None if tool is None else tool["name"])
    hit = self.body_cache.get(key)
    if hit is None:
        items, rep, calls = _body_of(self, f, tool)
        if items:
            # one rule per body, named wherever the body is written: a %json written out in
            # each step compiles once per step (gpt-oss with special tokens went past
            # llguidance's lexer limit)
            items = [self.rule(" ".join(items))]
        hit = self.body_cache[key] = (items, rep, calls, getattr(self, "tail_lead", None))
    self.tail_lead = hit[3]
    return hit[:3]


def _body_of(self: Builder, f: Field, tool: dict | None) -> tuple[list[str] | None, str, int]:
    is_call = f is self.calls
    path = f"{f.path}.content"
    if f.content == "text":
        return [], _BODY_TEXT, 0
    if not is_call:
        if f.content == "json":
            return self.json_item({}), "{}", 0
        raise GrammarUnsupported(f"{path}: content {f.content!r} outside tool_calls has no grammar")
    shape = self.shape
    tools = [tool] if tool is not None else self.o.tools
    if f.content == "json":
        args = f.content_args
        dialect = {k for k in args if k != "allow_non_json" and args[k]}
        if shape.body == "args":
            schema = tool["parameters"] if tool else None
            if schema is None:
                raise GrammarUnsupported(f"{f.path}.transform: arguments without a name in the open delimiter")
            inst = _instance(schema)
        else:
            schemas = [_call_schema(shape, t) for t in tools]
            one = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
            if shape.body == "items":
                schema = {"type": "array", "items": one, "minItems": 1}
                if not self.o.parallel:
                    schema["maxItems"] = 1
            else:
                schema = one
            schema = _rooted(schema, tools)
            inst = _instance(schema)
        if dialect:
            if dialect - {"unquoted_keys", "string_delims"}:
                raise GrammarUnsupported(f"{path}: JSON dialect options {sorted(dialect)} have no grammar")
            delims = args.get("string_delims")
            pair = tuple(delims[0]) if delims else None
            w = ValueWriter(self, "unquoted" if args.get("unquoted_keys") else "json", path, pair, root=schema)
            rep = _dialect_rep(inst, pair, bool(args.get("unquoted_keys")))
            return [w.value(schema)], rep, 1
        items = self.json_item(schema)
        tail = _name_tail(self, f)
        if tail and regex.match(f"(?:{tail})", " ") is not None:
            # whitespace after a name the open ends with would be read as more of the name
            # (devstral's [TOOL_CALLS](?P<name>[^\[\{]+): "get_weather\n" then {...})
            items = items[1:]
        return items, json.dumps(inst), 1
    if f.content == "xml-inline":
        if tool is None:
            raise GrammarUnsupported(f"{f.path}: xml-inline arguments need the name in the open delimiter")
        return self.xml_body(f, tool)
    if f.content == "python-call-list":
        return self.python_body(f, tools)
    raise GrammarUnsupported(f"{path}: content {f.content!r} of a tool call has no grammar")


Builder.body = _body


def _json_item(self: Builder, schema: Any) -> list[str]:
    """A JSON value with optional whitespace around it (``%json`` takes none)."""
    ws = self.term(r"/[ \t\r\n]+/")
    return [f"{ws}?", f"%json {json.dumps(schema)}", f"{ws}?"]


Builder.json_item = _json_item


def _dialect_rep(v: Any, delims: tuple | None, unquoted: bool) -> str:
    if isinstance(v, dict):
        return "{" + ",".join(f"{k if unquoted else json.dumps(k)}:{_dialect_rep(x, delims, unquoted)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_dialect_rep(x, delims, unquoted) for x in v) + "]"
    if isinstance(v, str) and delims:
        return delims[0] + v + delims[1]
    return json.dumps(v)


_RECURSION = regex.compile(r"\(\?(?:&\w+|R|P>\w+|[+-]?\d+)\)")
_STUB = "\ue000"  # a recursive subpattern, as the tag pattern's structure reads it
_JSON_PROBES = {
    # what a JSON value of each kind may hold that a value pattern could cut short
    "string": ['"a"', '"a\'b\\"c,) ]{}="'],
    "object": ['{"k": "a\'b\\"}{,) ]", "n": [1, {"m": null}]}', "{}"],
    "array": ['["a\'b\\"]{,) ", {"c": [1]}]', "[]"],
    "integer": ["-12"], "number": ["-1.5e+3"], "boolean": ["true", "false"], "null": ["null"],
}


def _parse_tag(pattern: str, path: str) -> tuple[list, dict[int, str], Any]:
    """A tag pattern's parse tree (a recursive subpattern ``(?&name)`` read as a stub that
    :func:`translate` refuses: what holds it is never translated, only probed), its group
    names, and the pattern compiled by the regex module (recursion and all)."""
    items, names = _parse(_RECURSION.sub("(?:" + _STUB + ")", pattern), path)
    return items, names, regex.compile(pattern, REGEX_FLAGS)


def _tag_forms(items: list, names: dict, path: str) -> list[tuple[list, list, list, list]]:
    """(head, mid, value, tail) of each alternative of a tag pattern with a 'key' group then
    a 'value' group at its top level (other named groups inside the value are read through)."""
    kv = {gid: n for gid, n in names.items() if n in ("key", "value")}
    forms = []
    for a in _alternatives(items, kv, (), path):
        keys = [i for i, it in enumerate(a) if isinstance(it[0], str) and it[1] == "key"]
        vals = [i for i, it in enumerate(a) if isinstance(it[0], str) and it[1] == "value"]
        if len(keys) == 1 and len(vals) == 1 and keys[0] < vals[0]:
            ki, vi = keys[0], vals[0]
            forms.append((a[:ki], a[ki + 1:vi], a[vi][2], a[vi + 1:]))
    if not forms:
        raise GrammarUnsupported(f"{path}: no alternative with a 'key' group then a 'value' group at its top level")
    return forms


def _tag_reads(pat: Any, head: str, key: str, mid: str, value: str, tail: str, json_values: bool, kind: str) -> bool:
    """The tag pattern reads ``head key mid value tail`` whole as that key and value (and,
    with a json value parser, the value as JSON of ``kind``, or a string kept as text)."""
    text = head + key + mid + value + tail
    m = pat.search(text)
    if m is None or m.span() != (0, len(text)) or m.group("key") != key or m.group("value") != value:
        return False
    if not json_values:
        return True
    try:
        got = json.loads(value)
    except ValueError:
        return kind in ("string", "any")
    if kind == "any":
        return True
    if kind in ("integer", "number"):
        return type(got) is int or (kind == "number" and type(got) is float)
    return type(got) is {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}.get(kind)


_RAW_FIRST = "[^\\s\"\\[\\]{}\\-0-9tfnIN<]"  # raw text no JSON value starts like (NaN, Infinity too)


def _string_values(schema: dict) -> list[str] | None:
    """The values of an enum (or const) of strings only, which the parser keeps as the text
    written (None when the schema has none, or others)."""
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        return None
    return values


def _xml_body(self: Builder, f: Field, tool: dict) -> tuple[list[str] | None, str, int]:
    path = f"{f.path}.content_args.tag_pattern"
    items, names, pat, forms = self.tag_parts(f.content_args.get("tag_pattern"), path)
    vp = f.content_args.get("value_parser")
    json_values = isinstance(vp, dict) and vp.get("name") == "json"
    if vp is not None and not json_values:
        raise GrammarUnsupported(f"{f.path}.content_args.value_parser: only the json value parser has a grammar")
    fake = Alt(f.close or f.open, 0, [], False, True, {})

    def part(sub: list) -> list[str]:
        return self.seq(self.pieces(Alt(fake.delim, 0, sub, False, True, {}), {}))

    close_excl = self.close_excl(f)
    head0 = forms[0][0]
    head_rep = _rep(head0, {})
    if head_rep is None or any(_rep(h, {}) != head_rep for h, _, _, _ in forms):
        raise GrammarUnsupported(f"{path}: the tag's alternatives start differently; the grammar writes one head")
    head_excl = translate([it for it in head0 if not (it[0] is _sre.MAX_REPEAT and it[1][0] == 0)], path, contains=True)
    params = tool["parameters"]
    props = params.get("properties", {}) if isinstance(params, dict) else {}
    required = [k for k in (params.get("required") or []) if k in props]
    if head_excl:
        gap_excl = "|".join(x for x in (head_excl, close_excl) if x)
        # text right after a name the open ends with could be read as more of the name
        # (glm's ``(?P<name>[^\s<]+)``: ``get_weather_x<arg_key>`` is a call of get_weather_x)
        ban = _name_tail(self, f)
        gap, sep = self.text_term(gap_excl, ban=ban), None
        self.tail_lead = self.text_term(gap_excl, ban=ban)
    else:
        # no head: the tags are separated by a comma (and whitespace), and nothing else
        # is written between them (text there could be read as another tag)
        gap, sep, self.tail_lead = None, self.term("/[ \\t\\n]*,[ \\t\\n]*/"), self.term("/[ \\t\\n]*/")
    tags: dict[str, str] = {}
    reps: list[str] = []
    for k in props:
        schema = _deref(props[k], params, f"tools: {tool['name']}: parameters.properties.{k}")
        kind = _value_kind(schema)
        # (a $ref without a "type" beside it to a schema of another type than string: the
        # target's value is written, which the parser's tool typing, reading the property's own
        # schema as the reference does, keeps as the text written; docs/grammar.md)
        strings = _string_values(schema)
        choices: list[str] = []
        vrep = None
        for head, mid, value, tail in forms:
            mid_rep, tail_rep = _rep(mid, {}), _rep(tail, {})
            if mid_rep is None or tail_rep is None:
                continue
            reads = functools.partial(_tag_reads, pat, head_rep, k, mid_rep, tail=tail_rep, json_values=json_values, kind=kind)
            try:
                value_re = translate(value, path)
            except GrammarUnsupported:
                value_re = None
            tail_excl = translate(tail, path, contains=True)
            raw_excl = "|".join(x for x in (tail_excl, close_excl) if x)
            found: list[tuple[list[str], str]] = []
            if strings is not None and value_re is not None:
                # an enum of strings (or a const): the values written as they are, where read so
                good = [v for v in strings if reads(value=v) and _full(value_re, v)]
                if good:
                    alts = "|".join(regex.escape(v) for v in good)
                    text = f"(/(?:{alts})/ & {self.text_term(raw_excl)})"
                    if tail_rep:
                        found.append((self.seq(self.pieces(Alt(fake.delim, 0, tail, False, True, {}), {}), text), good[0]))
                    else:
                        found.append(([self.term(text)], good[0]))
            elif kind in ("string", "any") and value_re is not None and reads(value="a"):
                # the value's text (no JSON value starts like it, with a json value parser:
                # allow_non_json keeps it as text), then the tag's tail
                text = self.text_term(raw_excl)
                if json_values:
                    text = f"(/{_RAW_FIRST}(?s:.*)/ & {text})"
                if not (len(value) == 1 and _is_anything(value[0], lazy=True)):
                    text = f"({text} & /{value_re}/)"
                if tail_rep:  # the text and the tail's first piece: one lazy lexeme (markers as tokens)
                    found.append((self.seq(self.pieces(Alt(fake.delim, 0, tail, False, True, {}), {}), text), "a"))
                else:
                    found.append(([self.term(text)], "a"))
            if json_values or kind not in ("string", "any"):
                probes = _JSON_PROBES.get(kind, []) if json_values else []
                inst = json.dumps(_instance(schema))
                if json_values and all(reads(value=p) for p in [inst, *probes]):
                    spaced = reads(value=f" {inst} ")  # whitespace around the JSON value
                    item = self.json_item(_with_params_defs(schema, tool))
                    found.append(((item if spaced else item[1:2]) + part(tail), inst))
                elif not json_values and kind in ("integer", "number", "boolean", "null") and reads(value=inst):
                    value_items = ValueWriter(self, "json", path).value(schema)
                    if kind == "boolean" and reads(value="True") and reads(value="False"):
                        # Python's spelling too (Qwen3-Coder writes True): the tool typing reads
                        # a boolean case-blind
                        value_items = '("true" | "false" | "True" | "False")'
                    found.append(([value_items] + part(tail), inst))
                elif not json_values and kind not in ("string", "any") and reads(value=inst):
                    found.append((self.json_item(_with_params_defs(schema, tool)) + part(tail), inst))
            for value_items, rep in found:
                choices.append(" ".join(part(mid) + value_items))
                if vrep is None:
                    vrep = mid_rep + rep + tail_rep
        if not choices:
            raise GrammarUnsupported(f"{path}: no alternative of the tag reads a {kind} value of {k!r} as the grammar writes it")
        key_items = [json.dumps(k)] if gap is None else self.seq(self.pieces(Alt(fake.delim, 0, head0, False, True, {}), {}), gap) + [json.dumps(k)]
        tags[k] = " ".join(key_items) + " " + (choices[0] if len(choices) == 1 else "(" + " | ".join(dict.fromkeys(choices)) + ")")
        if k in required:
            reps.append(head_rep + k + vrep)
    if sep is not None:
        rep_sep = ", "
        return [self.term("/[ \\t\\n]*/"), _listed(tags, required, sep)] if tags else [], rep_sep.join(reps), 1
    out = [tags[k] if k in required else f"({tags[k]})?" for k in props]  # optional ones: the tag, or none
    return out, "".join(reps), 1


Builder.xml_body = _xml_body


def _name_tail(self: Builder, f: Field) -> str:
    """The class of a character that would go on the call's name, where an alternative of
    the open ends with its ``name`` group repeating one character class, or with only what
    may be empty after it (a regex, or "")."""
    found = []
    for a in self.alts.get(f.open.path, []) if f.open is not None else []:
        items = a.body()
        at = next((i for i, it in enumerate(items) if isinstance(it[0], str) and it[1] == "name"), None)
        # (the name last, or only what may be empty after it: devstral's optional [ARGS])
        if at is None or len(items[at][2]) != 1 or not _matches_empty(items[at + 1:]):
            continue
        op, arg = items[at][2][0]
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and len(arg[2]) == 1 and arg[2][0][0] in (
            _sre.IN, _sre.NOT_LITERAL, _sre.LITERAL, _sre.ANY
        ):
            found.append(translate(list(arg[2]), f.open.path))
    return "|".join(dict.fromkeys(found))


def _python_body(self: Builder, f: Field, tools: list[dict]) -> tuple[list[str] | None, str, int]:
    path = f"{f.path}.content"
    shape = self.shape
    if shape.body != "items":
        raise GrammarUnsupported(f"{f.path}.transform: python-call-list needs transform_each")
    calls = []
    for t in tools:
        params = t["parameters"]
        w = ValueWriter(self, "python", path, root=params)
        props = params.get("properties", {})
        req = [k for k in params.get("required", []) if k in props]
        # keyword arguments in the schema's order: the required ones always, the others optionally
        extra = w.extra(props) if params.get("additionalProperties", True) is not False else ""
        args = _with_extra({k: f'"{k}=" {w.value(props[k])}' for k in props}, req, '", "', extra)
        args = "" if args == '""' else args
        calls.append(self.rule(f'"{t["name"]}(" {args} ")"' if args else f'"{t["name"]}()"'))
    call = self.rule(" | ".join(calls))
    many = f'({call} (", " {call})*)' if self.o.parallel else call
    t = tools[0]
    inst = _instance(t["parameters"])
    rep = "[" + t["name"] + "(" + ", ".join(f"{k}={_py_literal(v)}" for k, v in inst.items()) + ")]"
    return ['"["', many, '"]"'], rep, 1


Builder.python_body = _python_body


def grammar_for(template: dict, tools: Any, *, tool_choice: str = "auto", parallel_tool_calls: bool = True,
                special_tokens: Any = None, start: tuple | None = None) -> str:
    """The Lark grammar (llguidance) of the outputs ``template`` parses, with ``tools``.

    ``start``: (the parser state the output begins in, the text before it in the parser's
    input) -- what the prefix left; by default the free state with nothing before."""
    ir_free = len(template.get("fields", {}))
    return _build(template, tools, tool_choice, bool(parallel_tool_calls), special_token_strings(special_tokens),
                  start or (ir_free, ""))


_CACHE: dict[Any, Any] = {}
_CACHE_MAX = 512


def cached_grammar(digest: str, template: dict, tools: Any, *, format: str = "lark", tool_choice: str = "auto",
                   parallel_tool_calls: bool = True, special_tokens: Any = None, start: tuple | None = None) -> Any:
    """:func:`grammar_for` (``format="lark"``) or :func:`structural_tag_for`, cached per
    (template hash, tools JSON, options). A copy of a cached structural tag is returned."""
    if format not in ("lark", "structural_tag", "structural-tag"):
        raise ValueError(f"format must be 'lark' or 'structural_tag', got {format!r}")
    special = special_token_strings(special_tokens)
    # what of the tools the grammar reads (names, parameters): a tool list that differs only
    # in descriptions is the same grammar (and a list no grammar is built of raises here)
    tools = _tool_list(list(tools) if tools is not None else [])
    try:
        tools_key = json.dumps(tools, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        tools_key = repr(tools)
    key = (digest, tools_key, format.replace("-", "_"), tool_choice, bool(parallel_tool_calls), special, start)
    hit = _CACHE.get(key)
    if hit is None:
        if format == "lark":
            hit = grammar_for(template, tools, tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls,
                              special_tokens=special, start=start)
        else:
            hit = json.dumps(structural_tag_for(template, tools, tool_choice=tool_choice,
                                                parallel_tool_calls=parallel_tool_calls, special_tokens=special, start=start))
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = hit
    return hit if format == "lark" else json.loads(hit)


# --- xgrammar structural tags --------------------------------------------------------
def _written(b: Builder, d: Delimiter, fill: dict, after: str = "") -> str | None:
    """The text of the first alternative of ``d`` that writes something and that the
    template's own pattern reads back whole (after free text ``x``), with ``fill``."""
    pat = b.compiled[d.path]
    for a in b.alts[d.path]:
        if not a.consuming:
            continue
        r = _rep(a.body(), fill)
        if not r:
            continue
        m = pat.search(_FIELD_TEXT + r + after, 1)
        if m is not None and m.span() == (1, 1 + len(r)):
            return r
    for a in b.alts[d.path]:
        r = _rep(a.body(), fill)
        if r:
            return r
    return None


def _written_forms(alts: list[Alt]) -> list[str]:
    """The texts the alternatives write, optional literal parts both ways (Hunyuan's
    ``</think>`` and ``</think:opensource>``), an alternative with other parts in its
    representative form."""
    out = []
    for a in alts:
        if not a.consuming:
            continue
        items = list(a.body())
        while items and _ws_or_assertion(items[0]):
            items = items[1:]
        forms = [t for t, rest in _lead_forms(items) if not rest and t]
        out.extend(forms or ([a.rep] if a.rep else []))
    return out


def _xgrammar_regex(items: Any, path: str) -> str:
    """:func:`translate`'s regex in the syntax xgrammar's regex formats take (no inline
    flag groups: ``(?s:.)`` is written as a class)."""
    return translate(items, path).replace("(?s:.)", "[\\s\\S]")


def _literal_lead(items: list) -> tuple[str, int]:
    """The text the leading literal items write, and how many items that is."""
    text = []
    for n, item in enumerate(items):
        if isinstance(item[0], str) or item[0] is not _sre.LITERAL:
            return "".join(text), n
        text.append(chr(item[1]))
    return "".join(text), len(items)


def _split_at_group(items: list, name: str) -> tuple[list, list] | None:
    """(items before the named group, items after it), plain groups around it opened up;
    None when the group is not there, or inside a branch or a repeat."""
    for i, item in enumerate(items):
        op = item[0]
        if isinstance(op, str):
            if item[1] == name:
                return items[:i], items[i + 1:]
            inner = _split_at_group(list(item[2]), name)
        elif op is _sre.SUBPATTERN:
            inner = _split_at_group(list(item[1][3]), name)
        else:
            continue
        if inner is not None:
            return items[:i] + inner[0], inner[1] + items[i + 1:]
    return None


def _open_forms(b: Builder, d: Delimiter, name_group: str | None, tool: dict | None, body_rep: str,
                others: list[str]) -> list[tuple[str, list]]:
    """Each way the template's open delimiter starts a call of ``tool``, as a structural tag
    writes it: (the begin, a literal text the open starts with, whitespace and optional
    parts before it left to the free text; the format elements of the rest of the open: its
    regex up to the tool's name, the name, its regex after the name). Every form is read
    back by the template's own pattern (the name group holding the tool's name). An empty
    list where no alternative starts with a literal of two characters or more (then the
    caller writes one form, as before). ``others``: :func:`_other_forms` of ``d``."""
    pat = b.compiled[d.path]
    name = tool["name"] if tool is not None and name_group else None
    out: list[tuple[str, list]] = []
    for a in b.alts[d.path]:
        if not a.consuming or (a.items and not isinstance(a.items[0][0], str) and a.items[0][0] is _sre.ASSERT
                               and a.items[0][1][0] == -1):
            continue  # a lookbehind-led way (a later call of a list): free text after the previous call
        items = list(a.body())
        ways = [items]
        if items and not isinstance(items[0][0], str) and items[0][0] is _sre.BRANCH:
            ways = [list(branch) + items[1:] for branch in items[0][1][1]]
        leads = []
        for way in ways:
            while way and _matches_empty([way[0]]):
                way = way[1:]  # leading whitespace, optional parts, anchors: the free text before
            forms = _lead_forms(way)
            if name is not None and all(len(lead.strip()) < 2 for lead, _ in forms):
                forms = _spaced_forms(way, name_group)  # a bare JSON call: begin at {"name": "
            leads.extend(forms)
        for lead, rest in leads:
            if len(lead.strip()) < 2 or any(other.startswith(lead) for other in others):
                continue  # too short to trigger on, or the start of another delimiter (an end of turn)
            if name is not None:
                split = _split_at_group(rest, name_group)
                if split is None:
                    continue
                before, after = split
            else:
                before, after = rest, []
            try:
                patterns = [_xgrammar_regex(before, d.path), name, _xgrammar_regex(after, d.path) if name else ""]
            except GrammarUnsupported:
                continue
            elements = [{"type": "const_string", "value": p} if i == 1 else {"type": "regex", "pattern": p}
                        for i, p in enumerate(patterns) if p]
            r_before, r_after = _rep(before, {}), _rep(after, {})
            if r_before is None or r_after is None:
                continue
            written = lead + r_before + (name or "") + r_after
            for ctx in (_FIELD_TEXT, ""):  # after free text, or at the output's start (llama3's \A)
                m = pat.search(ctx + written + body_rep, len(ctx))
                if m is not None and m.span() == (len(ctx), len(ctx) + len(written)) and (name is None or m.group(name_group) == name):
                    break
            else:
                continue
            if all(form != (lead, elements) for form in out):
                out.append((lead, elements))
    return out


_MAX_LEADS = 8


def _lead_forms(items: list) -> list[tuple[str, list]]:
    """(literal text, the items after it) for each way the items start: literals, branches
    of literals and optional literal groups written out (gpt-oss's
    ``<|channel|>(?:commentary|analysis) to=functions.`` is two texts), up to the first item
    that is none of these (a whitespace run, a name); at most _MAX_LEADS ways."""
    text, n = _literal_lead(items)
    if n == len(items):
        return [(text, [])]
    item = items[n]
    op, arg = item[0], item[1]
    options: list[list] | None = None
    if not isinstance(op, str):
        if op is _sre.BRANCH:
            options = [list(b) for b in arg[1]]
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and arg[0] == 0 and arg[1] == 1:
            options = [[], list(arg[2])]
        elif op is _sre.SUBPATTERN and arg[0] is None:
            options = [list(arg[3])]
    if options is None or len(options) > _MAX_LEADS or any(_literal_lead(o)[1] != len(o) for o in options):
        return [(text, items[n:])]
    out: list[tuple[str, list]] = []
    for option in options:
        for more, rest in _lead_forms(option + items[n + 1:]):
            out.append((text + more, rest))
    return out if len(out) <= _MAX_LEADS else [(text, items[n:])]


def _spaced_forms(items: list, name_group: str) -> list[tuple[str, list]]:
    """For an open whose literal start is too short to trigger on (llama3's bare
    ``{"name": "``): the texts up to the name group, each whitespace run written as
    nothing or one space, an optional part left out; at most _MAX_LEADS texts, none when
    something else comes before the name."""
    texts = [""]
    for i, item in enumerate(items):
        if isinstance(item[0], str) and item[1] == name_group:
            return [(t, items[i:]) for t in texts]
        if not isinstance(item[0], str) and item[0] is _sre.LITERAL:
            texts = [t + chr(item[1]) for t in texts]
        elif _nullable_ws(item):
            texts = [t + w for t in texts for w in ("", " ")]
        elif _matches_empty([item]):
            continue
        else:
            return []
        if len(texts) > _MAX_LEADS:
            return []
    return []


def _other_forms(b: Builder, d: Delimiter) -> list[str]:
    """What the template's other delimiters write (each alternative's text), and the call
    close's: a call's begin must not be the start of one (hyperclovax's call open may start
    with ``<|im_end|>``, which also ends the reasoning)."""
    out = []
    for path, alts in b.alts.items():
        if path == d.path:
            continue
        for a in alts:
            r = a.rep
            if r:
                out.append(r.lstrip())
    return out


_WS_FORMS = ("", "\n", " ")


def _end_forms(b: Builder, d: Delimiter) -> tuple[list[str], list[dict]]:
    """The texts a structural tag's end takes for the call's close: each alternative that
    writes something, whitespace before it left to the body (JSON and tag bodies end with
    optional whitespace), a whitespace run inside it written as nothing, a newline or a
    space (``}\n</tool_call>`` as well as ``}</tool_call>``), each read back by the
    template's own pattern. Falls back to the one form :func:`_written` gives."""
    pat = b.compiled[d.path]
    out: list[str] = []
    unwritten: list[list] = []
    for a in b.alts[d.path]:
        if not a.consuming:
            continue
        items = list(a.body())
        found = len(out)
        while items and _ws_or_assertion(items[0]):
            items = items[1:]
        while items and _ws_or_assertion(items[-1]):
            items = items[:-1]
        parts: list[list[str]] = []
        for item in items:
            if not isinstance(item[0], str) and item[0] is _sre.LITERAL:
                parts.append([chr(item[1])])
            elif _matches_empty([item]) and _nullable_ws(item):
                parts.append(list(_WS_FORMS))
            elif not isinstance(item[0], str) and item[0] is _sre.BRANCH and (texts := _branch_texts(item)) is not None:
                parts.append(texts)  # granite's "}" then "," or "]" or the end
            else:
                parts = []
                break
        if not parts or sum(len(p) > 1 for p in parts) > 3:
            unwritten.append(items)
            continue
        for combo in itertools.product(*parts):
            text = "".join(combo)
            for ctx in (_FIELD_TEXT, "{}"):  # a close that looks back at the body's last "}"
                m = pat.search(ctx + text, len(ctx))
                if text and m is not None and m.start() == len(ctx) and m.end() >= len(ctx) + len(text):
                    if text not in out:
                        out.append(text)
                    break
        if len(out) == found:
            unwritten.append(items)
    if unwritten:
        # a close not written as a few texts (mistral's JSON list: an "id" key, then "}" and
        # "," or "]"): every way of it as one regex at the end of the tag's content
        try:
            pattern = "|".join(_xgrammar_regex(items, d.path) for items in [*unwritten, *([[(_sre.LITERAL, ord(c)) for c in t] for t in out])])
        except GrammarUnsupported:
            pattern = ""
        if pattern:
            return [""], [{"type": "regex", "pattern": f"(?:{pattern})"}]
    if not out:
        one = _written(b, d, {})
        out = [one or ""]
    return out, []


def _branch_texts(item: Any) -> list[str] | None:
    """The texts a branch of literals writes (an option that only asserts writes nothing);
    None when an option writes something else."""
    texts = []
    for option in item[1][1]:
        option = [it for it in option if not _matches_empty([it]) or (not isinstance(it[0], str) and it[0] is _sre.LITERAL)]
        text, n = _literal_lead(option)
        if n != len(option):
            return None
        if text not in texts:
            texts.append(text)
    return texts


def _ws_or_assertion(item: Any) -> bool:
    """An assertion, an anchor or an optional whitespace run (what a close's end leaves to
    the body before it, or reads of what follows)."""
    if not isinstance(item[0], str) and item[0] in (_sre.ASSERT, _sre.ASSERT_NOT, _sre.AT):
        return True
    return _nullable_ws(item)


def _nullable_ws(item: Any) -> bool:
    """A repeat of whitespace that may be empty (``\\s*``, ``[ \\t]*``)."""
    op, arg = item[0], item[1]
    if isinstance(op, str) or op not in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) or arg[0] != 0:
        return False
    try:
        compiled = regex.compile(translate(arg[2], ""))
    except (GrammarUnsupported, regex.error):
        return False
    return all(compiled.fullmatch(ch) is not None for ch in " \n") or compiled.fullmatch(" ") is not None


def structural_tag_for(template: dict, tools: Any, *, tool_choice: str = "auto", parallel_tool_calls: bool = True,
                       special_tokens: Any = None, start: tuple | None = None) -> dict:
    """An xgrammar structural tag (``{"type": "structural_tag", "format": ...}``) of the
    template's replies: an optional reasoning block, then text with tool calls as triggered
    tags (begin: the open delimiter with the tool's name, content: the arguments' JSON
    schema or the body's, end: the close), in the forms the template's delimiters take
    (:func:`_open_forms`, :func:`_end_forms`). Coarser than the Lark grammar: free text is
    any text until a trigger (docs/grammar.md)."""
    ir = _ir_of(template)
    tool_list = _tool_list(tools)
    names = [t["name"] for t in tool_list]
    if tool_choice not in ("auto", "required", "none") and tool_choice not in names:
        raise ValueError(f"tool_choice: {tool_choice!r} is not 'auto', 'required', 'none' or a tool name ({names})")
    chosen = [] if tool_choice == "none" else [t for t in tool_list if tool_choice in ("auto", "required") or t["name"] == tool_choice]
    b = Builder(template, ir, Options(tool_choice, bool(parallel_tool_calls), frozenset(), chosen))
    elements: list[dict] = []
    reasoning = next((f for f in ir.fields if f.name == "reasoning_content" and f.open is not None and f.close is not None), None)
    state = start[0] if start else len(ir.fields)
    used = set(start[2]) if start and len(start) > 2 else set()
    if reasoning is not None:
        ends = list(dict.fromkeys(_written_forms(b.alts[reasoning.close.path])))
        if not ends:
            raise GrammarUnsupported(f"{reasoning.close.path}: no alternative writes a close")
        held = start[3] if start and len(start) > 3 else ""
        if state == reasoning.index and any(held.lstrip().startswith(e) for e in ends):
            pass  # the prompt closed the reasoning (a close the parser still holds: hunyuan's </think:opensource>)
        elif state == reasoning.index:
            elements.append({"type": "tag", "begin": "", "content": {"type": "any_text"}, "end": ends})
        elif reasoning.name not in used and state == len(ir.fields):
            begin = _written(b, reasoning.open, {})
            if begin:
                elements.append({"type": "optional", "content": {"type": "tag", "begin": begin, "content": {"type": "any_text"}, "end": ends}})
    calls = b.calls
    must = tool_choice not in ("auto", "none")
    if calls is None or not chosen:
        if must:
            raise GrammarUnsupported("fields: the template has no tool_calls field; a call cannot be required")
        elements.append({"type": "any_text"})
        return {"type": "structural_tag", "format": {"type": "sequence", "elements": elements}}
    shape = b.shape
    tags = []
    targets = chosen if shape.name_group is not None or shape.body == "function" else [None]
    # the close's forms and what the other delimiters write are the same for every tool
    ends, closing = _end_forms(b, calls.close) if calls.close is not None else ([""], [])
    if not parallel_tool_calls and not closing:
        # one call: not a close that goes on to the next call of a list ("}," of granite's)
        # nor one that ends nowhere (before the output's end), where another form ends
        single = [e for e in ends if e and not e.rstrip().endswith(",")]
        single = [e for e in single if not any(o != e and o.startswith(e) for o in single)]  # "}]", not "}"
        ends = single or ends
    others = _other_forms(b, calls.open) if calls.open is not None else []
    for tool in targets:
        fill = {shape.name_group: tool["name"]} if tool is not None and shape.name_group else {}
        if calls.content == "json" and not {k for k, v in calls.content_args.items() if k != "allow_non_json" and v}:
            if shape.body == "args":
                schema = tool["parameters"]
            elif shape.body == "items":
                one = [_call_schema(shape, t) for t in chosen]
                schema = {"type": "array", "items": one[0] if len(one) == 1 else {"anyOf": one}, "minItems": 1}
                if not parallel_tool_calls:
                    schema["maxItems"] = 1
                schema = _rooted(schema, chosen)
            else:
                schema = _rooted(_call_schema(shape, tool), [tool])
            ws = {"type": "regex", "pattern": "[ \\t\\r\\n]*"}
            content = {"type": "sequence", "elements": [ws, {"type": "json_schema", "json_schema": schema}, ws]}
            body_rep = json.dumps(_instance(schema))
        elif calls.content == "xml-inline" and tool is not None:
            content, body_rep = _xml_structural(b, calls, tool)
        else:
            raise GrammarUnsupported(f"{calls.path}.content: {calls.content!r} bodies (or JSON dialects) have no structural tag; use format='lark'")
        opens = _open_forms(b, calls.open, shape.name_group, tool, body_rep, others) if calls.open is not None else []
        if not opens:
            begin = _written(b, calls.open, fill, body_rep) if calls.open is not None else None
            if not begin:
                raise GrammarUnsupported(f"{calls.path}: the call's open delimiter writes nothing a trigger can start")
            opens = [(begin, [])]
        for begin, lead in opens:
            body = {"type": "sequence", "elements": [*lead, content, *closing]} if lead or closing else content
            tags.append({"type": "tag", "begin": begin, "content": body, "end": ends[0] if len(ends) == 1 else ends})
    begins = sorted({t["begin"] for t in tags}, key=lambda t: (len(t), t))  # (by text too: a set's order varies per process)
    prefix = begins[0]
    for begin in begins[1:]:
        while not begin.startswith(prefix):
            prefix = prefix[:-1]
    if len(prefix) >= 2:
        triggers = [prefix]
    else:  # each begin under exactly one trigger: the shortest begins that no other begin starts
        triggers = []
        for begin in begins:
            if not any(begin.startswith(t) for t in triggers):
                triggers.append(begin)
    if must:
        # xgrammar's triggered tags with at_least_one begin at a trigger, no text before it:
        # the text a reply may write before its first call ("\n\n" after </think>) comes
        # first, without a trigger (else a first call written there as text, and a second as
        # the tag, passed parallel_tool_calls=False)
        elements.append({"type": "any_text", "excludes": triggers})
    elements.append({"type": "triggered_tags", "triggers": triggers, "tags": tags, "at_least_one": must,
                     "stop_after_first": not parallel_tool_calls})
    if not parallel_tool_calls:
        # after the one call, text without another (stop_after_first leaves what follows free)
        elements.append({"type": "any_text", "excludes": triggers})
    return {"type": "structural_tag", "format": {"type": "sequence", "elements": elements}}


def _xml_structural(b: Builder, f: Field, tool: dict) -> tuple[dict, str]:
    path = f"{f.path}.content_args.tag_pattern"
    items, names, _ = _parse_tag(f.content_args.get("tag_pattern"), path)
    json_values = (f.content_args.get("value_parser") or {}).get("name") == "json"
    first = _tag_forms(items, names, path)[0]
    head, mid, tail = _rep(first[0], {}), _rep(first[1], {}), _rep(first[3], {})
    if None in (head, mid, tail) or not tail:
        raise GrammarUnsupported(f"{path}: the tag has no written form with a closing text")
    params = tool["parameters"]
    props = params.get("properties", {})
    required = set(params.get("required") or [])
    elements, reps = [], []
    # the text between the key and the value, and before the tail's literal, as regexes (GLM's
    # </arg_key>\n<arg_value>, Qwen3-Coder's newline around a value), where they translate
    mid_lead, n = _literal_lead(first[1])
    tail_rest = list(first[3])
    while tail_rest and _matches_empty([tail_rest[0]]):
        tail_rest = tail_rest[1:]
    tails = [t for t, rest in _lead_forms(tail_rest) if not rest and t]
    try:
        around = (_xgrammar_regex(first[1][n:], path), _xgrammar_regex(first[3][:len(first[3]) - len(tail_rest)], path))
    except GrammarUnsupported:
        around = None
    if around is None or not tails:
        mid_lead, around, tails = mid, ("", ""), [tail]
    # each way the head is written (Hunyuan's <arg_key> and <arg_key:opensource>)
    heads = list(dict.fromkeys(t + r for t, rest in _lead_forms(list(first[0])) if (r := _rep(rest, {})) is not None)) or [head]
    end = tails[0] if len(tails) == 1 else tails
    for k, schema in props.items():
        schema = _deref(schema, params, f"tools: {tool['name']}: parameters.properties.{k}")
        kind = _value_kind(schema)
        value = {"type": "any_text"} if kind in ("string", "any") and not json_values else \
            {"type": "json_schema", "json_schema": _with_params_defs(schema, tool)}
        if around[0] or (around[1] and value["type"] != "any_text"):
            value = {"type": "sequence", "elements": [
                *([{"type": "regex", "pattern": around[0]}] if around[0] else []), value,
                *([{"type": "regex", "pattern": around[1]}] if around[1] and value["type"] != "any_text" else [])]}
        tagged = [{"type": "tag", "begin": h + k + mid_lead, "content": value, "end": end} for h in heads]
        ws = {"type": "regex", "pattern": "\\s*"}
        item = {"type": "sequence", "elements": [ws, tagged[0] if len(tagged) == 1 else {"type": "or", "elements": tagged}]}
        elements.append(item if k in required else {"type": "optional", "content": item})
        if k in required:
            reps.append(head + k + mid + (json.dumps(_instance(schema)) if value["type"] == "json_schema" else "a") + tail)
    # after the last parameter, text without another parameter's tag up to the close (Qwen3-Coder's
    # </function>, which the body's parser skips as the Lark grammar's free text does)
    elements.append({"type": "any_text", "excludes": heads} if all(heads) else {"type": "regex", "pattern": "\\s*"})
    return {"type": "sequence", "elements": elements}, "".join(reps)
