"""Batch parsing: many whole outputs with one template, as datasets and pipelines hold them.

``parse_batch`` resolves the template and types the tools once, then runs one tight loop
over the template's ``Parser.parse_whole``. With ``errors="collect"`` a row that fails is
recorded as a :class:`RowError` and the rest go on, so one bad generation among millions
does not stop a job.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from .api import CompiledTemplate, Tools, _tool_list, compile_template
from .runtime.base import PREFIX_REQUIRED
from .runtime.tools import tool_types

__all__ = ["BatchError", "RowError", "parse_batch"]


@dataclass(frozen=True)
class RowError:
    """A row that failed to parse (``parse_batch(..., errors="collect")``).

    ``index`` is the row's position in the batch, ``error_type`` the exception's class
    name (``"ValueError"``), ``message`` its text.
    """

    index: int
    error_type: str
    message: str

    def __str__(self) -> str:
        return f"row {self.index}: {self.error_type}: {self.message}"


class BatchError(ValueError):
    """A row of ``parse_batch(..., errors="raise")`` failed: ``index`` is the row, the row's
    own exception is ``__cause__``, and the message names both."""

    def __init__(self, index: int, error: BaseException):
        super().__init__(f"row {index}: {type(error).__name__}: {error}")
        self.index = index


def _column(values: Any, what: str) -> Sequence:
    """``values`` (a column of a batch) as a list or tuple of its Python values.

    Lists and tuples are used as they are; a pyarrow Array or ChunkedArray, a numpy array
    and a pandas Series give their Python values (``to_pylist``/``tolist``); any other
    iterable (a ``datasets`` Column, a generator) is read into a list.
    """
    if isinstance(values, (list, tuple)):
        return values
    if isinstance(values, (str, bytes, dict)) or not isinstance(values, Iterable):
        hint = ": parse one text with respc.parse_response()" if isinstance(values, str) and what == "texts" else ""
        raise TypeError(
            f"{what} must be a list of str (or an Arrow, datasets, numpy or pandas column), "
            f"got {type(values).__name__}{hint}"
        )
    for convert in ("to_pylist", "tolist"):  # pyarrow; numpy and pandas
        method = getattr(values, convert, None)
        if callable(method):
            return method()
    return list(values)


def _typed_once(tools: Tools) -> list[dict] | None:
    """``tools`` as the schemas that type the same way, so that each row's typing is a
    short walk: a function's parameters are read from its type hints once, here, rather
    than once per row."""
    if tools is None:
        return None
    table = tool_types(_tool_list(tools))
    return [{"name": name, "parameters": {"properties": properties}} for name, properties in table.items()]


@overload
def parse_batch(
    texts: Any,
    template: dict | str | os.PathLike | CompiledTemplate,
    *,
    prefix: str | Any,
    tools: Tools = None,
    errors: Literal["raise"] = "raise",
) -> list[dict]: ...


@overload
def parse_batch(
    texts: Any,
    template: dict | str | os.PathLike | CompiledTemplate,
    *,
    prefix: str | Any,
    tools: Tools = None,
    errors: Literal["collect"],
) -> tuple[list[dict | None], list[RowError]]: ...


def parse_batch(
    texts: Any,
    template: dict | str | os.PathLike | CompiledTemplate,
    *,
    prefix: str | Any = None,
    tools: Tools = None,
    errors: str = "raise",
) -> list[dict] | tuple[list[dict | None], list[RowError]]:
    """Parse many whole model outputs with one template, one message per text, in order.

    ``texts``: a list or tuple of str, a pyarrow Array or ChunkedArray of strings, a
    ``datasets`` column (``dataset["text"]``, or a batch's list in ``Dataset.map``), a
    numpy array or pandas Series of str. ``template``: a bundled template's name, a path,
    a template dict or a CompiledTemplate (as for :func:`respc.parse_response`).
    ``prefix`` (required; ``""`` opts out): one str for every row, or a column like
    ``texts`` holding one prefix per row. ``tools`` types tool-call arguments.

    ``errors="raise"`` (the default) returns the list of messages and raises a
    :class:`BatchError` naming the first row that fails (its exception is the cause).
    ``errors="collect"`` returns ``(messages, errors)``: a failed row's message is None
    and ``errors`` lists a :class:`RowError` for each such row; the other rows are parsed.
    """
    if errors not in ("raise", "collect"):
        raise ValueError(f'errors must be "raise" or "collect", got {errors!r}')
    if prefix is None:
        raise ValueError(PREFIX_REQUIRED)
    rows = _column(texts, "texts")
    if isinstance(prefix, str):
        prefixes = None
    else:
        prefixes = _column(prefix, "prefix")
        if len(prefixes) != len(rows):
            raise ValueError(
                f"got {len(rows)} texts but {len(prefixes)} prefixes; pass one prefix per text, "
                "or a single str to use for all"
            )
    parse = compile_template(template).Parser.parse_whole
    typed = _typed_once(tools)
    pairs = zip(prefixes, rows) if prefixes is not None else ((prefix, text) for text in rows)
    messages: list[Any] = []
    append = messages.append
    if errors == "raise":
        try:
            for row_prefix, text in pairs:
                append(parse(row_prefix, text, typed))
        except Exception as exc:
            raise BatchError(len(messages), exc) from exc
        return messages
    failed: list[RowError] = []
    for index, (row_prefix, text) in enumerate(pairs):
        try:
            append(parse(row_prefix, text, typed))
        except Exception as exc:  # noqa: BLE001 - any row's failure is recorded, the batch goes on
            append(None)
            failed.append(RowError(index, type(exc).__name__, str(exc)))
    return messages, failed
