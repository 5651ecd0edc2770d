"""Content parsers: turn the raw body of a region into its value.

Each parser is built once per field by a factory that binds the field's fixed
``content_args`` (generated modules call these at import time), so parsing a
region is one call to a small closure with nothing left to look up.

Semantics follow the response-template specification (and transformers 5.23.0,
its behavioural reference): ``text``/``int``/``float``/``bool`` strip and cast;
``json`` has optional dialect knobs; ``xml-inline`` and ``kv-lines`` build dicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import regex

from .base import REGEX_WS as _WS
from .base import _plain_str
from .decode import MISS as _MISS
from .decode import json_or_miss as _json_or_miss
from .decode import loads as _loads

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
]

Parser = Callable[[str], Any]

#: Every content parser a template may name.
PARSER_NAMES = ("text", "int", "float", "bool", "json", "xml-inline", "kv-lines")

#: Parsers whose chunks are already part of the final value (``dirty=False``).
STREAMABLE = frozenset({"text", "int", "float", "bool"})

# Placeholders used while pulling custom-delimited strings out of lax JSON:
# ASCII control characters that do not occur in real model output.
_SENTINEL_OPEN = "\x01"
_SENTINEL_CLOSE = "\x02"
_UNQUOTED_KEY = regex.compile(r"(?<=[{,])(\w+):")


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
    * ``unquoted_keys``: bare identifier keys right after ``{`` or ``,`` get quoted.
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
            working = _UNQUOTED_KEY.sub(r'"\1":', working)
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
) -> Callable[[str], list[tuple[Any, Any]]]:
    """``text -> [(key, value), ...]``: the ``key`` and ``value`` groups of the matches of
    ``tag_pattern``, in order (None for a group that did not take part; a missing
    ``value`` group gives "").

    With ``tag_split`` (``(HEAD, ws, TAIL)`` from ``compiler.regexinfo.lazy_group_split``
    for a pattern ``HEAD(?P<value>.*?)\\s*TAIL``), HEAD is searched with the regex and
    TAIL with ``str.find``, instead of the regex engine trying the tail at every
    character of the value. When TAIL does not follow HEAD's first match, the whole
    pattern is asked from that position (it may still match another way, or not at all).

    With ``key_head`` as well (``(OPEN, CLOSE, ws)`` from ``compiler.regexinfo.word_key_head``
    for a HEAD ``OPEN(?P<key>\\w+)CLOSE[\\s*]``), HEAD is found with ``str.find`` too: at
    each OPEN, the text up to the next CLOSE is the key if it is a run of ASCII word
    characters; a key with other characters is asked of HEAD's regex at that position.
    """
    full = regex.compile(tag_pattern, regex.DOTALL)
    # groups by number: a regex match looks a name up several times slower
    key_group = full.groupindex.get("key")
    value_group = full.groupindex.get("value")
    if tag_split is None:
        return lambda text: [_pair(match, key_group, value_group) for match in full.finditer(text)]
    head = regex.compile(tag_split[0], regex.DOTALL)
    head_key = head.groupindex.get("key")
    # with key_head: HEAD found by str.find (OPEN, then the key up to CLOSE)
    opening, closing, head_ws = key_head if key_head is not None and head_key is not None else (None, "", False)
    config = (head.search, head.match, head_key, opening, closing, head_ws, tag_split[2], tag_split[1], full.search)
    groups = (key_group, value_group)
    return partial(_split_matches, config, groups)


def _pair(match: Any, key_group: int | None, value_group: int | None) -> tuple[Any, Any]:
    """A match's ``(key, value)``: None for no key group, "" for no value group."""
    return (
        None if key_group is None else match.group(key_group),
        "" if value_group is None else match.group(value_group),
    )


def _split_matches(config: tuple, groups: tuple, text: str) -> list[tuple[Any, Any]]:
    """The matches of a split tag pattern (see ``_tag_matches``); ``config`` is
    ``(head search, head match, head key group, OPEN, CLOSE, ws after CLOSE, TAIL,
    ws before TAIL, full pattern search)`` (OPEN None: the head is searched with its
    regex), ``groups`` the full pattern's key and value group numbers.

    Compiled, this is C over typed positions (runtime/content.pxd).
    """
    head_search, head_match, head_key, opening, closing, head_ws, tail, ws, full_search = config
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
            if key.isascii():
                # a run of ASCII word characters: an identifier (most keys; one call), or
                # one that starts with a digit
                if not key.isidentifier() and not (key and key.replace("_", "0").isalnum()):
                    pos = start + 1  # the word run after OPEN is empty or not followed by CLOSE
                    continue
                value_start = close + close_len
                if head_ws:
                    while value_start < n and text[value_start] in _WS:
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
        found.append((key, text[value_start:end]))
        pos = at + step


def xml_inline_parser(
    tag_pattern: str,
    value_parser: dict | None = None,
    merge_duplicates: bool = False,
    *,
    tag_split: tuple[str, bool, str] | None = None,
    key_head: tuple[str, str, bool] | None = None,
) -> Parser:
    """``xml-inline``: every match of ``tag_pattern`` adds ``key -> value`` to a dict.

    ``value_parser`` (``{"name": ..., "args": ...}``) parses each value;
    ``merge_duplicates`` collects repeated keys into a list instead of overwriting.
    ``tag_split`` is the compiler's proof that the pattern can be matched in two steps,
    ``key_head`` that its head can be found with ``str.find`` (see ``_tag_matches``);
    they change how fast matches are found, never which.
    """
    tag_matches = _tag_matches(tag_pattern, tag_split, key_head)
    sub = _value_parser(value_parser)

    def parse(text: str) -> dict:
        if type(text) is not str:
            text = _plain_str(text, "text")
        out: dict[str, Any] = {}
        for key, raw in tag_matches(text):
            if key is None:
                raise ValueError(
                    f"xml-inline: the 'key' group of tag_pattern {tag_pattern!r} did not take part in a match"
                )
            if sub is None:
                value = raw
            elif raw is None:
                raise ValueError(
                    f"xml-inline: the 'value' group of tag_pattern {tag_pattern!r} did not take part "
                    f"in the match for key {key!r}, so value_parser has nothing to parse"
                )
            else:
                value = sub(raw)
            if merge_duplicates and key in out:
                previous = out[key]
                if not isinstance(previous, list):
                    previous = out[key] = [previous]
                previous.append(value)
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


_FACTORIES: dict[str, Callable[..., Parser]] = {
    "text": text_parser,
    "int": int_parser,
    "float": float_parser,
    "bool": bool_parser,
    "json": json_parser,
    "xml-inline": xml_inline_parser,
    "kv-lines": kv_lines_parser,
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
}


def make_parser(name: str, args: dict | None = None, hints: dict | None = None) -> Parser:
    """Bind parser ``name`` to its (already validated) ``content_args``; ``hints`` are
    facts the compiler established about them (``tag_split`` for ``xml-inline``)."""
    return _FACTORIES[name](**(args or {}), **(hints or {}))
