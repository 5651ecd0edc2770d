"""respc under transformers' tokenizer methods.

``install(tokenizer)`` makes ``tokenizer.parse_response(...)`` and
``tokenizer.get_response_parser(...)`` run on respc, with transformers' own signatures
(5.24): ``parse_response(response, schema=None, *, prefix=None, tools=None)`` takes text or
token ids (a list, a numpy array, a tensor), one sequence or a batch, ``prefix`` as text or
ids (one, or one per item); ``get_response_parser(response_template=None, *, prefix=None,
tools=None)`` a streaming parser. The template: ``schema`` / ``response_template`` when
given, else the tokenizer's ``response_template``, else the bundled family ``install`` was
given by name (``install(tok, "qwen3")``).

``from_pretrained(path)`` reads the ``response_template`` of a local model folder's
``tokenizer_config.json`` (or a template JSON file) without importing transformers.

Importing this module imports no transformers (a tokenizer's own ``decode`` decodes ids).
"""

from __future__ import annotations

import json
import os
import types
from typing import Any

from ..api import CompiledTemplate, compile_template
from ._common import tokenizer_template

__all__ = ["from_pretrained", "install", "uninstall"]

_ORIGINAL = "_respc_original_methods"

_PREFIX_REQUIRED = (
    "`parse_response` requires `prefix=` (the prompt that came before generation): pass the prompt, "
    "or an empty string or list if there is none"
)


def from_pretrained(path: str | os.PathLike) -> CompiledTemplate:
    """The compiled ``response_template`` of a local model: ``path`` a folder holding
    ``tokenizer_config.json``, that file itself, or a response template's JSON file.
    Reads the file only (no transformers import, nothing downloaded)."""
    path = os.fspath(path)
    file = os.path.join(path, "tokenizer_config.json") if os.path.isdir(path) else path
    if not os.path.isfile(file):
        raise FileNotFoundError(
            f"respc.from_pretrained: {file} does not exist: give a local model folder with a tokenizer_config.json, "
            "or a response template's JSON file"
        )
    with open(file, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"respc.from_pretrained: {file} is not JSON: {error}") from error
    if isinstance(data, dict) and isinstance(data.get("response_template"), dict):
        data = data["response_template"]
    elif not (isinstance(data, dict) and isinstance(data.get("fields"), dict)):
        raise ValueError(
            f"respc.from_pretrained: {file} has no `response_template` (and is not a response template): "
            "add one to tokenizer_config.json, or name a bundled template with respc.load(name)"
        )
    return compile_template(data)


def _template(tokenizer: Any, given: Any) -> CompiledTemplate:
    if given is not None:
        return compile_template(given)
    template = tokenizer_template(tokenizer)
    if template is not None:
        return compile_template(template)
    family = getattr(tokenizer, "_respc_family", None)
    if family is not None:
        return compile_template(family)
    # transformers' own words for a tokenizer without a template
    raise AttributeError("This tokenizer does not have a `response_template` for parsing chat responses!")


def _is_text_batch(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and (not value or isinstance(value[0], str))


def _texts(tokenizer: Any, value: Any) -> tuple[list[str], bool]:
    """(texts, batched) for text, a list of texts, or token ids (list, array, tensor; 1D or 2D)."""
    if isinstance(value, str):
        return [value], False
    if _is_text_batch(value):
        return list(value), True
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        value = value.tolist()  # numpy arrays and tensors, without importing either
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple)):
        return [tokenizer.decode(list(ids)) for ids in value], True
    return [tokenizer.decode(list(value))], False


def _parse_response(self, response, schema=None, *, prefix=None, tools=None):
    compiled = _template(self, schema)
    if prefix is None:
        raise ValueError(_PREFIX_REQUIRED)
    responses, batched = _texts(self, response)
    if isinstance(prefix, (list, tuple)) and not prefix:
        prefixes, prefix_batched = [""], False  # an empty list opts out, as an empty string does
    else:
        prefixes, prefix_batched = _texts(self, prefix)
    if not prefix_batched:
        prefixes = prefixes * len(responses)
    elif len(prefixes) != len(responses):
        raise ValueError(
            f"Got {len(responses)} response(s) but {len(prefixes)} prefix(es); `prefix` must be a single sequence "
            "(broadcast to every response), or one prefix per response."
        )
    parsed = [compiled.parse(text, prefix=pfx, tools=tools) for text, pfx in zip(responses, prefixes)]
    return parsed if batched else parsed[0]


def _get_response_parser(self, response_template=None, *, prefix=None, tools=None):
    compiled = _template(self, response_template)
    if prefix is not None and not isinstance(prefix, str):
        texts, batched = _texts(self, prefix)
        if batched:
            raise ValueError("`prefix=` must be a single sequence (str, list[int], or 1D tensor) for `get_response_parser`.")
        prefix = texts[0]
    return compiled.parser(prefix=prefix, tools=tools)


def install(tokenizer: Any, family: str | None = None) -> Any:
    """Make ``tokenizer.parse_response`` and ``tokenizer.get_response_parser`` run on respc
    (this tokenizer only; ``uninstall`` puts transformers' back). ``family``: a bundled
    template's name, used when the tokenizer has no ``response_template``. Returns the tokenizer."""
    if family is not None:
        compile_template(family)  # an unknown name fails here, not at the first parse
    tokenizer._respc_family = family
    if _ORIGINAL not in tokenizer.__dict__:
        tokenizer.__dict__[_ORIGINAL] = {
            name: tokenizer.__dict__[name] for name in ("parse_response", "get_response_parser") if name in tokenizer.__dict__
        }
    tokenizer.parse_response = types.MethodType(_parse_response, tokenizer)
    tokenizer.get_response_parser = types.MethodType(_get_response_parser, tokenizer)
    return tokenizer


def uninstall(tokenizer: Any) -> Any:
    """Undo :func:`install`: the tokenizer's methods are transformers' again."""
    saved = tokenizer.__dict__.pop(_ORIGINAL, None)
    if saved is None:
        return tokenizer
    for name in ("parse_response", "get_response_parser"):
        tokenizer.__dict__.pop(name, None)
        if name in saved:
            tokenizer.__dict__[name] = saved[name]
    tokenizer.__dict__.pop("_respc_family", None)
    return tokenizer
