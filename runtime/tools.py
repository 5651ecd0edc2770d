"""Tool-call argument typing from the tools' JSON Schemas.

Models write tool-call arguments as text; when the request's ``tools`` are
known, string arguments are cast to the type their schema declares (``"7"`` ->
``7`` for an ``integer`` parameter). Only string values are cast, and a value
that does not fit any declared type is left as it is.

``tools`` are OpenAI-style dicts (``{"type": "function", "function": {...}}`` or
the bare function dict), Anthropic-style dicts (``{"name", "input_schema"}``) or Python
functions, whose type hints are read here directly (no docstring is needed: only the
types matter for casting). Anything else is an error naming its index.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

from .decode import loads as _loads

__all__ = ["ToolSchemaError", "ToolTypes", "tool_types", "coerce_value"]


class ToolSchemaError(TypeError):
    """A tool's parameter schema that cannot be read (``"anyOf": 5``), named by its place.

    A TypeError, as the reference raises there. Schemas are read when an argument is cast
    (see ``tool_types``), so this is raised by parsing, and only for a tool that is called.
    """


#: Tool name -> its parameters' JSON schemas (``properties``), as ``tool_types`` reads them
#: from the request's tools. Schemas are read when a call's argument is cast (see
#: ``coerce_value``), and only for arguments that are strings.
ToolTypes = dict[str, dict]


_INF = float("inf")
#: the JSON types ``_cast`` can turn a string into (any other type leaves it as it is)
_CASTABLE = frozenset({"integer", "number", "boolean", "null", "object", "array"})
_JSON_SCALARS = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}
_BASIC = {
    int: "integer",
    float: "number",
    str: "string",
    bool: "boolean",
    type(None): "null",
    list: "array",
    tuple: "array",
    dict: "object",
}


def _adds_types(schema: Any) -> bool:
    """Whether a schema has a key besides ``type`` that adds types (``anyOf``, ``oneOf``,
    ``nullable``), which ``schema_types`` reads."""
    return "anyOf" in schema or "oneOf" in schema or "nullable" in schema


def schema_types(schema: Any) -> tuple[str, ...]:
    """The JSON types a parameter schema admits, in the order casting tries them."""
    if not isinstance(schema, dict):
        return ()
    declared = schema.get("type")
    if type(declared) is str and not _adds_types(schema):
        return (declared,)  # the common shape: one declared type, nothing that adds one
    found: list[str] = []
    if isinstance(declared, str):
        found.append(declared)
    elif isinstance(declared, list):
        for kind in declared:
            if isinstance(kind, str):
                found.append(kind)
    for union in ("anyOf", "oneOf"):
        for choice in schema.get(union) or ():
            found.extend(schema_types(choice))
    if schema.get("nullable") and "null" not in found:
        found.append("null")
    return tuple(found)


def _union_problem(schema: Any, where: str) -> str | None:
    """Why ``schema_types`` raised TypeError on ``schema`` (at ``where``): the first union
    (``anyOf``/``oneOf``) in it that cannot be iterated, or None if there is none. Only
    called once it has raised, so the casts never pay for naming the place."""
    if not isinstance(schema, dict):
        return None
    for union in ("anyOf", "oneOf"):
        choices = schema.get(union) or ()
        try:
            choices = list(choices)  # what schema_types iterates (a str or a dict too)
        except TypeError:
            return f"{where}.{union}: must be a list of schemas, got {type(choices).__name__}"
        for index, choice in enumerate(choices):
            problem = _union_problem(choice, f"{where}.{union}[{index}]")
            if problem is not None:
                return problem
    return None


def _hint_schema(hint: Any, where: str) -> dict:
    """A minimal JSON Schema (types only) for a Python type hint."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is None:
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return _scalar_values_schema([member.value for member in hint], where)
        if hint is Any:
            return {}
        if hint in _BASIC:
            return {"type": _BASIC[hint]}
        raise ValueError(
            f"tools: {where}: cannot type the hint {hint!r}; use basic types (int, float, str, bool, "
            "list, dict, tuple, Optional/Union, Literal, Enum) or pass the tool as a JSON schema dict"
        )
    if origin is typing.Union or origin is types.UnionType:
        subtypes = [_hint_schema(arg, where) for arg in args if arg is not type(None)]
        if len(subtypes) == 1:
            out = dict(subtypes[0])
        elif all(set(s) == {"type"} and isinstance(s["type"], str) for s in subtypes):
            names = sorted({s["type"] for s in subtypes})
            out = {"type": names[0] if len(names) == 1 else names}
        else:
            out = {"anyOf": subtypes}
        if type(None) in args:
            out["nullable"] = True
        return out
    if origin is typing.Literal:
        return _scalar_values_schema(list(args), where)
    # Containers keep the shape of a full schema (``items``, ``additionalProperties``),
    # since a union of them is written with ``anyOf`` (in hint order) rather than a
    # sorted ``type`` list, and that order decides which cast is tried first.
    if origin in (list, set, frozenset):
        return {"type": "array", "items": _hint_schema(args[0], where)} if args else {"type": "array"}
    if origin is tuple:
        if not args:
            return {"type": "array"}
        return {"type": "array", "prefixItems": [_hint_schema(a, where) for a in args if a is not Ellipsis]}
    if origin is dict:
        if len(args) == 2:
            return {"type": "object", "additionalProperties": _hint_schema(args[1], where)}
        return {"type": "object"}
    raise ValueError(f"tools: {where}: cannot type the hint {hint!r}; pass the tool as a JSON schema dict instead")


def _scalar_values_schema(values: list, where: str) -> dict:
    kinds = []
    for value in values:
        kind = _JSON_SCALARS.get(type(value))
        if kind is None:
            raise ValueError(f"tools: {where}: the value {value!r} cannot be written as a JSON scalar")
        if kind not in kinds:
            kinds.append(kind)
    if not kinds:
        raise ValueError(f"tools: {where}: an Enum/Literal without values can never match")
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _function_properties(func: Callable) -> dict:
    name = getattr(func, "__name__", "tool")
    try:
        hints = typing.get_type_hints(func)
    except Exception as exc:  # unresolvable forward references and the like
        raise ValueError(f"tools: {name}: cannot read the type hints ({exc})") from exc
    params = list(inspect.signature(func).parameters.values())
    skip = None
    if params and params[0].name in ("self", "cls") and params[0].annotation is inspect.Parameter.empty:
        skip = params[0].name
    properties = {}
    for param in params:
        if param.name == skip or param.name not in hints:
            continue  # an unannotated parameter is left as the model wrote it
        properties[param.name] = _hint_schema(hints[param.name], f"{name}({param.name})")
    return properties


_SHAPES = (
    'an OpenAI tool {"type": "function", "function": {"name": ..., "parameters": {...}}}, a function dict '
    '{"name": ..., "parameters": {...}}, an Anthropic tool {"name": ..., "input_schema": {...}}, or a Python function'
)


def _tool_function(tool: Any, index: int) -> dict:
    """The function dict of the tool dict at ``tools[index]`` (its ``function``, or the dict
    itself), checked to have a str name; ValueError naming the place otherwise."""
    fn = tool.get("function", tool)
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        return fn
    where = f"tools[{index}].function" if "function" in tool else f"tools[{index}]"
    if not isinstance(fn, dict):
        raise ValueError(f"{where}: must be a dict holding the function's name and parameters, got {type(fn).__name__}; "
                         f"a tool is {_SHAPES}")
    if not isinstance(fn.get("name"), str):
        found = f"a name of type {type(fn['name']).__name__}" if "name" in fn else f"no name (keys: {', '.join(map(str, fn)) or 'none'})"
        raise ValueError(f"{where}: a tool needs a str 'name', got {found}; a tool is {_SHAPES}")
    return fn


def tool_types(tools: Iterable[dict | Callable] | None) -> ToolTypes:
    """Map each tool's name to its parameters' schemas (``properties``).

    A tool is an OpenAI tool dict (``{"type": "function", "function": {...}}``), a function
    dict (``{"name", "parameters"}``), an Anthropic tool (``{"name", "input_schema"}``,
    whose ``input_schema`` is read as the parameters) or a Python function or method (read
    from its type hints). Anything else is an error naming its index (``tools[2]: ...``):
    TypeError for an item of another type, ValueError for a dict without a str name (the
    reference skips both, and the arguments would stay untyped without a sign).

    Dict tools are referenced, not copied, and a parameter's types are read from its
    schema each time an argument is cast (see ``coerce_value``), as the reference does;
    functions are converted from their type hints here, so a hint that cannot be typed
    fails at once.
    """
    table: ToolTypes = {}
    if not tools:
        return table
    if type(tools) is list:
        # the common shape, read inline: OpenAI tool dicts with a str name (anything else,
        # from the first such tool on, is read below)
        for tool in tools:
            if type(tool) is not dict:
                break
            fn = tool.get("function")
            if type(fn) is not dict:
                break
            name = fn.get("name")
            if type(name) is not str:
                break
            parameters = fn.get("parameters")
            properties = parameters.get("properties") if isinstance(parameters, dict) else None
            table[name] = properties if isinstance(properties, dict) else {}
        else:
            return table
        table = {}
    for index, tool in enumerate(tools):
        if isinstance(tool, dict):
            fn = _tool_function(tool, index)
        elif inspect.isfunction(tool) or inspect.ismethod(tool):
            table[tool.__name__] = _function_properties(tool)
            continue
        else:
            what = type(tool).__name__
            if callable(tool):
                what = f"a callable {what} that is not a function or method (its types cannot be read)"
            raise TypeError(f"tools[{index}]: must be a tool dict or a function, got {what}; a tool is {_SHAPES}")
        parameters = fn.get("parameters")
        if parameters is None and "function" not in tool:
            parameters = fn.get("input_schema")  # Anthropic's shape
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        table[fn["name"]] = properties if isinstance(properties, dict) else {}
    return table


def _cast(raw: str, kinds: tuple[str, ...]) -> Any:
    for kind in kinds:
        try:
            if kind == "integer":
                try:
                    return int(raw)
                except ValueError:
                    number = float(raw)  # "3.0" is an integer too
                    if number.is_integer():
                        return int(number)
                    continue
            if kind == "number":
                number = float(raw)
                if number != number or number == _INF or number == -_INF:
                    continue  # NaN and infinities are not JSON numbers
                return int(number) if number.is_integer() and "." not in raw else number
            if kind == "boolean":
                word = raw.strip().lower()
                if word in ("true", "1", "false", "0"):
                    return word in ("true", "1")
            elif kind == "null":
                if raw.strip() in ("null", "None"):
                    return None
            elif kind == "object" or kind == "array":
                decoded = _loads(raw)
                if isinstance(decoded, dict if kind == "object" else list):
                    return decoded
        except ValueError:
            continue
    return raw


def coerce_value(value: Any, table: ToolTypes) -> Any:
    """Cast the string arguments of every tool call in ``value`` (in place), and return it.

    Only arguments that are strings (or lists, which xml-inline's ``merge_duplicates``
    builds) are looked up in their schema; the common schema, one declared type and no
    union, is read inline.
    """
    if isinstance(value, list):
        return [coerce_value(item, table) for item in value]
    fn = value.get("function") if isinstance(value, dict) else None
    if not isinstance(fn, dict):
        return value
    name, arguments = fn.get("name"), fn.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return value
    found = table.get(name)
    if not found:
        return value
    # read as a plain dict (a copy of a dict subclass: the same keys and schemas), which the
    # compiled runtime looks up directly (runtime/tools.pxd)
    properties = found if type(found) is dict else dict(found)
    try:
        for key, argument in arguments.items():
            if isinstance(argument, str):
                schema = properties.get(key)
                if type(schema) is dict:
                    plain = schema  # typed dict when compiled (tools.pxd)
                    declared = plain.get("type")
                    if type(declared) is str and not _adds_types(plain):
                        if declared in _CASTABLE:
                            arguments[key] = _cast(argument, (declared,))
                        continue
                kinds = schema_types(schema)
                if not _CASTABLE.isdisjoint(kinds):
                    arguments[key] = _cast(argument, kinds)
            elif isinstance(argument, list):
                kinds = schema_types(properties.get(key))
                if not _CASTABLE.isdisjoint(kinds) and "array" not in kinds:
                    # repeated keys collected by xml-inline's merge_duplicates
                    arguments[key] = [_cast(item, kinds) if isinstance(item, str) else item for item in argument]
    except TypeError:
        # a union in the argument's schema that is not a list ("anyOf": 5) fails here as in
        # the reference (a TypeError), with the tool and the place named
        problem = _union_problem(properties.get(key), f"tools: {name}: parameters.properties.{key}")
        if problem is None:
            raise
        raise ToolSchemaError(problem) from None
    return value
