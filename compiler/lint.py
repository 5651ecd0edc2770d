"""``respc lint``: what makes a valid template fragile on real model output.

Every :class:`TemplateWarning` of validation is a finding, and so is each of these (each
one a way a template that parses its author's samples fails on what a model writes):

* a delimiter that can never match (``(?!)``, a class with nothing in it, text required
  after ``\\Z``), so its field never opens or never closes;
* ``$`` where ``\\Z`` is meant: ``$`` also matches before a final newline, so where a stream
  and a one-shot parse see different ends of the text, they can differ;
* ``\\w+`` capturing a function name: names with ``-`` or ``.`` (``get-weather``,
  ``functions.get_weather``) do not match;
* a gap in a delimiter, lazy (``.*?``, ``[^>]+?``) or greedy and taking any character
  (``.*``, ``[\\s\\S]*``), before more pattern (often inside a lookahead): a match is not
  known until its tail arrives, so the stream holds everything after the head until then;
* nested quantifiers (``(a+)+``, ``(a|aa)*``): backtracking that can take exponential
  time on text that almost matches;
* a delimiter that may start with a run taking whitespace in a shape the scans cannot keep
  linear (``[\\s,]*x(?=y)``, ``\\s*?x(?=y)``: regexinfo.ws_rescans): searched from every position
  inside a long whitespace run, quadratic in the run's length;
* a lookbehind that reads a whitespace run backwards (``(?<!x[^<]*)``) where it is tried at
  every position inside a run (regexinfo.ws_lookbehind): quadratic in the run at each
  start, cubic over a search; a lookahead that needs its next character first keeps it to
  one place (``(?=<)(?<!x[^<]*)<``);
* a delimiter in which a long whitespace run's growth is not known to leave its matches alike
  (a back reference, a repeated group that takes whitespace other than through a ``*`` loop of
  one character, regex-module-only syntax: regexinfo.ws_pump): a stream rescans a match held
  across the run at every chunk, quadratic in the run's length;
* a field that another field's delimiter shadows: both open with the same delimiter, and
  the tie always goes to the other one, so this field never opens;
* a template for which no grammar of its replies can be built (``compiled.grammar``, for
  constrained decoding: a back reference, a pattern Python's re cannot read, a transform
  that cannot be inverted; docs/grammar.md);
* an optional tail of two or more characters at the end of a delimiter (```` ```(?:json)? ````):
  while streaming, the shorter match is complete as soon as the next character arrives and
  commits, so a chunk boundary inside the tail gives another message than a whole parse.

Findings are advice: the template still compiles. Each is ``(path, message)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import regex

from .regexinfo import _unique_group_names, regex_only, sre_modules, ws_lookbehind, ws_pump, ws_rescans
from .validate import format_path, validate_template

__all__ = ["Finding", "lint"]


@dataclass(frozen=True)
class Finding:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def _parse(pattern: str) -> Any:
    """Python's parse tree of ``pattern``, or None for regex-module-only syntax."""
    if regex_only(pattern):
        return None
    sre_parse, _ = sre_modules()
    try:
        return sre_parse.parse(_unique_group_names(pattern), 16)
    except Exception:  # noqa: BLE001
        return None


def _never_matches(tree: Any) -> bool:
    """A sequence none of whose matches can exist: an empty class, ``(?!)``, or a required
    consuming element after ``\\Z`` (or after ``$`` and a required non-newline)."""
    _, sre = sre_modules()
    ended = False  # an end-of-text anchor was passed
    for op, arg in tree:
        if op is sre.AT and arg in (sre.AT_END_STRING,):
            ended = True
        elif op is sre.ASSERT_NOT and arg[0] == 1 and not list(arg[1]):
            return True  # (?!) : the empty negative lookahead (up to Python 3.12)
        elif op is getattr(sre, "FAILURE", None):
            return True  # (?!) as Python 3.13 reads it
        elif op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            if ended:
                return True
            if op is sre.IN and _empty_class(arg):
                return True
        elif op is sre.SUBPATTERN:
            if _never_matches(arg[-1]):
                return True
        elif op is sre.BRANCH:
            if all(_never_matches(alt) for alt in arg[1]):
                return True
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            if arg[0] > 0 and _never_matches(arg[2]):
                return True
            if arg[0] > 0 and ended:
                return True
    return False


def _empty_class(items: Any) -> bool:
    """``[^\\s\\S]`` and the like: a negated class of a category and its complement."""
    _, sre = sre_modules()
    negated = any(op is sre.NEGATE for op, _ in items)
    categories = {arg for op, arg in items if op is sre.CATEGORY}
    pairs = (
        (sre.CATEGORY_SPACE, sre.CATEGORY_NOT_SPACE),
        (sre.CATEGORY_DIGIT, sre.CATEGORY_NOT_DIGIT),
        (sre.CATEGORY_WORD, sre.CATEGORY_NOT_WORD),
    )
    return negated and any(a in categories and b in categories for a, b in pairs)


_DOLLAR = regex.compile(r"(?<!\\)(?:\\\\)*\$")
_NAME_GROUP = regex.compile(r"\(\?P<(?P<group>\w*(?:name|func|fn|tool|function)\w*)>\\w[+*]\)", regex.IGNORECASE)
_LAZY_GAP = regex.compile(r"(?:\.|\[[^\]]*\]|\\[sSwWdD])[*+]\?(?=.)", regex.DOTALL)
#: a greedy gap that takes any character (``.*``, ``[\s\S]+``) before more pattern
#: (an any-character run at the end of an alternative, as in an end-of-turn close that takes the
#: rest of the output, ``<|im_end|>[\s\S]*``, is no gap: nothing follows it)
_GREEDY_GAP = regex.compile(r"(?<!\\)(?:\\\\)*(?:\.|\[(?:\\s\\S|\\S\\s|\\w\\W|\\W\\w|\\d\\D|\\D\\d)\])[*+](?![?+])(?=[^|)])", regex.DOTALL)
#: a group with a quantifier or an alternation inside, itself repeated
_NESTED = regex.compile(r"\((?:\?:|\?P<\w+>)?(?P<body>(?:[^()\\]|\\.)*(?:[*+]|\{\d*,\d*\}|\|)(?:[^()\\]|\\.)*)\)(?:[*+]|\{\d*,\d*\})")


def _optional_tail(tree: Any) -> bool:
    """Does a match end with an optional part that needs two or more characters when
    present (``(?:json)?``, ``(?:<end>)*``)?"""
    _, sre = sre_modules()
    items = list(tree)
    if not items:
        return False
    op, arg = items[-1]
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and arg[0] < arg[1]:
        return arg[2].getwidth()[0] >= 2 or _optional_tail(arg[2])
    if op is sre.SUBPATTERN:
        return _optional_tail(arg[-1])
    if op is sre.BRANCH:
        return any(_optional_tail(alt) for alt in arg[1])
    return False


def _pattern_findings(pattern: str, path: str, role: str) -> list[Finding]:
    out: list[Finding] = []
    tree = _parse(pattern)
    if tree is not None and path != "start_anchor_pattern" and _optional_tail(tree):
        out.append(
            Finding(
                path,
                "ends with an optional part of two or more characters: while streaming, the match without "
                "it commits as soon as the next character arrives, so a chunk boundary inside that part "
                "changes the message; end the delimiter with a lookahead, or let the next field take the part",
            )
        )
    if tree is not None and _never_matches(tree):
        out.append(Finding(path, f"can never match, so this field never {role}s; fix the pattern"))
    if _DOLLAR.search(pattern.replace("[$]", "")):
        out.append(
            Finding(
                path,
                "uses $, which also matches before a final newline: a stream and a one-shot parse can see "
                "different ends of the text; write \\Z for the end of the output",
            )
        )
    for match in _NAME_GROUP.finditer(pattern):
        out.append(
            Finding(
                path,
                f"captures '{match.group('group')}' with \\w, which misses names with '-' or '.' "
                "(get-weather, functions.get_weather); use [\\w.-]+ or [^\\s<>(]+",
            )
        )
    if path != "start_anchor_pattern" and _LAZY_GAP.search(pattern):  # (a prefix is not streamed)
        out.append(
            Finding(
                path,
                "has a lazy gap (.*? before more pattern): a match is not known until its tail arrives, so "
                "the stream holds all text after its head until then; end the delimiter before the gap and "
                "let the field's content take it",
            )
        )
    elif path != "start_anchor_pattern" and _GREEDY_GAP.search(pattern):
        out.append(
            Finding(
                path,
                "has a gap (.* before more pattern, as in a lookahead over a whole call list): a match is "
                "not known until its tail arrives, so the stream holds all text after its head until then; "
                "end the delimiter before the gap and let the field's content take it",
            )
        )
    if path != "start_anchor_pattern" and ws_rescans(pattern):
        out.append(
            Finding(
                path,
                "may start with a run that takes whitespace, in a shape the scans cannot keep linear: a "
                "search tries it from every position inside a long whitespace run, each reading the run to "
                "its end (quadratic in the run's length, and regex_timeout does not bound it); start every "
                "alternative with a greedy \\s* or \\s+ (or a literal) instead",
            )
        )
    if ws_lookbehind(pattern):
        out.append(
            Finding(
                path,
                "has a lookbehind that reads a whitespace run backwards where it is tried at every position "
                "inside the run (after a run or an optional part): each try reads the run back to its start "
                "(quadratic in the run's length at each start, cubic over a search); put a lookahead for the "
                "character that must follow first (`(?=<)(?<!x[^<]*)<`), or end the lookbehind's body with a "
                "literal",
            )
        )
    if path != "start_anchor_pattern" and ws_pump(pattern) is None:
        out.append(
            Finding(
                path,
                "takes whitespace in a shape whose matches may change as a whitespace run grows (a back "
                "reference, a repeated group that takes whitespace, regex-module-only syntax), so a stream "
                "cannot hold a match across a long whitespace run without rescanning it at every chunk "
                "(quadratic in the run's length); take whitespace through one-character loops (\\s*, "
                "[^\"]+) or fixed characters only",
            )
        )
    if _NESTED.search(pattern):
        out.append(
            Finding(
                path,
                "repeats a group that has a quantifier or alternation inside (like (a+)+ or (a|aa)*): "
                "backtracking on text that almost matches can take exponential time; make the inner "
                "and outer repetition unambiguous",
            )
        )
    return out


def _delimiter_key(field: dict, literal_key: str, pattern_key: str) -> tuple | None:
    if literal_key in field:
        value = field[literal_key]
        return ("literals", tuple(sorted({value} if isinstance(value, str) else set(value))))
    if pattern_key in field:
        return ("pattern", field[pattern_key])
    return None


def lint(template: Any) -> list[Finding]:
    """Every finding for ``template`` (raises TemplateError if it is not valid at all)."""
    warnings_ = validate_template(template)
    findings = [Finding(w.path, w.problem) for w in warnings_]
    fields = template["fields"]
    if "start_anchor_pattern" in template:
        findings += _pattern_findings(template["start_anchor_pattern"], "start_anchor_pattern", "open")
    opens: dict[tuple, list[str]] = {}
    for name, field in fields.items():
        for key, role in (("open_pattern", "open"), ("close_pattern", "close")):
            if key in field:
                findings += _pattern_findings(field[key], format_path(("fields", name, key)), role)
        key = _delimiter_key(field, "open", "open_pattern")
        if key is not None:
            opens.setdefault(key, []).append(name)
    for names in opens.values():
        if len(names) > 1:
            # the tie between equal delimiters at one place goes to the first field by name
            winner = min(names)
            for name in names:
                if name != winner:
                    key = "open" if "open" in fields[name] else "open_pattern"
                    findings.append(
                        Finding(
                            format_path(("fields", name, key)),
                            f"is the same delimiter as fields.{winner}'s, which wins every tie (the first "
                            "field by name), so this field never opens; give it a delimiter of its own",
                        )
                    )
    findings += _grammar_findings(template)
    return findings


#: a tool to build the grammar with: one string argument
_PROBE_TOOLS = [{"type": "function", "function": {"name": "probe_tool", "parameters": {
    "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def _grammar_findings(template: dict) -> list[Finding]:
    """No grammar of the template's replies can be built (compiled.grammar raises)."""
    from .grammar import GrammarUnsupported, grammar_for

    try:
        grammar_for(template, _PROBE_TOOLS)
    except GrammarUnsupported as error:
        return [Finding(error.path or "fields", f"no grammar can be built for constrained decoding "
                        f"(compiled.grammar, docs/grammar.md): {error.problem}")]
    return []
