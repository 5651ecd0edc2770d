"""The compiler: template -> validated template -> IR -> Python module source.

    validate_template()  JSON Schema for shape, then the semantic rules
    build_ir()           fields, classified delimiters, states and watch sets
    render_module()      jinja2 code templates -> source, formatted with black
"""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import Any

from .._version import __version__
from .emit import format_source, render_module
from .ir import build_ir
from .validate import TemplateError, TemplateWarning, check_json_values, load_template_file, validate_template

__all__ = [
    "TemplateError",
    "TemplateWarning",
    "canonical_json",
    "compile_source",
    "format_source",
    "hash_canonical",
    "load_template_file",
    "template_hash",
    "validate_template",
]


def canonical_json(template: Any) -> str:
    """The template as compact JSON (key order kept: field order is part of a template)."""
    if not isinstance(template, dict):
        validate_template(template)  # raises the right error for a non-dict
    check_json_values(template)
    return json.dumps(template, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


def hash_canonical(canonical: str) -> str:
    digest = hashlib.sha256(f"{canonical}\nrespc {__version__}".encode("utf-8")).hexdigest()
    return f"sha256:{digest}"


def template_hash(template: Any) -> str:
    """``sha256:...`` of the canonical template JSON and the respc version."""
    return hash_canonical(canonical_json(template))


def compile_source(template: Any, *, format: bool = True, strict: bool = False) -> tuple[str, str]:
    """Validate and compile ``template``; return ``(hash, module source)``.

    The source is deterministic: the same template and respc version give the
    same bytes. ``format=False`` skips black: the code is the same, only laid out
    as emitted (what runs for a template compiled at run time). What the template
    says that looks wrong is issued as a :class:`TemplateWarning` (``strict``:
    raised as a TemplateError).
    """
    for warning in validate_template(template, strict=strict):
        warnings.warn(warning, stacklevel=3)
    digest = template_hash(template)
    source = render_module(build_ir(template), template, digest, __version__)
    return digest, (format_source(source) if format else source)
