"""Template validation: the JSON Schema for shape, then the semantic rules.

Every failure is a :class:`TemplateError` whose message starts with the path of
the offending value (``fields.tool_calls.open_pattern: invalid regex: ...``)
and says what to do about it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import regex

from ..runtime.content import PARSER_ARGS, PARSER_NAMES

__all__ = ["TemplateError", "validate_template", "load_template_file", "format_path", "PLACEHOLDER", "REGEX_FLAGS"]

#: How every template regex is compiled (as the reference does): DOTALL on, MULTILINE off.
REGEX_FLAGS = regex.DOTALL

#: A whole-string transform placeholder: ``{name}`` or a dotted path ``{content.args}``.
PLACEHOLDER = regex.compile(r"\{(\w+(?:\.\w+)*)\}")

_TOP_KEYS = ("version", "defaults", "fields", "start_anchor", "start_anchor_pattern")
_FIELD_KEYS = (
    "open",
    "open_pattern",
    "close",
    "close_pattern",
    "content",
    "content_args",
    "repeats",
    "join",
    "optional",
    "transform",
    "transform_each",
)
_IDENTIFIER = regex.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class TemplateError(ValueError):
    """An invalid response template. The message starts with the path of what is wrong."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


def format_path(parts: tuple | list) -> str:
    """``("fields", "a.b", "open", 1)`` -> ``fields["a.b"].open[1]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _fail(parts: tuple | list, problem: str) -> TemplateError:
    return TemplateError(format_path(parts) or "template", problem)


def load_template_file(path: str | Path) -> dict:
    """Read a template JSON file, with errors that name the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TemplateError(str(path), "no such template file; pass a path to a JSON file or a dict") from None
    except OSError as exc:
        raise TemplateError(str(path), f"cannot read the template file ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TemplateError(
            str(path), f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    # A tokenizer_config.json carries the template under "response_template".
    if isinstance(data, dict) and "fields" not in data and isinstance(data.get("response_template"), dict):
        data = data["response_template"]
    return data


def check_json_values(value: Any, parts: tuple = ()) -> None:
    """A template is a JSON document: only dict (str keys), list, str, int, float, bool, None."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise _fail(parts, f"keys must be strings, got {type(key).__name__} {key!r}")
            check_json_values(item, (*parts, key))
    elif kind is list:
        for index, item in enumerate(value):
            check_json_values(item, (*parts, index))
    elif kind not in (str, int, float, bool, type(None)):
        raise _fail(
            parts,
            f"a template holds JSON values only (object, array, string, number, boolean, null); "
            f"got {kind.__name__} {value!r}",
        )


@lru_cache(maxsize=None)
def _schema() -> dict:
    return json.loads(resources.files(__package__).joinpath("template.schema.json").read_text("utf-8"))


@lru_cache(maxsize=None)
def _validator(ref: str) -> jsonschema.Draft202012Validator:
    schema = _schema()
    if ref:
        schema = {"$defs": schema["$defs"], "$ref": ref}
    return jsonschema.Draft202012Validator(schema)


_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "boolean": "a boolean (true/false)",
    "integer": "an integer",
    "number": "a number",
}


def _schema_check(instance: Any, ref: str, base: tuple) -> None:
    error = jsonschema.exceptions.best_match(_validator(ref).iter_errors(instance))
    if error is None:
        return
    # Descend to the most specific error of a oneOf/anyOf.
    while error.context:
        deeper = jsonschema.exceptions.best_match(error.context)
        if deeper is None:
            break
        error = deeper
    parts = (*base, *error.absolute_path)
    got = error.instance
    got_desc = f"{type(got).__name__} {json.dumps(got)[:60]}" if not isinstance(got, (dict, list)) else type(got).__name__
    validator = error.validator
    if validator == "type":
        expected = error.validator_value
        names = [expected] if isinstance(expected, str) else list(expected)
        problem = f"must be {' or '.join(_TYPE_NAMES.get(n, n) for n in names)}, got {got_desc}"
    elif validator == "additionalProperties":
        extra = sorted(set(got) - set(error.schema.get("properties", {})))
        known = ", ".join(sorted(error.schema.get("properties", {})))
        parts = (*parts, extra[0]) if extra else parts
        problem = f"unknown key; the known keys here are: {known}"
    elif validator == "minLength":
        problem = "must not be an empty string"
    elif validator in ("minItems", "maxItems"):
        problem = f"has the wrong number of items ({error.message})"
    elif validator == "minProperties":
        problem = "must not be empty"
    elif validator == "enum":
        problem = f"must be one of {', '.join(map(json.dumps, error.validator_value))}; got {got_desc}"
    elif validator == "const":
        problem = f"must be {json.dumps(error.validator_value)}; got {got_desc}"
    elif validator == "required":
        missing = [name for name in error.validator_value if name not in got]
        parts = (*parts, missing[0]) if missing else parts
        problem = "is required here"
    else:
        problem = error.message
    raise _fail(parts, problem)


def _compile_regex(pattern: str, parts: tuple) -> regex.Pattern:
    try:
        return regex.compile(pattern, REGEX_FLAGS)
    except Exception as exc:  # regex.error, and OverflowError etc. for pathological patterns
        raise _fail(
            parts,
            f"invalid regex: {exc}; fix the pattern (it is compiled with the `regex` module, "
            "DOTALL on, MULTILINE off)",
        ) from None


def _check_literals(value: Any, parts: tuple, key: str) -> None:
    if isinstance(value, str):
        if not value:
            raise _fail(parts, f"'{key}' literals cannot be empty strings; remove it or use a pattern")
        return
    if not isinstance(value, list):
        raise _fail(parts, f"'{key}' must be a string or a list of strings, got {type(value).__name__}")
    if not value:
        raise _fail(parts, f"the '{key}' list must contain at least one literal")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _fail((*parts, index), f"'{key}' lists must contain only strings, got {type(item).__name__}")
        if not item:
            raise _fail((*parts, index), f"'{key}' literals cannot be empty strings; remove it")


def _check_anchor_pair(spec: dict, parts: tuple, literal_key: str, pattern_key: str, what: str) -> regex.Pattern | None:
    if literal_key in spec and pattern_key in spec:
        raise _fail(
            (*parts, pattern_key),
            f"cannot specify both '{literal_key}' and '{pattern_key}' for {what}; keep one",
        )
    if literal_key in spec:
        _check_literals(spec[literal_key], (*parts, literal_key), literal_key)
    elif pattern_key in spec:
        pattern = spec[pattern_key]
        if not isinstance(pattern, str):
            raise _fail((*parts, pattern_key), f"must be a string (a regex), got {type(pattern).__name__}")
        return _compile_regex(pattern, (*parts, pattern_key))
    return None


def _check_transform_strings(value: Any, parts: tuple) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _check_transform_strings(item, (*parts, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_transform_strings(item, (*parts, index))
    elif isinstance(value, str) and PLACEHOLDER.search(value) and not PLACEHOLDER.fullmatch(value):
        raise _fail(
            parts,
            f"transform string {value!r} mixes a {{placeholder}} with literal text; use either a "
            'whole-string placeholder (e.g. "{content}") or a plain literal (no string interpolation)',
        )


def _check_content_args(content: str, args: Any, parts: tuple) -> None:
    if not isinstance(args, dict):
        raise _fail(parts, f"must be an object of arguments for the '{content}' parser, got {type(args).__name__}")
    allowed = PARSER_ARGS[content]
    for key in args:
        if key not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise _fail((*parts, key), f"unknown argument for the '{content}' parser; it accepts: {known}")
    ref = "#/$defs/content_args/" + ("text" if content in ("int", "float", "bool") else content)
    _schema_check(args, ref, parts)
    if content == "xml-inline":
        tag = _compile_regex(args["tag_pattern"], (*parts, "tag_pattern"))
        for group in ("key", "value"):
            if group not in tag.groupindex:
                raise _fail(
                    (*parts, "tag_pattern"),
                    f"needs a named group '{group}' (write (?P<{group}>...)); each match becomes key -> value",
                )
    for key in ("value_parser",):
        if key in args:
            nested = args[key]
            _check_content_args(nested["name"], nested.get("args", {}), (*parts, key, "args"))


def validate_template(template: Any) -> dict:
    """Check ``template`` completely; return it unchanged when it is valid."""
    if not isinstance(template, dict):
        raise TemplateError(
            "template", f"a response template must be a dict (a JSON object), got {type(template).__name__}"
        )
    check_json_values(template)
    for key in template:
        if key not in _TOP_KEYS:
            raise _fail((key,), f"unknown top-level key; the known keys are: {', '.join(_TOP_KEYS)}")
    version = template.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise _fail(("version",), f"unsupported template version {version!r}; only version 1 exists")
    if not isinstance(template.get("defaults", {}), dict):
        raise _fail(("defaults",), "must be a dict of values pre-filled in every message")
    fields = template.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise _fail(("fields",), "must be a non-empty dict mapping output keys to field specs")
    _check_anchor_pair(template, (), "start_anchor", "start_anchor_pattern", "the start anchor")
    if "start_anchor" not in template and "start_anchor_pattern" not in template:
        raise _fail(
            ("start_anchor",),
            "the template must define 'start_anchor' (or 'start_anchor_pattern'): where the assistant "
            'message starts in the prompt, e.g. "<|im_start|>assistant\\n"',
        )
    implicit = []
    for name, field in fields.items():
        parts = ("fields", name)
        if not isinstance(field, dict):
            raise _fail(parts, f"a field spec must be a dict, got {type(field).__name__}")
        for key in field:
            if key not in _FIELD_KEYS:
                raise _fail((*parts, key), f"unknown field key; the known keys are: {', '.join(_FIELD_KEYS)}")
        content = field.get("content", "text")
        if content not in PARSER_NAMES:
            raise _fail(
                (*parts, "content"),
                f"unknown content parser {content!r}; available: {', '.join(sorted(PARSER_NAMES))}",
            )
        open_re = _check_anchor_pair(field, parts, "open", "open_pattern", f"field {name!r}")
        close_re = _check_anchor_pair(field, parts, "close", "close_pattern", f"field {name!r}")
        if "open" not in field and "open_pattern" not in field:
            implicit.append(name)
        if "join" in field:
            if not isinstance(field["join"], str):
                raise _fail((*parts, "join"), f"must be a string separator, got {type(field['join']).__name__}")
            if not field.get("repeats", False):
                raise _fail((*parts, "join"), "'join' requires 'repeats': true (it joins the repeated blocks)")
        transform = field.get("transform")
        transform_each = field.get("transform_each", False)
        if not isinstance(transform_each, bool):
            raise _fail((*parts, "transform_each"), f"must be a bool, got {type(transform_each).__name__}")
        if transform_each and transform is None:
            raise _fail((*parts, "transform_each"), "is set but the field has no 'transform' to apply to each item")
        if transform is not None:
            _check_transform_strings(transform, (*parts, "transform"))
        else:
            groups = sorted(set(open_re.groupindex if open_re else ()) | set(close_re.groupindex if close_re else ()))
            if groups:
                where = "open_pattern" if open_re is not None and open_re.groupindex else "close_pattern"
                raise _fail(
                    (*parts, where),
                    f"declares named group(s) {groups} but the field has no 'transform'; captures only reach "
                    "the output through a transform (next to 'content'): add one that uses them, or remove "
                    "the named groups",
                )
        _schema_check(field, "#/$defs/field", parts)
        _check_content_args(content, field.get("content_args", {}), (*parts, "content_args"))
    if len(implicit) > 1:
        raise _fail(
            ("fields",),
            f"at most one field may omit 'open'/'open_pattern' (that field collects the text no other region "
            f"claims); found {len(implicit)}: {', '.join(map(repr, implicit))}. Give the others an open delimiter",
        )
    _schema_check(template, "", ())
    return template

