"""Content parsers: turn the raw body of a region into its value.

Each parser is built once per field by a factory that binds the field's fixed
``content_args`` (generated modules call these at import time), so parsing a
region is one call to a small closure with nothing left to look up.

Semantics follow the response-template specification (and transformers 5.24.0,
its behavioural reference): ``text``/``int``/``float``/``bool`` strip and cast;
``json`` has optional dialect knobs; ``xml-inline`` and ``kv-lines`` build dicts;
``python-call-list`` reads a list of keyword-argument calls, ``[f(a=1), g()]``.
"""

from __future__ import annotations

import json
import re as _re
from collections.abc import Callable
from functools import partial
from json.decoder import scanstring as _scanstring
from typing import Any, NoReturn

import regex

from . import scan as _scan
from .scan import REGEX_WS as _WS
from .base import _plain_str
from .decode import MISS as _MISS
from .decode import json_or_miss as _json_or_miss
from .decode import loads as _loads
from .loose import parse_content as _loose_parse

__all__ = [
    "PARSER_NAMES",
    "STREAMABLE",
    "make_parser",
    "text_parser",
    "int_parser",
    "float_parser",
    "bool_parser",
    "json_parser",
    "xml_inline_parser",
    "kv_lines_parser",
    "python_call_list_parser",
]

Parser = Callable[[str], Any]

#: Every content parser a template may name.
PARSER_NAMES = ("text", "int", "float", "bool", "json", "xml-inline", "kv-lines", "python-call-list")

#: Parsers whose chunks are already part of the final value (``dirty=False``); the
#: structured ones (json, xml-inline, kv-lines, python-call-list) only have a value at the close.
STREAMABLE = frozenset({"text", "int", "float", "bool"})

# Placeholders used while pulling custom-delimited strings out of lax JSON:
# ASCII control characters that do not occur in real model output.
_SENTINEL_OPEN = "\x01"
_SENTINEL_CLOSE = "\x02"
# unquoted_keys: a bare word key right after "{" or "," (whitespace around it allowed) gets
# quoted; a double-quoted string is passed over whole (escapes included), so key-like text
# inside a string value is never rewritten. "[{,]\K" does the work of the look-behind
# (?<=[{,]), faster: the "{" or "," is matched but left out of the replaced text. A string's
# match is dropped by (*SKIP)(*FAIL), which resumes the search after it, so sub takes a
# plain template instead of a callback. The string alternative is possessive: it only
# matches when its longest run ends at a quote anyway. (No DOTALL: like the reference's,
# a backslash before a line break ends the run.)
_UNQUOTED_KEY = regex.compile(r'[{,]\K(\s*)(\w+)(\s*):|"(?:[^"\\]++|\\.)*+"(*SKIP)(*FAIL)')


def _stripper(strip: bool) -> Callable[[str], str]:
    return str.strip if strip else _identity


def _identity(text: str) -> str:
    return text


def text_parser(strip: bool = True) -> Parser:
    """``text``: the body, stripped of surrounding whitespace unless ``strip`` is false."""
    return _stripper(strip)


def int_parser(strip: bool = True) -> Parser:
    """``int``: ``int()`` of the (stripped) body; ``ValueError`` if it is not an integer."""
    if strip:
        return lambda text: int(text.strip())
    return int


def float_parser(strip: bool = True) -> Parser:
    """``float``: ``float()`` of the (stripped) body."""
    if strip:
        return lambda text: float(text.strip())
    return float


def bool_parser(strip: bool = True) -> Parser:
    """``bool``: true when the (stripped, lower-cased) body is ``true`` or ``1``."""
    clean = _stripper(strip)
    return lambda text: clean(text).lower() in ("true", "1")


def json_parser(
    unquoted_keys: bool = False,
    string_delims: list[list[str]] | None = None,
    allow_non_json: bool = False,
    strip: bool = True,
) -> Parser:
    """``json``: ``json.loads`` of the body, with optional dialect knobs.

    * ``string_delims``: pairs ``[open, close]``; text between them becomes a JSON
      string (pulled out first, so its content is never rewritten).
    * ``unquoted_keys``: bare identifier keys right after ``{`` or ``,`` (whitespace
      around them allowed) get quoted; text inside double-quoted strings is left alone.
    * ``allow_non_json``: when decoding fails, return the (stripped) text instead.
    """
    clean = _stripper(strip)
    delim_patterns = [
        regex.compile(regex.escape(open_) + r"(.*?)" + regex.escape(close), regex.DOTALL)
        for open_, close in (string_delims or [])
    ]
    decode_error = json.JSONDecodeError

    if not delim_patterns and not unquoted_keys:

        def parse_plain(text: str) -> Any:
            if type(text) is not str:
                text = _plain_str(text, "text")
            value = _json_or_miss(text)
            if value is not _MISS:
                return value
            if allow_non_json:
                return clean(text)
            try:
                return json.loads(text)  # for its error message
            except decode_error as exc:
                raise ValueError(f"json: the region is not valid JSON ({exc}); body: {text!r}") from exc

        return parse_plain

    def parse_dialect(text: str) -> Any:
        if delim_patterns and (_SENTINEL_OPEN in text or _SENTINEL_CLOSE in text):
            raise ValueError(
                "json: the region contains the reserved characters \\x01/\\x02, which string_delims "
                "uses internally; it cannot be parsed safely"
            )
        working = text
        captured: list[str] = []

        def capture(match: Any) -> str:
            captured.append(match.group(1))
            return f"{_SENTINEL_OPEN}{len(captured) - 1}{_SENTINEL_CLOSE}"

        for pattern in delim_patterns:
            working = pattern.sub(capture, working)
        if unquoted_keys:
            working = _UNQUOTED_KEY.sub(r'\1"\2"\3:', working)
        for index, value in enumerate(captured):
            working = working.replace(f"{_SENTINEL_OPEN}{index}{_SENTINEL_CLOSE}", json.dumps(value))
        try:
            return _loads(working)
        except decode_error as exc:
            if allow_non_json:
                return clean(text)
            raise ValueError(
                f"json: the region is not valid JSON after the dialect rewrites ({exc}); "
                f"body: {text!r}; rewritten: {working!r}"
            ) from exc

    return parse_dialect


def _value_parser(spec: dict | None) -> Parser | None:
    if spec is None:
        return None
    return make_parser(spec.get("name", "text"), spec.get("args", {}))


def _tag_matches(
    tag_pattern: str,
    tag_split: tuple[str, bool, str] | None,
    key_head: tuple[str, str, bool] | None = None,
    bounded: bool = False,
) -> Callable[[str], list[tuple[Any, Any]]]:
    """``text -> [(key, value), ...]``: the ``key`` and ``value`` groups of the matches of
    ``tag_pattern``, in order (None for a group that did not take part; a missing
    ``value`` group gives "").

    With ``tag_split`` (``(HEAD, ws, TAIL)`` from ``compiler.regexinfo.lazy_group_split``
    for a pattern ``HEAD(?P<value>.*?)\\s*TAIL``), HEAD is searched with the regex and
    TAIL with ``str.find``, instead of the regex engine trying the tail at every
    character of the value. When TAIL does not follow HEAD's first match, the whole
    pattern is asked from that position (it may still match another way, or not at all).

    With ``key_head`` as well (``(OPEN, CLOSE, ws, STOPS, C)`` from
    ``compiler.regexinfo.word_key_head`` for a HEAD ``OPEN(?P<key>K+)CLOSE``, then ``\\s*``
    or an optional character ``C?``), HEAD is found with ``str.find`` too: at each OPEN,
    the text up to the next CLOSE is the key if it is a run of K characters. K is ``\\w``
    (STOPS ""): the key is checked as ASCII word characters, and a key with other
    characters is asked of HEAD's regex at that position; or K is ``[^STOPS]``: the key
    must be free of STOPS.
    """
    full = regex.compile(tag_pattern, regex.DOTALL)
    # groups by number: a regex match looks a name up several times slower
    key_group = full.groupindex.get("key")
    value_group = full.groupindex.get("value")
    if bounded:
        return lambda text: [
            _pair(match, key_group, value_group) for match in full.finditer(text, timeout=_scan.REGEX_TIMEOUT)
        ]
    if tag_split is None:
        return lambda text: [_pair(match, key_group, value_group) for match in full.finditer(text)]
    head = regex.compile(tag_split[0], regex.DOTALL)
    head_key = head.groupindex.get("key")
    # with key_head: HEAD found by str.find (OPEN, then the key up to CLOSE)
    opening, closing, head_ws, stops, head_opt = (
        key_head if key_head is not None and head_key is not None else (None, "", False, "", "")
    )
    optional = tag_split[3] if len(tag_split) > 3 else ""  # one optional character before TAIL
    config = (
        head.search, head.match, head_key, opening, closing, head_ws, tag_split[2], tag_split[1], full.search, optional,
        stops, head_opt,
    )
    groups = (key_group, value_group)
    return partial(_split_matches, config, groups)


def _pair(match: Any, key_group: int | None, value_group: int | None) -> tuple[Any, Any]:
    """A match's ``(key, value)``: None for no key group, "" for no value group."""
    return (
        None if key_group is None else match.group(key_group),
        "" if value_group is None else match.group(value_group),
    )


def _holds_any(text: str, chars: str) -> bool:
    """True when one of ``chars`` occurs in ``text``."""
    for c in chars:
        if c in text:
            return True
    return False


def _split_matches(config: tuple, groups: tuple, text: str) -> list[tuple[Any, Any]]:
    """The matches of a split tag pattern (see ``_tag_matches``); ``config`` is
    ``(head search, head match, head key group, OPEN, CLOSE, ws after CLOSE, TAIL,
    ws before TAIL, full pattern search, optional character before TAIL, the key's STOPS,
    optional character after CLOSE)`` (OPEN None: the head is searched with its regex),
    ``groups`` the full pattern's key and value group numbers.

    Compiled, this is C over typed positions (runtime/content.pxd).
    """
    head_search, head_match, head_key, opening, closing, head_ws, tail, ws, full_search, optional, stops, head_opt = config
    found = []
    n = len(text)
    pos = 0
    skip = 0 if opening is None else len(opening)
    close_len = len(closing)
    step = len(tail)
    while True:
        if opening is None:
            match = head_search(text, pos)
            if match is None:
                return found
            start = match.start()
            value_start = match.end()
            key = None if head_key is None else match.group(head_key)
        else:
            start = text.find(opening, pos)
            if start < 0:
                return found
            k = start + skip
            close = text.find(closing, k)
            if close < 0:
                return found  # no CLOSE after this OPEN, so none after a later one either
            key = text[k:close]
            if stops:
                # K is [^STOPS] and CLOSE starts with one of them: a match here has a key
                # (not empty) that runs up to this CLOSE, free of STOPS
                if close == k or _holds_any(key, stops):
                    pos = start + 1
                    continue
            elif key.isascii():
                # K is \w: a run of ASCII word characters, an identifier (most keys; one
                # call), or one that starts with a digit
                if not key.isidentifier() and not (key and key.replace("_", "0").isalnum()):
                    pos = start + 1  # the word run after OPEN is empty or not followed by CLOSE
                    continue
            else:
                close = -1  # other word characters: asked of the regex
            if close >= 0:
                value_start = close + close_len
                if head_ws:
                    while value_start < n and text[value_start] in _WS:
                        value_start += 1
                elif head_opt and value_start < n and text[value_start] == head_opt:
                    value_start += 1
            else:
                match = head_match(text, start)
                if match is None:
                    pos = start + 1
                    continue
                key = match.group(head_key)
                value_start = match.end()
        at = text.find(tail, value_start)
        if at < 0:
            match = full_search(text, start)
            if match is None:
                return found
            found.append(_pair(match, groups[0], groups[1]))
            pos = match.end()
            continue
        end = at
        if ws:
            while end > value_start and text[end - 1] in _WS:
                end -= 1
        elif optional and end > value_start and text[end - 1] == optional:
            end -= 1  # the lazy group stops before the optional character
        found.append((key, text[value_start:end]))
        pos = at + step


def xml_inline_parser(
    tag_pattern: str,
    value_parser: dict | None = None,
    merge_duplicates: bool = False,
    *,
    tag_split: tuple[str, bool, str] | None = None,
    key_head: tuple[str, str, bool] | None = None,
    bounded: bool = False,
) -> Parser:
    """``xml-inline``: every match of ``tag_pattern`` adds ``key -> value`` to a dict.

    ``value_parser`` (``{"name": ..., "args": ...}``) parses each value;
    ``merge_duplicates`` collects repeated keys into a list instead of overwriting (a
    new list on the first repeat, even when the first value is itself a list).
    ``tag_split`` is the compiler's proof that the pattern can be matched in two steps,
    ``key_head`` that its head can be found with ``str.find`` (see ``_tag_matches``);
    they change how fast matches are found, never which. ``bounded``: the pattern may
    backtrack without bound, so every match runs under the default time bound
    (``scan.REGEX_TIMEOUT``).
    """
    tag_matches = _tag_matches(tag_pattern, tag_split, key_head, bounded)
    sub = _value_parser(value_parser)

    def parse(text: str) -> dict:
        if type(text) is not str:
            text = _plain_str(text, "text")
        out: dict[str, Any] = {}
        merged = set() if merge_duplicates else None  # keys whose value is the list of their repeats
        for key, raw in tag_matches(text):
            if key is None:
                raise ValueError(
                    f"xml-inline: the 'key' group of tag_pattern {tag_pattern!r} did not take part in a match"
                )
            if sub is None:
                value = raw
            elif raw is None:
                # the 'value' group did not take part: the value parser gets None, and fails
                # (or not) as the reference's does
                value = _loose_parse(None, value_parser.get("name", "text"), value_parser.get("args", {}))
            else:
                value = sub(raw)
            if merge_duplicates and key in out:
                if key in merged:
                    out[key].append(value)
                else:
                    out[key] = [out[key], value]
                    merged.add(key)
            else:
                out[key] = value
        return out

    return parse


def kv_lines_parser(
    line_sep: str = "\n",
    kv_sep: str = ":",
    strip: bool = True,
    value_parser: dict | None = None,
) -> Parser:
    """``kv-lines``: one ``key<kv_sep>value`` pair per line; other lines are skipped."""
    clean = _stripper(strip)
    sub = _value_parser(value_parser)

    def parse(text: str) -> dict:
        out: dict[str, Any] = {}
        for line in text.split(line_sep):
            line = clean(line)
            if not line or kv_sep not in line:
                continue
            key, value = line.split(kv_sep, 1)
            value = clean(value)
            out[clean(key)] = value if sub is None else sub(value)
        return out

    return parse


# --------------------------------------------------------------------------------------
# python-call-list: ``[get_weather(city="Paris", days=3), f()]``
# --------------------------------------------------------------------------------------
#
# The grammar (transformers 5.24's, which is deliberately strict):
#
#     calls    = "[" [call ("," call)*] "]"            nothing but whitespace after the "]"
#     call     = NAME "(" [argument ("," argument)*] ")"
#     argument = NAME "=" value                        keyword arguments only, each name once
#     value    = STRING | NUMBER | constant | list | dict
#     list     = "[" [value ("," value)*] "]"          no trailing commas anywhere
#     dict     = "{" [STRING ":" value ("," ...)*] "}" string keys, each key once
#
# whitespace (only " \t\n\r") may come between any two tokens; NAME is a dotted or dashed
# identifier (``a.b-c``); constants are True/False/None and true/false/null; lists and
# dicts nest at most 100 deep. STRING is single- or double-quoted, on one line, with JSON's
# escapes plus \' (\uXXXX: a surrogate pair makes one character, a lone surrogate is an
# error, escaped or raw). NUMBER is JSON's number: an integer within +-(2**53 - 1), a
# float that does not overflow to infinity.
#
# How it runs: one findall of one regex cuts the text into tokens (in C), then a small
# recursive descent walks the token list. Each token starts with a character that says what
# it is (a quote, a digit or "-", a letter or "_", a punctuation mark), and where the
# grammar allows a token, the reference reads it with the same pattern, so the token list
# is the reference's reading of every text it accepts; a name absorbs the "=" or "(" that
# follows it (keyword and call heads: fewer tokens). A character no token starts with turns
# the rest of the text into one bad token (the walk stops there). Error positions are only
# worked out when an error is raised.

_CALL_WS = " \t\n\r"
_CALL_NAME = r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*"
# a complete token, without the whitespace before it
_CALL_TOKEN_BODY = (
    r"[][{},:)]"  # punctuation ("=" and "(" are only ever right after a name: part of its token)
    rf"|{_CALL_NAME}(?:[ \t\n\r]*[=(])?"  # a name: a constant, a keyword "k=" or a call "f("
    r"""|"[^"\\\n\r]*(?:\\.[^"\\\n\r]*)*"|'[^'\\\n\r]*(?:\\.[^'\\\n\r]*)*'"""  # a string
    r"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"  # a number
)
# the standard library's engine: this scan runs about twice as fast in it as in regex's
_CALL_TOKEN = _re.compile(rf"[ \t\n\r]*({_CALL_TOKEN_BODY}|.+)", _re.DOTALL)
_CALL_COMPLETE = _re.compile(_CALL_TOKEN_BODY, _re.DOTALL)
# stand-ins in the token list: the end of the text, and the bad rest of it ("\0" starts no token)
_CALL_END = "\0end"
_CALL_BAD = "\0bad"
_CALL_SURROGATE = _re.compile(r"[\ud800-\udfff]")
# an escape in a string body (for error messages: the decoding itself is json's scanstring)
_CALL_ESCAPE = _re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)", _re.DOTALL)
# what json's scanstring does not read: \' (becomes '), and a raw " in a single-quoted
# string (becomes \"); \\ and \" are matched so that their second character is skipped
_CALL_REQUOTE = _re.compile(r"""\\[\\"']|\"""")
_CALL_REQUOTED = {"\\\\": "\\\\", '\\"': '\\"', "\\'": "'", '"': '\\"'}
_CALL_CONSTANTS = {"True": True, "true": True, "False": False, "false": False, "None": None, "null": None}
_CALL_MAX_INT = 2**53 - 1
_CALL_MAX_DEPTH = 100
_INF = float("inf")


def _requoted(match: Any) -> str:
    return _CALL_REQUOTED[match.group()]


def _call_fail(text: str, tokens: list, i: int, problem: str, offset: int = 0) -> NoReturn:
    """Raise the ValueError for token ``i``: ``problem``, the token found there and its
    position in ``text`` (plus ``offset``, a place inside the token)."""
    stripped = text.rstrip(_CALL_WS)
    matches = list(_CALL_TOKEN.finditer(stripped))[: len(tokens) - 1]
    if i < len(matches):
        token = matches[i].group(1)
        position = matches[i].start(1)
        if tokens[i] is not _CALL_BAD:
            found = repr(token) if len(token) <= 40 else f"{token[:37]!r}..."
        elif token[0] in "'\"":
            found = "a string that does not end on its line (no closing quote before a line break or the end)"
        else:
            found = f"the character {token[0]!r}"
    else:
        position = len(stripped)
        found = "the end of the text"
    if offset:
        where = f"at position {position + offset}, in the string {found} at position {position}"
    else:
        where = f"found {found} at position {position}"
    raise ValueError(f"python-call-list: {problem}; {where}; body: {text!r}")


def _call_string(text: str, tokens: list, i: int) -> str:
    """The value of string token ``i`` (quotes included) that has an escape in it."""
    token = tokens[i]
    body = token[1:-1]
    if "\\'" in body or (token[0] == "'" and '"' in body):
        body = _CALL_REQUOTE.sub(_requoted, body)
    try:
        value = _scanstring(body + '"', 0, False)[0]
    except ValueError:
        value = None  # an escape json does not know: the same ones the grammar rejects
    if value is not None and (value.isascii() or _CALL_SURROGATE.search(value) is None):
        return value
    # the error: find the first escape the grammar rejects, in the token as written
    escapes = list(_CALL_ESCAPE.finditer(token, 1, len(token) - 1))
    for k, match in enumerate(escapes):
        escape = match.group()
        if escape[1] != "u" or len(escape) != 6:
            if escape[1] not in "\\'\"/bfnrt":
                _call_fail(
                    text,
                    tokens,
                    i,
                    f"unsupported escape {escape!r} (a string's escapes are \\\\ \\' \\\" \\/ \\b \\f \\n "
                    "\\r \\t and \\uXXXX)",
                    match.start(),
                )
            continue
        code = int(escape[2:], 16)
        if 0xDC00 <= code <= 0xDFFF and k and escapes[k - 1].end() == match.start():
            previous = escapes[k - 1].group()
            if len(previous) == 6 and previous[1] == "u" and 0xD800 <= int(previous[2:], 16) <= 0xDBFF:
                continue  # the second half of a pair
        if 0xD800 <= code <= 0xDBFF and k + 1 < len(escapes) and escapes[k + 1].start() == match.end():
            following = escapes[k + 1].group()
            if len(following) == 6 and following[1] == "u" and 0xDC00 <= int(following[2:], 16) <= 0xDFFF:
                continue  # the first half of a pair
        if 0xD800 <= code <= 0xDFFF:
            _call_fail(text, tokens, i, f"lone surrogate escape {escape!r}", match.start())
    _call_fail(text, tokens, i, "invalid string")


def _call_number(text: str, tokens: list, i: int) -> Any:
    """The value of number token ``i``: an int within +-(2**53 - 1), or a finite float."""
    token = tokens[i]
    if token.isdigit() or (token[0] == "-" and token[1:].isdigit()):
        if len(token) < 16:
            return int(token)  # 15 digits at most: in range
        value = int(token) if len(token) <= 17 else None  # a longer one is out of range anyway
        if value is None or value > _CALL_MAX_INT or value < -_CALL_MAX_INT:
            _call_fail(text, tokens, i, "integer outside the range -(2**53 - 1) to 2**53 - 1")
        return value
    value = float(token)
    if value == _INF or value == -_INF:
        _call_fail(text, tokens, i, "number too large for a float")
    return value


def _call_value(text: str, tokens: list, i: int, depth: int) -> tuple:
    """``(value, next token)`` for the value at token ``i``, inside ``depth`` lists and dicts."""
    token = tokens[i]
    first = token[0]
    if first == '"' or first == "'":
        body = token[1:-1]
        return (body if "\\" not in body else _call_string(text, tokens, i)), i + 1
    if first == "-" or "0" <= first <= "9":
        return _call_number(text, tokens, i), i + 1
    if token in _CALL_CONSTANTS:
        return _CALL_CONSTANTS[token], i + 1
    if token == "[":
        if depth >= _CALL_MAX_DEPTH:
            _call_fail(text, tokens, i, f"lists and dicts nested more than {_CALL_MAX_DEPTH} deep")
        items = []
        i += 1
        if tokens[i] == "]":
            return items, i + 1
        while True:
            item, i = _call_value(text, tokens, i, depth + 1)
            items.append(item)
            token = tokens[i]
            if token == ",":
                i += 1
            elif token == "]":
                return items, i + 1
            else:
                _call_fail(text, tokens, i, "expected ',' or ']' after a list item")
    if token == "{":
        if depth >= _CALL_MAX_DEPTH:
            _call_fail(text, tokens, i, f"lists and dicts nested more than {_CALL_MAX_DEPTH} deep")
        pairs: dict = {}
        i += 1
        if tokens[i] == "}":
            return pairs, i + 1
        while True:
            token = tokens[i]
            first = token[0]
            if first != '"' and first != "'":
                _call_fail(text, tokens, i, "expected a dict key, which must be a string")
            key = token[1:-1]
            if "\\" in key:
                key = _call_string(text, tokens, i)
            if key in pairs:
                _call_fail(text, tokens, i, f"repeated dict key {key!r}")
            if tokens[i + 1] != ":":
                _call_fail(text, tokens, i + 1, "expected ':' after a dict key")
            pairs[key], i = _call_value(text, tokens, i + 2, depth + 1)
            token = tokens[i]
            if token == ",":
                i += 1
            elif token == "}":
                return pairs, i + 1
            else:
                _call_fail(text, tokens, i, "expected ',' or '}' after a dict value")
    _call_fail(text, tokens, i, "expected a value: a string, number, list, dict, True, False or None")


def _parse_call_list(text: str) -> list:
    """The calls of a python-call-list body (see the grammar above); ValueError if it breaks it."""
    if not text.isascii():
        surrogate = _CALL_SURROGATE.search(text)
        if surrogate is not None:
            # only a string may hold one, and a raw surrogate in a string is an error
            raise ValueError(
                f"python-call-list: lone surrogate {surrogate.group()!r} at position {surrogate.start()}; "
                f"body: {text!r}"
            )
    tokens = _CALL_TOKEN.findall(text.rstrip(_CALL_WS))
    if tokens and tokens[-1] != "]" and _CALL_COMPLETE.fullmatch(tokens[-1]) is None:
        tokens[-1] = _CALL_BAD  # the rest of the text from a character no token starts with
    tokens.append(_CALL_END)
    if tokens[0] != "[":
        _call_fail(text, tokens, 0, "expected '[' (a list of calls)")
    calls = []
    i = 1
    if tokens[1] == "]":
        i = 2
    else:
        while True:
            token = tokens[i]
            if token[-1] != "(":
                _call_fail(text, tokens, i, "expected a function call: a name and '('")
            name = token[:-1]
            if name[-1] in " \t\n\r":
                name = name.rstrip(_CALL_WS)
            arguments = {}
            i += 1
            token = tokens[i]
            if token != ")":
                while True:
                    if token[-1] != "=":
                        _call_fail(
                            text,
                            tokens,
                            i,
                            "expected a keyword argument, name=value (positional arguments and trailing "
                            "commas are not supported)",
                        )
                    key = token[:-1]
                    if key[-1] in " \t\n\r":
                        key = key.rstrip(_CALL_WS)
                    if key in arguments:
                        _call_fail(text, tokens, i, f"repeated keyword argument {key!r}")
                    i += 1
                    token = tokens[i]
                    first = token[0]
                    if (first == '"' or first == "'") and "\\" not in token:
                        arguments[key] = token[1:-1]  # the common cases, inline
                        i += 1
                    elif first == "-" or "0" <= first <= "9":
                        arguments[key] = _call_number(text, tokens, i)
                        i += 1
                    else:
                        arguments[key], i = _call_value(text, tokens, i, 0)
                    token = tokens[i]
                    if token == ",":
                        i += 1
                        token = tokens[i]
                    elif token == ")":
                        break
                    else:
                        _call_fail(text, tokens, i, "expected ',' or ')' after a keyword argument")
            calls.append({"name": name, "arguments": arguments})
            token = tokens[i + 1]
            if token == ",":
                i += 2
            elif token == "]":
                i += 2
                break
            else:
                _call_fail(text, tokens, i + 1, "expected ',' or ']' after a call")
    if tokens[i] is not _CALL_END:
        _call_fail(text, tokens, i, "expected the end of the text after the closing ']'")
    return calls


def python_call_list_parser() -> Parser:
    """``python-call-list``: a list of keyword-argument calls, ``[f(a=1), g()]``, becomes
    ``[{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]``.

    The grammar is transformers 5.24's (see the comment above ``_CALL_WS``): keyword
    arguments only, Python or JSON constants, JSON-safe integers, strings in either quote
    with JSON's escapes; anything else is a ValueError naming what is wrong and where.
    It takes no arguments (the reference ignores ``content_args`` for it).
    """

    def parse(text: str) -> list:
        if type(text) is not str:
            text = _plain_str(text, "text")
        return _parse_call_list(text)

    return parse


_FACTORIES: dict[str, Callable[..., Parser]] = {
    "text": text_parser,
    "int": int_parser,
    "float": float_parser,
    "bool": bool_parser,
    "json": json_parser,
    "xml-inline": xml_inline_parser,
    "kv-lines": kv_lines_parser,
    "python-call-list": python_call_list_parser,
}

#: The ``content_args`` each parser accepts (the compiler validates against this).
PARSER_ARGS: dict[str, frozenset[str]] = {
    "text": frozenset({"strip"}),
    "int": frozenset({"strip"}),
    "float": frozenset({"strip"}),
    "bool": frozenset({"strip"}),
    "json": frozenset({"unquoted_keys", "string_delims", "allow_non_json", "strip"}),
    "xml-inline": frozenset({"tag_pattern", "value_parser", "merge_duplicates"}),
    "kv-lines": frozenset({"line_sep", "kv_sep", "strip", "value_parser"}),
    "python-call-list": frozenset(),
}


def make_parser(name: str, args: dict | None = None, hints: dict | None = None) -> Parser:
    """Bind parser ``name`` to its (already validated) ``content_args``; ``hints`` are
    facts the compiler established about them (``tag_split`` for ``xml-inline``)."""
    return _FACTORIES[name](**(args or {}), **(hints or {}))
