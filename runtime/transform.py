"""Helpers for transforms inlined into generated code.

A transform such as ``{"type": "function", "function": {"name": "{name}",
"arguments": "{content}"}}`` is compiled to a Python expression; ``{content}``
becomes the parsed value itself, and the lookups that can fail (a capture that
did not take part in the match, a dotted path into the value) call these
functions, which raise the reference's errors: ``KeyError`` for an unknown
placeholder root, ``ValueError`` for a path that does not resolve.
"""

from __future__ import annotations

import json
from typing import Any

import regex

__all__ = ["capture", "member", "dig", "each", "item", "fill", "json_value"]

#: A whole-string placeholder, as the compiler reads it (compiler/validate.py PLACEHOLDER).
_PLACEHOLDER = regex.compile(r"\{(\w+(?:\.\w+)*)\}")


def _missing(placeholder: str, available: Any) -> KeyError:
    return KeyError(f"transform placeholder '{{{placeholder}}}' is not defined. Available: {sorted(available)}")


def capture(caps: dict, name: str, placeholder: str) -> Any:
    """Root ``name`` of a placeholder in a plain transform (scope: captures + content)."""
    try:
        return caps[name]
    except KeyError:
        raise _missing(placeholder, [*caps, "content"]) from None


def member(item: dict, caps: dict, name: str, placeholder: str) -> Any:
    """Root ``name`` with ``transform_each`` (scope: captures, then the item's keys)."""
    if name in item:
        return item[name]
    if name in caps:
        return caps[name]
    raise _missing(placeholder, {**caps, **item})


def dig(value: Any, keys: tuple[str, ...], placeholder: str) -> Any:
    """Follow the dotted ``keys`` of a placeholder into ``value``."""
    for key in keys:
        if not isinstance(value, dict):
            raise ValueError(
                f"transform placeholder '{{{placeholder}}}' cannot index into {type(value).__name__} at '{key}'"
            )
        if key not in value:
            raise ValueError(
                f"transform placeholder '{{{placeholder}}}' is missing key '{key}'. Available: {sorted(value)}"
            )
        value = value[key]
    return value


def each(value: Any, field: str) -> list:
    """Check that ``transform_each`` has a list to walk."""
    if not isinstance(value, list):
        raise ValueError(
            f"field {field!r}: transform_each requires the parsed content to be a list, got {type(value).__name__}"
        )
    return value


def item(value: Any, field: str) -> dict:
    """Check one element of a ``transform_each`` list."""
    if not isinstance(value, dict):
        raise ValueError(
            f"field {field!r}: transform_each requires each list element to be a dict, got {type(value).__name__}"
        )
    return value


def json_value(text: str) -> Any:
    """A fresh copy of the JSON value ``text`` holds: how generated code spells a constant
    nested too deeply for a Python literal (Python's parser stops at 200 levels)."""
    return json.loads(text)


def fill(node: Any, value: Any, caps: dict, element: dict | None) -> Any:
    """A transform template ``node`` filled in at run time: what the compiler inlines as
    an expression, for a transform nested too deeply for one. ``value`` is the parsed
    content, ``element`` the list item under ``transform_each`` (None otherwise). Dicts and
    lists are rebuilt in order, placeholders looked up as the inlined code does."""
    if isinstance(node, dict):
        return {key: fill(child, value, caps, element) for key, child in node.items()}
    if isinstance(node, list):
        return [fill(child, value, caps, element) for child in node]
    if not isinstance(node, str):
        return node
    whole = _PLACEHOLDER.fullmatch(node)
    if whole is None:
        return node
    path = whole.group(1)
    root, *keys = path.split(".")
    if element is not None:
        found = member(element, caps, root, path)
    elif root == "content":
        found = value
    else:
        found = capture(caps, root, path)
    return dig(found, tuple(keys), path) if keys else found
