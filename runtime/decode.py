"""JSON decoding with exactly ``json.loads``'s results, faster.

The ``json`` content parser and tool typing decode JSON here. Objects and arrays (tool
arguments, mostly) are decoded by orjson, several times faster than ``json``, wherever
its value is ``json``'s; everything else, and every document orjson turns down or
might decode differently, goes to ``json`` itself, so values and errors are ``json``'s.
"""

from __future__ import annotations

import json
from typing import Any

try:
    from orjson import JSONDecodeError as _FastDecodeError
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - a dependency; without it, json decodes everything
    _fast_loads = None

__all__ = ["MISS", "TooDeep", "json_or_miss", "loads"]


class TooDeep(ValueError):
    """JSON nested deeper than Python's json decoder goes (its ``RecursionError``): valid
    JSON that has no Python value here, so the region that holds it is malformed."""


_TOO_DEEP = (
    "json: the value is nested deeper than Python's json decoder goes (it raised RecursionError); "
    "the region is malformed"
)

#: what ``json_or_miss`` returns for text that is not one JSON document
MISS = object()

_SCAN = json.JSONDecoder().scan_once
_JSON_WS = json.decoder.WHITESPACE.match
#: the whitespace json skips around a value, and the characters a value can start with
#: (objects, arrays, strings, numbers, true/false/null, NaN/Infinity, which Python's json takes)
_JSON_SPACE = frozenset(" \t\n\r")
_JSON_FIRST = frozenset('{["-0123456789tfnNI')
#: what a number (and the whitespace around it) is made of, and how one starts
_NUMBER_TEXT = "0123456789+-.eE \t\n\r"
_NUMBER_FIRST = frozenset("-0123456789")
#: the JSON words, exactly
_WORDS = {"true": True, "false": False, "null": None}
#: 2**63 as a float: orjson turns an integer beyond 64 bits into a float at least this large
_BIG = 9223372036854775808.0


def json_or_miss(text: str) -> Any:
    """``json.loads(text)``, or ``MISS`` where it raises ``JSONDecodeError``.

    The same steps as ``json.loads`` on a str (BOM check, leading whitespace, one
    value, trailing whitespace, nothing after it), without building the exception
    for text that is not JSON (model output often is not: a SQL query, a date).
    Errors other than ``JSONDecodeError`` propagate, as they do from ``json.loads`` (an
    integer past Python's int string-conversion limit: its ``ValueError``), except
    nesting too deep for json's recursive decoder: a ``ValueError`` (``TooDeep``) where
    ``json.loads`` raises ``RecursionError``, so that such a region is malformed like any
    other value json cannot decode, not an error that escapes the parser.
    """
    if not text:
        return MISS
    start = 0
    first = text[0]
    if first in _JSON_SPACE:
        start = _JSON_WS(text, 0).end()
        if start == len(text):
            return MISS
        first = text[start]
    if first not in _JSON_FIRST:
        return MISS  # no JSON value starts so (a BOM neither): what json.loads rejects
    if first == "{" or first == "[":
        value = _fast_or_miss(text)
        if value is not MISS:
            return value
    elif first in _NUMBER_FIRST and not text.startswith("-I", start):  # -Infinity: json's
        # a number, with only whitespace around it: any other character (a date's T, a
        # unit) means json.loads raises; a short run of ASCII digits is int() of it
        if text.strip(_NUMBER_TEXT):
            return MISS
        if not start and len(text) <= 18 and text.isdigit() and (first != "0" or len(text) == 1):
            return int(text)
    elif text in _WORDS:
        return _WORDS[text]
    try:
        value, end = _SCAN(text, start)
    except StopIteration:
        return MISS
    except json.JSONDecodeError:
        return MISS
    except RecursionError:
        raise TooDeep(_TOO_DEEP) from None
    if end != len(text) and _JSON_WS(text, end).end() != len(text):
        return MISS
    return value


def loads(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same error (json's own, raised by it;
    ``TooDeep`` for its ``RecursionError``, see ``json_or_miss``)."""
    value = json_or_miss(text) if type(text) is str else MISS
    return json.loads(text) if value is MISS else value


def _fast_or_miss(text: str) -> Any:
    """orjson's value of ``text`` (an object or array) where it is json's too, else MISS.

    Where both accept a document, orjson and json give the same value (floats correctly
    rounded by both, a repeated key's last value at its first place), with one
    exception: an integer beyond 64 bits, which orjson turns into a float; a value that
    holds a float that large is left to json. orjson turns down what json does and more
    (NaN and the infinities, lone surrogates, nesting past 1024 levels): json decides
    those, so they get json's value or json's error.
    """
    if _fast_loads is None:
        return MISS
    try:
        value = _fast_loads(text)
    except _FastDecodeError:
        return MISS
    return MISS if _has_big_float(value) else value


def _has_big_float(value: Any) -> bool:
    """Whether a decoded JSON object or array holds a float of magnitude 2**63 or more.

    The two loops are the same but for what they iterate: compiled, each is a typed loop
    (a dict's values, a list's items) with the check inline; in Python, no call per item.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            mapping = item
            for entry in mapping.values():
                if type(entry) is float:
                    if entry >= _BIG or entry <= -_BIG:
                        return True
                elif type(entry) is dict or type(entry) is list:
                    stack.append(entry)
        else:
            array = item
            for entry in array:
                if type(entry) is float:
                    if entry >= _BIG or entry <= -_BIG:
                        return True
                elif type(entry) is dict or type(entry) is list:
                    stack.append(entry)
    return False
