"""Parsing in Ray Data: ``ds.map_batches(respc.ray.ParseBatches(template, prefix=""))``.

Ray is not imported here: this module only shapes batches, so ``import respc`` (and this
module) works without Ray, and Ray's workers unpickle ``ParseBatches`` with respc alone.

Each message is stored as a **JSON string** (Python's ``json``, so NaN and the infinities
are kept as ``NaN``/``Infinity`` tokens). Ray turns batches into Arrow tables, and Arrow
cannot hold messages as they are: the ``arguments`` of tool calls differ in shape and type
from row to row, and a struct column makes keys a row lacks appear as None and turns an
integer in a list of floats into a float. :func:`messages` reads them back, exactly.
See docs/scale.md.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .api import CompiledTemplate, Tools, compile_template
from .batch import _typed_once, parse_batch
from .runtime.base import PREFIX_REQUIRED

__all__ = ["ParseBatches", "dumps", "messages"]


def dumps(message: dict) -> str:
    """A message as the JSON string ParseBatches stores; ``json.loads`` reads it back equal.

    Non-ASCII text is written as it is, except in a message holding a lone surrogate (a
    ``"\\ud800"`` escape in a tool call's JSON), which UTF-8, and so Arrow, cannot hold:
    that message is written with ``\\uXXXX`` escapes, the same JSON value."""
    text = json.dumps(message, ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(message)
    return text


class ParseBatches:
    """A callable for ``Dataset.map_batches`` that parses a column of model outputs.

    Pass an instance, ``ds.map_batches(ParseBatches("qwen3", prefix=""))``, or the class
    with its arguments, ``ds.map_batches(ParseBatches, fn_constructor_kwargs={...},
    concurrency=2)`` (each actor then resolves the template once). Batches may come as Ray
    gives them by default (a dict of numpy arrays), as pandas DataFrames or as pyarrow
    Tables (``batch_format=``); each comes back in its own format with every column kept
    and ``output_column`` added (or replaced): the message as a JSON string (:func:`dumps`).

    ``template``: a bundled template's name, a path, a dict or a CompiledTemplate (it is
    resolved here and pickles by what defines it). Exactly one of ``prefix`` (one str for
    every row; ``""`` opts out) and ``prefix_column`` (each row's chat prompt). ``tools``
    types tool-call arguments. ``errors="raise"`` fails the batch at the first row that
    fails; ``errors="collect"`` leaves that row's message null and writes ``"Type:
    message"`` in ``error_column`` (null for the rows that parse).
    """

    def __init__(
        self,
        template: dict | str | os.PathLike | CompiledTemplate,
        *,
        prefix: str | None = None,
        prefix_column: str | None = None,
        text_column: str = "text",
        output_column: str = "message",
        tools: Tools = None,
        errors: str = "raise",
        error_column: str = "error",
    ):
        if (prefix is None) == (prefix_column is None):
            if prefix is None:
                raise ValueError(f"pass prefix= (one str for every row) or prefix_column=: {PREFIX_REQUIRED}")
            raise ValueError("pass prefix= or prefix_column=, not both")
        if errors not in ("raise", "collect"):
            raise ValueError(f'errors must be "raise" or "collect", got {errors!r}')
        self.template = compile_template(template)
        self.prefix = prefix
        self.prefix_column = prefix_column
        self.text_column = text_column
        self.output_column = output_column
        self.tools = _typed_once(tools)
        self.errors = errors
        self.error_column = error_column

    def __call__(self, batch: Any) -> Any:
        """``batch`` with the messages (and errors) of its ``text_column`` added."""
        columns = self._parse(self._column(batch, self.text_column), batch)
        if isinstance(batch, dict):
            import numpy

            for name, values in columns.items():
                batch[name] = numpy.array(values, dtype=object)
            return batch
        if hasattr(batch, "append_column"):  # a pyarrow Table
            import pyarrow

            for name, values in columns.items():
                array = pyarrow.array(values, pyarrow.string())
                index = batch.schema.get_field_index(name)
                batch = batch.set_column(index, name, array) if index >= 0 else batch.append_column(name, array)
            return batch
        return batch.assign(**columns)  # a pandas DataFrame (a new one: Ray's may be read-only)

    def _column(self, batch: Any, name: str) -> Any:
        names = batch.column_names if hasattr(batch, "column_names") else list(batch.keys())
        if name not in names:
            raise KeyError(f"respc.ray.ParseBatches: the batch has no column {name!r} (it has: {', '.join(names)})")
        return batch[name]

    def _parse(self, texts: Any, batch: Any) -> dict[str, list]:
        prefix = self.prefix if self.prefix_column is None else self._column(batch, self.prefix_column)
        if self.errors == "raise":
            found = parse_batch(texts, self.template, prefix=prefix, tools=self.tools)
            return {self.output_column: [dumps(message) for message in found]}
        found, failed = parse_batch(texts, self.template, prefix=prefix, tools=self.tools, errors="collect")
        errors: list[str | None] = [None] * len(found)
        for row_error in failed:
            errors[row_error.index] = f"{row_error.error_type}: {row_error.message}"
        return {
            self.output_column: [None if message is None else dumps(message) for message in found],
            self.error_column: errors,
        }


def messages(dataset: Any, column: str = "message") -> list[dict | None]:
    """The messages of a Ray Dataset that ParseBatches wrote, in its order (None for the rows
    that failed), read back from their JSON strings on this process."""
    return [
        None if row[column] is None else json.loads(row[column])
        for row in dataset.select_columns([column]).iter_rows()
    ]
