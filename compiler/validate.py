"""Template validation: the JSON Schema for shape, then the semantic rules.

Every failure is a :class:`TemplateError` whose message starts with the path of
the offending value (``fields.tool_calls.open_pattern: invalid regex: ...``)
and says what to do about it. A template fails exactly where the reference
(transformers' ``load_response_template``) refuses it; what the reference accepts
but that looks wrong is a :class:`TemplateWarning`, and compiles.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import regex

from ..runtime.content import PARSER_ARGS, PARSER_NAMES

__all__ = [
    "MAX_DELIMITER_CHARS",
    "MAX_FIELDS",
    "MAX_LITERALS",
    "MAX_TEMPLATE_CHARS",
    "PLACEHOLDER",
    "REGEX_FLAGS",
    "TemplateError",
    "TemplateWarning",
    "content_args_findings",
    "format_path",
    "load_template_file",
    "validate_template",
]

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

    def __init__(self, path: str, problem: str, parts: tuple = ()):
        self.path = path
        self.problem = problem
        self.parts = parts
        super().__init__(f"{path}: {problem}" if path else problem)


class TemplateWarning(UserWarning):
    """Something a template says that the reference accepts but that looks wrong: an
    argument its parser ignores, a flag that is not a boolean, a pattern that makes every
    region fail to parse, ... The message starts with the path, as a TemplateError's does;
    ``strict=True`` (``respc compile --strict``) raises these as TemplateError."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


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
    return TemplateError(format_path(parts) or "template", problem, tuple(parts))


def load_template_file(path: str | Path) -> dict:
    """Read a template JSON file, with errors that name the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TemplateError(str(path), "no such template file; pass a path to a JSON file or a dict") from None
    except UnicodeDecodeError as exc:
        raise TemplateError(
            str(path), f"not UTF-8 text (byte {exc.start}: {exc.reason}); save the template as UTF-8 JSON"
        ) from None
    except OSError as exc:
        raise TemplateError(str(path), f"cannot read the template file ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TemplateError(
            str(path), f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise TemplateError(
            str(path), "JSON nested too deeply to read; a response template is a few levels deep: check the file"
        ) from None
    # A tokenizer_config.json carries the template under "response_template".
    if isinstance(data, dict) and "fields" not in data:
        if isinstance(data.get("response_template"), dict):
            return data["response_template"]
        if "response_template" in data:
            raise TemplateError(
                f"{path}: response_template",
                f"must be a JSON object (a response template), got {type(data['response_template']).__name__}",
            )
        if _TOKENIZER_KEYS.intersection(data):
            raise TemplateError(
                str(path),
                "no response template found: this looks like a tokenizer_config.json without a "
                "'response_template' key; pass a template JSON file, a bundled template name (respc list), "
                "or a tokenizer_config.json that holds one",
            )
    return data


#: keys that only a tokenizer_config.json has (to tell one without a template apart)
_TOKENIZER_KEYS = frozenset(
    {"tokenizer_class", "model_max_length", "chat_template", "added_tokens_decoder", "bos_token", "eos_token",
     "pad_token", "clean_up_tokenization_spaces", "model_input_names"}
)


#: How deeply a template's objects and arrays may nest, the template itself being level 1.
#: Every walk of a template recurses (json.dumps for its hash, copy.deepcopy of defaults in
#: each message, a deep transform filled at run time), and so does the reference: under
#: Python's default recursion limit (1000) it fails from about 490 levels in defaults or a
#: transform. 500 keeps every template whose defaults and transforms the reference can
#: parse (a deeper value it accepts can only be one it ignores, e.g. an unknown
#: content_args entry), and refuses deeper ones with an error at their path instead of a
#: RecursionError somewhere inside.
MAX_DEPTH = 500

_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))

# Size limits. A template is untrusted input (it ships inside a model repository), and its
# generated module, the compile's memory and the import's time grow with it: past these,
# validation refuses it at its path instead of spending minutes and gigabytes compiling it.
# Each is far above what real templates write (delimiters of under 100 characters, fewer
# than 20 fields, a few alternatives), and a template at every limit at once still
# compiles in seconds (bench/compile_size.py). The reference has none of them (a
# deliberate difference, docs/parity.md).
#: characters in one delimiter: a literal (each one of a list), a pattern, a start anchor,
#: an xml-inline tag_pattern
MAX_DELIMITER_CHARS = 4096
#: literals in one ``open`` / ``close`` / ``start_anchor`` list
MAX_LITERALS = 256
#: fields in a template
MAX_FIELDS = 128
#: characters of the whole template as compact JSON (defaults and transforms included)
MAX_TEMPLATE_CHARS = 1_000_000


def check_json_values(value: Any, parts: tuple = ()) -> None:
    """A template is a JSON document: only dict (str keys), list, str, int, float, bool, None,
    with no object or array inside itself (a cycle) and at most MAX_DEPTH levels deep.

    The walk keeps its own stack rather than recursing, so a cyclic or very deep value is an
    error at its path before anything else recurses into it (the hash's json.dumps first)."""
    if type(value) is not dict and type(value) is not list:
        if type(value) not in _JSON_SCALARS:
            raise _not_json(value, parts)
        return
    scalars = _JSON_SCALARS
    path = list(parts)
    # the containers on the path from ``value`` to the one being walked: id -> depth of its path
    open_at = {id(value): len(path)}
    # per open container: (it, an iterator over its (key or index, item) pairs, is it a dict)
    stack = [(value, iter(value.items()) if type(value) is dict else enumerate(value), type(value) is dict)]
    while stack:
        container, items, keyed = stack[-1]
        for key, item in items:
            if keyed and type(key) is not str:
                raise _fail(path, f"keys must be strings, got {type(key).__name__} {key!r}")
            kind = type(item)
            if kind in scalars:
                continue
            path.append(key)
            if kind is not dict and kind is not list:
                raise _not_json(item, path)
            if id(item) in open_at:
                again = format_path(path[: open_at[id(item)]]) or "the whole template"
                raise _fail(
                    path,
                    f"the template refers to itself (a cycle: this is {again} again); templates must be JSON "
                    "data (a tree of objects, arrays and scalars): put a copy here, not the object itself",
                )
            if len(stack) >= MAX_DEPTH:
                raise TemplateError(
                    f"{format_path(path[:8])}...({len(path) - 8} more levels)",  # the whole path is that long
                    f"objects and arrays nest more than {MAX_DEPTH} levels deep here (the template itself is "
                    f"level 1); a template may nest at most {MAX_DEPTH} levels (deeper ones exhaust Python's "
                    "recursion limit, in the reference too): flatten this value",
                    tuple(path),
                )
            open_at[id(item)] = len(path)
            stack.append((item, iter(item.items()) if kind is dict else enumerate(item), kind is dict))
            break
        else:  # every item of ``container`` checked
            stack.pop()
            del open_at[id(container)]
            if stack:
                path.pop()


def _not_json(value: Any, parts: tuple | list) -> TemplateError:
    return _fail(
        parts,
        "a template holds JSON values only (object, array, string, number, boolean, null); "
        f"got {type(value).__name__} {value!r}",
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
        _check_size(value, parts, "literal")
        return
    if not isinstance(value, list):
        raise _fail(parts, f"'{key}' must be a string or a list of strings, got {type(value).__name__}")
    if not value:
        raise _fail(parts, f"the '{key}' list must contain at least one literal")
    if len(value) > MAX_LITERALS:
        raise _fail(
            parts,
            f"has {len(value)} literals, over the limit of {MAX_LITERALS} (MAX_LITERALS) a list may hold; "
            "real delimiters are a few literals: shorten the list, or use a pattern",
        )
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _fail((*parts, index), f"'{key}' lists must contain only strings, got {type(item).__name__}")
        if not item:
            raise _fail((*parts, index), f"'{key}' literals cannot be empty strings; remove it")
        _check_size(item, (*parts, index), "literal")


def _check_size(text: str, parts: tuple, what: str) -> None:
    """A delimiter (literal or pattern) of at most MAX_DELIMITER_CHARS characters."""
    if len(text) > MAX_DELIMITER_CHARS:
        raise _fail(
            parts,
            f"this {what} is {len(text)} characters long, over the limit of {MAX_DELIMITER_CHARS} "
            "(MAX_DELIMITER_CHARS) for one delimiter or pattern; real delimiters are under 100 "
            "characters: shorten it",
        )


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
        _check_size(pattern, (*parts, pattern_key), "pattern")
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


#: what the parsers that always give a str, a number or a bool give (nothing to index into)
_SCALAR_PARSERS = {"text": "a str", "int": "an int", "float": "a float", "bool": "a bool"}
#: the keys of every item a python-call-list parser gives (what transform_each unpacks)
_CALL_ITEM_KEYS = {"name": "a str", "arguments": None}


def _placeholders(value: Any, parts: tuple) -> Iterator[tuple[tuple, str]]:
    """Every whole-string placeholder of a transform: its path and its dotted name."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _placeholders(item, (*parts, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _placeholders(item, (*parts, index))
    elif isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole:
            yield parts, whole.group(1)


def _placeholder_findings(transform: Any, parts: tuple, groups: set, content: str, each: bool, out: list) -> None:
    """Placeholders that no region can ever fill: the reference accepts the template, and
    every region of the field then fails to parse (KeyError, or ValueError for a dotted path
    into a str). The scope of a transform is the field's named groups (captures, always
    strs) and ``content``; with ``transform_each``, the groups and each item's keys instead,
    which only the ``python-call-list`` parser fixes (``name``, ``arguments``). A name that
    the parsed content may hold is never a finding."""
    if each:
        if content != "python-call-list":
            return  # an item of another parser may hold any key
        scope = {name: "a str (a capture)" for name in groups} | _CALL_ITEM_KEYS
        filled = "with transform_each, each item's keys (python-call-list: name, arguments) and the named groups"
    else:
        scope = {name: "a str (a capture)" for name in groups} | {"content": _SCALAR_PARSERS.get(content)}
        filled = "'content' and the named groups of open_pattern/close_pattern"
    for where, path in _placeholders(transform, parts):
        root, *keys = path.split(".")
        if root not in scope:
            available = ", ".join(sorted(scope))
            out.append((where, f"placeholder {{{path}}} can never be filled: {root!r} is not in its scope ({filled}: "
                        f"{available}); the reference accepts the template, but every region of this field fails to "
                        "parse (KeyError); use one of those names, or add a named group (?P<" + root + ">...)"))
        elif keys and scope[root] is not None:
            out.append((where, f"placeholder {{{path}}} can never be filled: {root!r} is {scope[root]}, which has no "
                        f"key {keys[0]!r}; every region of this field fails to parse (ValueError); write {{{root}}}"))


def _content_findings(content: str, args: Any, parts: tuple, out: list) -> None:
    """What the reference accepts in ``content_args`` but would ignore, or fail on only when a
    region is parsed: each finding ``(parts, problem)`` goes to ``out``. A field without
    findings has canonical arguments (bound once by ``runtime.content``); any other runs its
    arguments through ``runtime.loose``, with the reference's semantics."""
    if not isinstance(args, dict):
        out.append((parts, f"must be an object of arguments for the '{content}' parser, got "
                    f"{type(args).__name__}; the reference accepts the template but fails (AttributeError) "
                    "when the field is parsed"))
        return
    allowed = PARSER_ARGS.get(content, frozenset())
    for key in args:
        if key not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            out.append(((*parts, key), f"the '{content}' parser ignores this argument (it reads: {known}); remove it"))
    if content not in _SCHEMA_ARGS:
        return
    ref = "#/$defs/content_args/" + _SCHEMA_ARGS[content]
    known_only = {k: v for k, v in args.items() if k in allowed}
    problem = _schema_problem(known_only, ref, parts)
    if problem is not None:
        out.append(problem)
        return
    if content == "xml-inline":
        if "tag_pattern" not in args:
            out.append(((*parts, "tag_pattern"), "is required by the 'xml-inline' parser; without it every region "
                        "of this field fails to parse (ValueError)"))
            return
        if isinstance(args["tag_pattern"], str):
            _check_size(args["tag_pattern"], (*parts, "tag_pattern"), "pattern")
        try:
            tag = regex.compile(args["tag_pattern"], REGEX_FLAGS)
        except Exception as exc:  # noqa: BLE001
            out.append(((*parts, "tag_pattern"), f"invalid regex ({exc}); every region of this field fails to parse"))
            return
        if "key" not in tag.groupindex:
            out.append(((*parts, "tag_pattern"), "needs a named group 'key' (write (?P<key>...)); a match without "
                        "it fails to parse (ValueError)"))
        if "value" not in tag.groupindex:
            out.append(((*parts, "tag_pattern"), "has no named group 'value' (write (?P<value>...)); every value "
                        "is then the empty string"))
    if "value_parser" in allowed and "value_parser" in args:
        nested = args["value_parser"]  # (an object with a known name: the schema checked it)
        name = nested.get("name", "text")
        _content_findings(name, nested.get("args", {}), (*parts, "value_parser", "args"), out)


#: the schema entry that describes each parser's canonical content_args
_SCHEMA_ARGS = {
    "text": "text", "int": "text", "float": "text", "bool": "text",
    "json": "json", "xml-inline": "xml-inline", "kv-lines": "kv-lines", "python-call-list": "none",
}


def content_args_findings(content: str, args: Any, parts: tuple = ()) -> list[tuple[tuple, str]]:
    """The findings of :func:`_content_findings` for one field's ``content_args``."""
    out: list = []
    _content_findings(content, args, parts, out)
    return out


def _schema_problem(instance: Any, ref: str, base: tuple) -> tuple[tuple, str] | None:
    try:
        _schema_check(instance, ref, base)
    except TemplateError as exc:
        return (exc.parts, exc.problem)
    return None


def _truthy_flag(field: dict, key: str, parts: tuple, findings: list) -> None:
    if key in field and not isinstance(field[key], bool):
        value = field[key]
        findings.append(
            ((*parts, key), f"should be true or false, got {type(value).__name__} {json.dumps(value)}; it is read as "
             f"{'true' if value else 'false'} (its truthiness), as the reference does")
        )


def validate_template(template: Any, *, strict: bool = False) -> list[TemplateWarning]:
    """Check ``template``: raise :class:`TemplateError` for what the reference rejects (at the
    path, with a fix); return a :class:`TemplateWarning` for each thing it accepts that looks
    wrong (an argument the parser ignores, a non-boolean flag, ...). ``strict``: raise the
    first of those as a TemplateError instead."""
    if not isinstance(template, dict):
        raise TemplateError(
            "template", f"a response template must be a dict (a JSON object), got {type(template).__name__}"
        )
    check_json_values(template)
    size = len(json.dumps(template, ensure_ascii=False, separators=(",", ":"), allow_nan=True))
    if size > MAX_TEMPLATE_CHARS:
        raise TemplateError(
            "template",
            f"the template is {size} characters of JSON, over the limit of {MAX_TEMPLATE_CHARS} "
            "(MAX_TEMPLATE_CHARS); real templates are a few kilobytes: shrink its defaults, transforms "
            "or delimiters",
        )
    findings: list[tuple[tuple, str]] = []
    for key in template:
        if key not in _TOP_KEYS:
            raise _fail((key,), f"unknown top-level key; the known keys are: {', '.join(_TOP_KEYS)}")
    version = template.get("version", 1)
    if version != 1:
        raise _fail(("version",), f"unsupported template version {version!r}; only version 1 exists")
    if type(version) is not int:
        findings.append((("version",), f"should be the integer 1, got {json.dumps(version)}"))
    if not isinstance(template.get("defaults", {}), dict):
        raise _fail(("defaults",), "must be a dict of values pre-filled in every message")
    fields = template.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise _fail(("fields",), "must be a non-empty dict mapping output keys to field specs")
    if len(fields) > MAX_FIELDS:
        raise _fail(
            ("fields",),
            f"has {len(fields)} fields, over the limit of {MAX_FIELDS} (MAX_FIELDS); real templates have "
            "fewer than 20: merge fields, or parse the rest from a field's content",
        )
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
        if not isinstance(content, str) or content not in PARSER_NAMES:
            raise _fail(
                (*parts, "content"),
                f"unknown content parser {content!r}; available: {', '.join(sorted(PARSER_NAMES))}",
            )
        open_re = _check_anchor_pair(field, parts, "open", "open_pattern", f"field {name!r}")
        close_re = _check_anchor_pair(field, parts, "close", "close_pattern", f"field {name!r}")
        if "open" not in field and "open_pattern" not in field:
            implicit.append(name)
        join = field.get("join")
        if join is not None:
            if not isinstance(join, str):
                raise _fail((*parts, "join"), f"must be a string separator, got {type(join).__name__}")
            if not field.get("repeats", False):
                raise _fail((*parts, "join"), "'join' requires 'repeats': true (it joins the repeated blocks)")
        elif "join" in field:
            findings.append(((*parts, "join"), "is null, which means no join; remove it"))
        _truthy_flag(field, "repeats", parts, findings)
        _truthy_flag(field, "optional", parts, findings)
        transform = field.get("transform")
        transform_each = field.get("transform_each", False)
        if not isinstance(transform_each, bool):
            raise _fail((*parts, "transform_each"), f"must be a bool, got {type(transform_each).__name__}")
        if transform_each and transform is None:
            raise _fail((*parts, "transform_each"), "is set but the field has no 'transform' to apply to each item")
        if transform is not None:
            _check_transform_strings(transform, (*parts, "transform"))
            groups = set(open_re.groupindex if open_re else ()) | set(close_re.groupindex if close_re else ())
            _placeholder_findings(transform, (*parts, "transform"), groups, content, transform_each, findings)
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
        _content_findings(content, field.get("content_args", {}), (*parts, "content_args"), findings)
    if len(implicit) > 1:
        raise _fail(
            ("fields",),
            f"at most one field may omit 'open'/'open_pattern' (that field collects the text no other region "
            f"claims); found {len(implicit)}: {', '.join(map(repr, implicit))}. Give the others an open delimiter",
        )
    warnings_ = [TemplateWarning(format_path(where) or "template", problem) for where, problem in findings]
    if strict and warnings_:
        first = warnings_[0]
        raise TemplateError(first.path, first.problem + " (strict mode: a template must be free of warnings)")
    return warnings_
