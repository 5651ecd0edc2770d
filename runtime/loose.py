"""Content parsers for ``content_args`` of any shape, with the reference's semantics.

A template published with a model is checked by transformers alone, which accepts any
``content_args`` when it loads a template and reads them only when a region is parsed: an
argument a parser does not know is ignored, a flag counts by its truthiness, and a value
of the wrong type fails then, with the error Python gives for it. respc compiles such a
template too (with a :class:`respc.TemplateWarning`), and its fields parse here, reading
their arguments the same way at the same moments, so values and error classes are the
reference's. Canonical arguments (the common case) are bound once by ``runtime.content``
instead, which is faster.

Each function reads ``args`` as the reference's parser of that name does: in the same
order, with the same defaults, so that the first problem met is the same one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import regex

__all__ = ["parse_content", "parser"]

_OPEN, _CLOSE = "\x01", "\x02"  # string_delims placeholders (control characters)
# a whole JSON string (kept as it is) or a bare key after { or , (quoted)
_KEY_OR_STRING = regex.compile(r'"(?:\\.|[^"\\])*"|(?<=[{,])(\s*)(\w+)(\s*):')


def _quote_key(match: Any) -> str:
    if match.group(2) is None:
        return match.group(0)
    return f'{match.group(1)}"{match.group(2)}"{match.group(3)}:'


def _text(text: str, args: Any) -> Any:
    return text.strip() if args.get("strip", True) else text


def _int(text: str, args: Any) -> int:
    return int(_text(text, args))


def _float(text: str, args: Any) -> float:
    return float(_text(text, args))


def _bool(text: str, args: Any) -> bool:
    return _text(text, args).lower() in ("true", "1")


def _json(text: str, args: Any) -> Any:
    delims = args.get("string_delims", [])
    unquoted = args.get("unquoted_keys", False)
    if delims and (_OPEN in text or _CLOSE in text):
        raise ValueError(
            "json: the region contains the reserved characters \\x01/\\x02, which string_delims uses "
            "internally; it cannot be parsed safely"
        )
    working = text
    pulled: list[str] = []

    def pull(match: Any) -> str:
        pulled.append(match.group(1))
        return f"{_OPEN}{len(pulled) - 1}{_CLOSE}"

    for opening, closing in delims:
        working = regex.sub(regex.escape(opening) + r"(.*?)" + regex.escape(closing), pull, working, flags=regex.DOTALL)
    if unquoted:
        working = _KEY_OR_STRING.sub(_quote_key, working)
    for index, value in enumerate(pulled):
        working = working.replace(f"{_OPEN}{index}{_CLOSE}", json.dumps(value))
    try:
        return json.loads(working)
    except json.JSONDecodeError as exc:
        if args.get("allow_non_json"):
            return _text(text, args)
        if working == text:
            raise ValueError(f"json: the region is not valid JSON ({exc}); body: {text!r}") from exc
        raise ValueError(
            f"json: the region is not valid JSON after the dialect rewrites ({exc}); body: {text!r}; "
            f"rewritten: {working!r}"
        ) from exc


def _nested(raw: Any, spec: Any) -> Any:
    """A value through ``value_parser`` (``{"name": ..., "args": ...}``), or as it is."""
    if spec is None:
        return raw
    return parse_content(raw, spec.get("name", "text"), spec.get("args", {}))


def _xml_inline(text: str, args: Any) -> dict:
    tag_pattern = args.get("tag_pattern")
    if tag_pattern is None:
        raise ValueError("xml-inline: content_args.tag_pattern is required")
    spec = args.get("value_parser")
    merge = args.get("merge_duplicates", False)
    out: dict[str, Any] = {}
    listed: set[str] = set()  # keys whose value merge_duplicates made a list
    for match in regex.finditer(tag_pattern, text, flags=regex.DOTALL):
        groups = match.groupdict()
        key = groups.get("key")
        if key is None:
            raise ValueError(f"xml-inline: the 'key' group of tag_pattern {tag_pattern!r} did not take part in a match")
        value = _nested(groups.get("value", ""), spec)
        if merge and key in out:
            if key not in listed:
                out[key] = [out[key]]
                listed.add(key)
            out[key].append(value)
        else:
            out[key] = value
    return out


def _kv_lines(text: str, args: Any) -> dict:
    line_sep = args.get("line_sep", "\n")
    kv_sep = args.get("kv_sep", ":")
    spec = args.get("value_parser")
    out: dict[str, Any] = {}
    for line in text.split(line_sep):
        line = _text(line, args)
        if not line or kv_sep not in line:
            continue
        key, value = line.split(kv_sep, 1)
        key, value = _text(key, args), _text(value, args)
        out[key] = _nested(value, spec)
    return out


def _python_call_list(text: str, args: Any) -> Any:
    from .content import make_parser  # it reads no arguments

    return make_parser("python-call-list", {})(text)


_PARSERS: dict[str, Callable[[str, Any], Any]] = {
    "text": _text,
    "int": _int,
    "float": _float,
    "bool": _bool,
    "json": _json,
    "xml-inline": _xml_inline,
    "kv-lines": _kv_lines,
    "python-call-list": _python_call_list,
}


def parse_content(text: Any, name: Any, args: Any) -> Any:
    """Parse ``text`` with the parser ``name`` and arguments ``args`` as they are (an unknown
    name is a KeyError, as in the reference)."""
    return _PARSERS[name](text, args)


def parser(name: str, args: Any) -> Callable[[str], Any]:
    """``body -> value`` for a field whose ``content_args`` are ``args`` (any JSON value)."""
    parse = _PARSERS[name]
    return lambda body: parse(body, args)
