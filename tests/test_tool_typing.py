"""Typing of tool-call arguments from the tools' JSON Schemas (`tools=`).

Tools are given as OpenAI-style dicts, bare function dicts, and Python functions (type hints + Google
docstrings, as the reference requires docstrings). Every case is compared with the behavioural reference
(transformers==5.23.0) and with an explicit expected value; comparisons are type-strict (True != 1,
2 != 2.0).
"""

import copy
import enum
import json
from typing import Any, Literal, Optional, Union

import pytest

import respc
from optional import needs

needs("transformers.utils.chat_parsing")

from compare import assert_same, run_stream
from transformers.utils.chat_parsing import ResponseParser as RefParser
from transformers.utils.chat_parsing import parse_response as ref_parse


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


JSON_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}

QWEN3_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open_pattern": r"<tool_call>\s*<function=(?P<name>\w+)>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                # no value_parser: every argument arrives as a raw string
                "tag_pattern": r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>",
                "merge_duplicates": True,
            },
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<|im_end|>"},
    },
}


def both(text, template, tools, chunked=True):
    """Parse with respc and the reference (one-shot and streamed); assert identical; return the message."""
    got = respc.parse_response(text, copy.deepcopy(template), prefix="", tools=tools)
    ref = ref_parse(text, copy.deepcopy(template), prefix="", tools=tools)
    assert_same(got, ref)
    for chunks in ([text], list(text)) if chunked else ([text],):
        got_run = run_stream(lambda: respc.ResponseParser(copy.deepcopy(template), "", tools=tools), chunks)
        ref_run = run_stream(lambda: RefParser(copy.deepcopy(template), "", tools=tools), chunks)
        assert_same(got_run, ref_run)
        assert_same(got_run["message"], got)
    return got


def json_call(name, arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def xml_call(name, pairs):
    params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in pairs)
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def typed_args(arguments, tools, name="f", template=JSON_TEMPLATE):
    message = both(json_call(name, arguments), template, tools, chunked=False)
    return message["tool_calls"][0]["function"]["arguments"]


def schema_tool(properties, name="f"):
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": properties}}}


def cast(raw, schema):
    """Type one string argument `x` with the given property schema."""
    return typed_args({"x": raw}, [schema_tool({"x": schema})])["x"]


# --------------------------------------------------------------------------------------------------
# the schema types
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("3", 3),
        (" 4 ", 4),
        ("-2", -2),
        ("+5", 5),
        ("1_000", 1000),
        ("3.0", 3),
        ("1e2", 100),
        ("3.5", "3.5"),
        ("abc", "abc"),
        ("nan", "nan"),
        ("inf", "inf"),
        ("", ""),
        ("true", "true"),
    ],
)
def test_integer(raw, expected):
    assert_same(cast(raw, {"type": "integer"}), expected)


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("1.5", 1.5),
        (" 2.5 ", 2.5),
        ("2", 2),
        ("-0", 0),
        ("2.0", 2.0),
        ("1e3", 1000),
        ("1.5e1", 15.0),
        ("nan", "nan"),
        ("NaN", "NaN"),
        ("inf", "inf"),
        ("-inf", "-inf"),
        ("Infinity", "Infinity"),
        ("x", "x"),
    ],
)
def test_number(raw, expected):
    assert_same(cast(raw, {"type": "number"}), expected)


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("true", True),
        ("false", False),
        ("1", True),
        ("0", False),
        ("TRUE", True),
        ("False", False),
        (" fAlSe ", False),
        ("yes", "yes"),
        ("no", "no"),
        ("2", "2"),
    ],
)
def test_boolean(raw, expected):
    assert_same(cast(raw, {"type": "boolean"}), expected)


@pytest.mark.parametrize("raw,expected", [("null", None), ("None", None), (" null ", None), ("nil", "nil"), ("NULL", "NULL"), ("", "")])
def test_null(raw, expected):
    assert_same(cast(raw, {"type": "null"}), expected)


@pytest.mark.parametrize(
    "raw,expected",
    [('{"a": [1, 2]}', {"a": [1, 2]}), ("{}", {}), ("[1]", "[1]"), ("x", "x"), ('"s"', '"s"'), ("null", "null")],
)
def test_object_only_when_json_decodes_to_object(raw, expected):
    assert_same(cast(raw, {"type": "object"}), expected)


@pytest.mark.parametrize(
    "raw,expected",
    [('[1, "2"]', [1, "2"]), ("[]", []), ('{"a": 1}', '{"a": 1}'), ("1", "1"), ("[broken", "[broken")],
)
def test_array_only_when_json_decodes_to_array(raw, expected):
    assert_same(cast(raw, {"type": "array"}), expected)


def test_array_items_are_not_cast():
    assert_same(cast('["1", "2"]', {"type": "array", "items": {"type": "integer"}}), ["1", "2"])


@pytest.mark.parametrize("raw", ["5", "true", "null", '{"a": 1}'])
def test_string_stays_string(raw):
    assert_same(cast(raw, {"type": "string"}), raw)


@pytest.mark.parametrize("raw", ["5", "true"])
def test_schema_without_type_leaves_value(raw):
    assert_same(cast(raw, {"description": "anything"}), raw)
    assert_same(cast(raw, {}), raw)
    assert_same(cast(raw, {"enum": ["5", "true"]}), raw)


@pytest.mark.parametrize(
    "types,raw,expected",
    [
        (["integer", "string"], "5", 5),
        (["integer", "string"], "x", "x"),
        (["string", "integer"], "5", 5),  # "string" casts nothing, so the next type still applies
        (["integer", "null"], "null", None),
        (["null", "integer"], "7", 7),
        (["boolean", "integer"], "1", True),
        (["integer", "boolean"], "1", 1),
        (["number", "boolean"], "true", True),
        (["array", "object"], '{"a": 1}', {"a": 1}),
        (["object", "array"], "[1]", [1]),
        (["integer", "number"], "2.5", 2.5),
    ],
)
def test_type_lists_in_order(types, raw, expected):
    assert_same(cast(raw, {"type": types}), expected)


@pytest.mark.parametrize(
    "union,raw,expected",
    [
        ("anyOf", "true", True),
        ("anyOf", "7", 7),
        ("anyOf", "x", "x"),
        ("oneOf", "null", None),
        ("oneOf", "1.5", 1.5),
        ("oneOf", "2", 2),
    ],
)
def test_anyof_oneof(union, raw, expected):
    choices = [{"type": "integer"}, {"type": "boolean"}] if union == "anyOf" else [{"type": "null"}, {"type": "number"}]
    assert_same(cast(raw, {union: choices}), expected)


def test_nested_anyof_with_type_list():
    schema = {"anyOf": [{"type": ["null", "boolean"]}, {"oneOf": [{"type": "integer"}]}]}
    assert_same(cast("false", schema), False)
    assert_same(cast("12", schema), 12)
    assert_same(cast("None", schema), None)


@pytest.mark.parametrize("raw,expected", [("None", None), ("null", None), ("3", 3), ("x", "x")])
def test_nullable(raw, expected):
    assert_same(cast(raw, {"type": "integer", "nullable": True}), expected)


def test_nullable_false_does_not_add_null():
    assert_same(cast("null", {"type": "integer", "nullable": False}), "null")


@pytest.mark.parametrize(
    "schema,raw,expected",
    [
        ({"type": "string", "anyOf": [{"type": "integer"}]}, "7", 7),
        ({"type": "string", "oneOf": [{"type": "boolean"}]}, "true", True),
        ({"type": "string", "nullable": True}, "null", None),
        ({"type": "string", "description": "d", "enum": ["7"]}, "7", "7"),
    ],
)
def test_declared_string_with_a_union_key_still_casts(schema, raw, expected):
    # a declared type plus anyOf/oneOf/nullable is read as a union, not as the plain type
    assert_same(cast(raw, schema), expected)


class _Properties(dict):
    """A dict subclass, as a caller's schema may be (an OrderedDict, a custom mapping)."""


def test_schemas_given_as_dict_subclasses_cast_the_same():
    plain = {"n": {"type": "integer"}, "b": {"type": "boolean"}, "s": {"type": "string"}}
    subclassed = _Properties({key: _Properties(value) for key, value in plain.items()})
    arguments = {"n": "3", "b": "false", "s": "3"}
    expected = {"n": 3, "b": False, "s": "3"}
    assert_same(typed_args(arguments, [schema_tool(plain)]), expected)
    assert_same(typed_args(arguments, [schema_tool(subclassed)]), expected)


# --------------------------------------------------------------------------------------------------
# tool formats
# --------------------------------------------------------------------------------------------------

SET_ALARM_PROPERTIES = {"hour": {"type": "integer"}, "enabled": {"type": "boolean"}, "label": {"type": "string"}}
SET_ALARM_RAW = {"hour": "7", "enabled": "true", "label": "wake up"}
SET_ALARM_TYPED = {"hour": 7, "enabled": True, "label": "wake up"}


def set_alarm(hour: int, enabled: bool, label: str):
    """Set an alarm.

    Args:
        hour: The hour of the alarm.
        enabled: Whether the alarm is enabled.
        label: A label for the alarm.
    """


def test_openai_style_tool_dict():
    tools = [schema_tool(SET_ALARM_PROPERTIES, name="set_alarm")]
    assert_same(typed_args(SET_ALARM_RAW, tools, name="set_alarm"), SET_ALARM_TYPED)


def test_bare_function_dict():
    tools = [{"name": "set_alarm", "parameters": {"type": "object", "properties": SET_ALARM_PROPERTIES}}]
    assert_same(typed_args(SET_ALARM_RAW, tools, name="set_alarm"), SET_ALARM_TYPED)


def test_python_function_with_docstring():
    assert_same(typed_args(SET_ALARM_RAW, [set_alarm], name="set_alarm"), SET_ALARM_TYPED)


def test_mixed_tool_formats_pick_the_called_tool():
    def other(hour: str):
        """Another tool.

        Args:
            hour: kept as a string.
        """

    tools = [other, {"name": "bare", "parameters": {"type": "object", "properties": {"n": {"type": "number"}}}}, set_alarm]
    assert_same(typed_args(SET_ALARM_RAW, tools, name="set_alarm"), SET_ALARM_TYPED)
    assert_same(typed_args({"hour": "7"}, tools, name="other"), {"hour": "7"})
    assert_same(typed_args({"n": "2.5"}, tools, name="bare"), {"n": 2.5})


def test_no_tools_and_empty_tools_leave_strings():
    assert_same(typed_args(SET_ALARM_RAW, None, name="set_alarm"), SET_ALARM_RAW)
    assert_same(typed_args(SET_ALARM_RAW, [], name="set_alarm"), SET_ALARM_RAW)


def test_tool_without_parameters_leaves_arguments():
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert_same(typed_args({"x": "1"}, tools), {"x": "1"})
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    assert_same(typed_args({"x": "1"}, tools), {"x": "1"})


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


def typed_tool(
    a: int,
    b: float,
    c: bool,
    d: Optional[int],
    e: Union[int, str],
    f: list[int],
    g: Literal["x", "y"],
    h: Literal[1, 2],
    i: Color,
    j: Level,
    k: dict,
    m: int | None = None,
    n: Union[list[int], bool] = False,
    o: Any = None,
):
    """A tool whose arguments exercise the hint -> schema conversion.

    Args:
        a: an int
        b: a float
        c: a bool
        d: an optional int
        e: an int or a string
        f: a list of ints
        g: a string literal
        h: an int literal
        i: a string enum
        j: an int enum
        k: a dict
        m: an optional int, PEP 604 style
        n: a list of ints or a bool
        o: anything
    """


TYPED_TOOL_RAW = {
    "a": "3",
    "b": "2",
    "c": "False",
    "d": "None",
    "e": "12",
    "f": "[1, 2]",
    "g": "x",
    "h": "2",
    "i": "red",
    "j": "1",
    "k": '{"z": 1}',
    "m": "null",
    "n": "true",
    "o": "5",
}

TYPED_TOOL_TYPED = {
    "a": 3,
    "b": 2,
    "c": False,
    "d": None,
    "e": 12,
    "f": [1, 2],
    "g": "x",
    "h": 2,
    "i": "red",
    "j": 1,
    "k": {"z": 1},
    "m": None,
    "n": True,
    "o": "5",
}


def test_python_function_hints():
    assert_same(typed_args(TYPED_TOOL_RAW, [typed_tool], name="typed_tool"), TYPED_TOOL_TYPED)


@pytest.mark.parametrize(
    "key,raw,expected",
    [
        ("d", "4", 4),
        ("d", "four", "four"),
        ("e", "hello", "hello"),
        ("e", "1.0", 1),
        ("f", "1", "1"),
        ("f", '{"a": 1}', '{"a": 1}'),
        ("g", "z", "z"),
        ("h", "3", 3),  # enum membership is not checked, only the type
        ("h", "one", "one"),
        ("j", "2.0", 2),
        ("k", "[1]", "[1]"),
        ("m", "8", 8),
        ("n", "[3]", [3]),
        ("n", "0", False),
        ("b", "0.25", 0.25),
    ],
)
def test_python_function_hint_edge_values(key, raw, expected):
    assert_same(typed_args({key: raw}, [typed_tool], name="typed_tool"), {key: expected})


class Alarms:
    def set(self, hour: int, enabled: bool):
        """Set an alarm (bound method).

        Args:
            hour: The hour.
            enabled: Whether enabled.
        """


def test_bound_method_tool():
    tools = [Alarms().set]
    assert_same(typed_args({"hour": "9", "enabled": "0"}, tools, name="set"), {"hour": 9, "enabled": False})


def test_function_without_docstring_is_typed_by_hints_respc_only():
    # respc-only: the reference's get_json_schema refuses functions without docstrings; respc reads
    # type hints only.
    def no_doc(hour: int, ratio: float, on: bool, maybe: Optional[int] = None):
        pass

    text = json_call("no_doc", {"hour": "7", "ratio": "0.5", "on": "TRUE", "maybe": "None"})
    message = respc.parse_response(text, copy.deepcopy(JSON_TEMPLATE), prefix="", tools=[no_doc])
    assert_same(message["tool_calls"][0]["function"]["arguments"], {"hour": 7, "ratio": 0.5, "on": True, "maybe": None})


def test_anthropic_style_tool_is_typed_by_its_input_schema_respc_only():
    # respc-only: the reference reads only "parameters", so an Anthropic tool's arguments stay
    # strings there; respc reads its "input_schema" as the parameters
    tool = {"name": "set_alarm", "description": "Set an alarm.",
            "input_schema": {"type": "object", "properties": SET_ALARM_PROPERTIES}}
    message = respc.parse_response(json_call("set_alarm", SET_ALARM_RAW), copy.deepcopy(JSON_TEMPLATE), prefix="", tools=[tool])
    assert_same(message["tool_calls"][0]["function"]["arguments"], SET_ALARM_TYPED)
    # "parameters" wins when a dict has both; an OpenAI tool's function is never read for input_schema
    both_keys = {**tool, "parameters": {"type": "object", "properties": {}}}
    assert_same(typed_args(SET_ALARM_RAW, [both_keys], name="set_alarm"), SET_ALARM_RAW)
    wrapped = {"type": "function", "function": {"name": "set_alarm", "input_schema": tool["input_schema"]}}
    assert_same(typed_args(SET_ALARM_RAW, [wrapped], name="set_alarm"), SET_ALARM_RAW)


# --------------------------------------------------------------------------------------------------
# what is left untouched
# --------------------------------------------------------------------------------------------------


def test_unknown_tool_untouched():
    tools = [schema_tool({"x": {"type": "integer"}}, name="known")]
    assert_same(typed_args({"x": "1"}, tools, name="unknown"), {"x": "1"})


def test_unknown_parameter_untouched():
    tools = [schema_tool({"x": {"type": "integer"}})]
    assert_same(typed_args({"x": "1", "y": "2"}, tools), {"x": 1, "y": "2"})


@pytest.mark.parametrize(
    "schema,raw",
    [
        ({"type": "integer"}, 7.5),
        ({"type": "integer"}, True),
        ({"type": "string"}, 5),
        ({"type": "boolean"}, 1),
        ({"type": "number"}, None),
        ({"type": "object"}, [1]),
        ({"type": "integer"}, {"a": "1"}),
    ],
)
def test_non_string_values_untouched(schema, raw):
    assert_same(typed_args({"x": raw}, [schema_tool({"x": schema})]), {"x": raw})


def test_nested_strings_are_not_cast():
    tools = [schema_tool({"x": {"type": "object", "properties": {"n": {"type": "integer"}}}})]
    assert_same(typed_args({"x": {"n": "1"}}, tools), {"x": {"n": "1"}})


def test_list_argument_with_array_type_is_not_cast_element_wise():
    tools = [schema_tool({"x": {"type": "array", "items": {"type": "integer"}}})]
    assert_same(typed_args({"x": ["1", "2"]}, tools), {"x": ["1", "2"]})


def test_list_argument_cast_element_wise_when_not_array():
    tools = [schema_tool({"x": {"type": "integer"}})]
    assert_same(typed_args({"x": ["1", 2, "z", None]}, tools), {"x": [1, 2, "z", None]})


def test_arguments_not_a_dict_untouched():
    tools = [schema_tool({"x": {"type": "integer"}})]
    message = both(json_call("f", '{"x": "1"}'), JSON_TEMPLATE, tools)
    assert_same(message["tool_calls"][0]["function"]["arguments"], '{"x": "1"}')


def test_tool_call_without_name_untouched():
    tools = [schema_tool({"x": {"type": "integer"}})]
    text = '<tool_call>{"arguments": {"x": "1"}}</tool_call>'
    message = both(text, JSON_TEMPLATE, tools)
    assert_same(message["tool_calls"], [{"type": "function", "function": {"arguments": {"x": "1"}}}])


def test_content_is_never_typed():
    tools = [schema_tool({"x": {"type": "integer"}})]
    message = both("42<|im_end|>", JSON_TEMPLATE, tools)
    assert_same(message, {"role": "assistant", "content": "42"})


# --------------------------------------------------------------------------------------------------
# xml-inline (Qwen3 style): every argument is a string
# --------------------------------------------------------------------------------------------------


def test_xml_inline_all_strings_typed():
    tools = [typed_tool]
    text = xml_call("typed_tool", list(TYPED_TOOL_RAW.items()))
    message = both(text, QWEN3_TEMPLATE, tools)
    assert_same(
        message,
        {
            "role": "assistant",
            "tool_calls": [{"type": "function", "function": {"name": "typed_tool", "arguments": TYPED_TOOL_TYPED}}],
        },
    )


def test_xml_inline_merge_duplicates_cast_element_wise():
    tools = [schema_tool({"n": {"type": "integer"}, "b": {"type": "boolean"}, "s": {"type": "string"}})]
    text = xml_call("f", [("n", "1"), ("n", "2"), ("n", "x"), ("b", "true"), ("b", "0"), ("s", "1"), ("s", "2")])
    message = both(text, QWEN3_TEMPLATE, tools)
    assert_same(message["tool_calls"][0]["function"]["arguments"], {"n": [1, 2, "x"], "b": [True, False], "s": ["1", "2"]})


def test_xml_inline_merge_duplicates_with_array_type_untouched():
    tools = [schema_tool({"a": {"type": "array", "items": {"type": "integer"}}})]
    text = xml_call("f", [("a", "1"), ("a", "2")])
    message = both(text, QWEN3_TEMPLATE, tools)
    assert_same(message["tool_calls"][0]["function"]["arguments"], {"a": ["1", "2"]})


def test_xml_inline_parallel_calls_each_typed_by_its_own_tool():
    def add(x: int, y: int):
        """Add.

        Args:
            x: first
            y: second
        """

    def scale(x: float, flag: bool):
        """Scale.

        Args:
            x: factor
            flag: a flag
        """

    text = xml_call("add", [("x", "1"), ("y", "2")]) + "\n" + xml_call("scale", [("x", "1"), ("flag", "1")])
    message = both(text, QWEN3_TEMPLATE, [add, scale])
    assert_same(
        [c["function"] for c in message["tool_calls"]],
        [{"name": "add", "arguments": {"x": 1, "y": 2}}, {"name": "scale", "arguments": {"x": 1, "flag": True}}],
    )


# --------------------------------------------------------------------------------------------------
# streaming: typed values on region_close
# --------------------------------------------------------------------------------------------------


def test_typed_values_on_region_close_event():
    tools = [set_alarm]
    text = json_call("set_alarm", SET_ALARM_RAW) + json_call("set_alarm", {"hour": "8.0", "enabled": "no"})
    chunks = [text[i : i + 7] for i in range(0, len(text), 7)]
    got = run_stream(lambda: respc.ResponseParser(copy.deepcopy(JSON_TEMPLATE), "", tools=tools), chunks)
    ref = run_stream(lambda: RefParser(copy.deepcopy(JSON_TEMPLATE), "", tools=tools), chunks)
    assert_same(got, ref)
    events = got["initial"] + [e for batch in got["fed"] for e in batch] + got["final"]
    closes = [e["value"] for e in events if e["type"] == "region_close"]
    assert_same(
        closes,
        [
            {"type": "function", "function": {"name": "set_alarm", "arguments": SET_ALARM_TYPED}},
            {"type": "function", "function": {"name": "set_alarm", "arguments": {"hour": 8, "enabled": "no"}}},
        ],
    )
    # the first call is typed on its region_close, before finalize()
    early = [e for batch in got["fed"] for e in batch if e["type"] == "region_close"]
    assert len(early) == 2
    assert_same(early[0]["value"]["function"]["arguments"]["hour"], 7)


def test_typed_values_on_region_close_xml_inline():
    tools = [set_alarm]
    text = xml_call("set_alarm", [("hour", "6"), ("enabled", "False"), ("label", "x")])
    parser = respc.get_response_parser(copy.deepcopy(QWEN3_TEMPLATE), prefix="", tools=tools)
    events = []
    for ch in text:
        events += parser.feed(ch)
    close = [e for e in events if e["type"] == "region_close"]
    assert_same(
        close,
        [
            {
                "type": "region_close",
                "field": "tool_calls",
                "value": {"type": "function", "function": {"name": "set_alarm", "arguments": {"hour": 6, "enabled": False, "label": "x"}}},
            }
        ],
    )
    message, final = parser.finalize()
    assert final == []
    assert_same(message["tool_calls"], [close[0]["value"]])


def test_compiled_template_parse_and_parser_accept_tools():
    compiled = respc.compile_template(copy.deepcopy(JSON_TEMPLATE))
    text = json_call("set_alarm", SET_ALARM_RAW)
    assert_same(compiled.parse(text, prefix="", tools=[set_alarm])["tool_calls"][0]["function"]["arguments"], SET_ALARM_TYPED)
    parser = compiled.parser(prefix="", tools=[set_alarm])
    parser.feed(text)
    assert_same(parser.finalize()[0]["tool_calls"][0]["function"]["arguments"], SET_ALARM_TYPED)
    # the same compiled template without tools does not type
    assert_same(compiled.parse(text, prefix="")["tool_calls"][0]["function"]["arguments"], SET_ALARM_RAW)


def test_batch_parse_with_tools():
    texts = [json_call("set_alarm", SET_ALARM_RAW), json_call("set_alarm", {"hour": "5"})]
    got = respc.parse_response(texts, copy.deepcopy(JSON_TEMPLATE), prefix="", tools=[set_alarm])
    assert_same([m["tool_calls"][0]["function"]["arguments"] for m in got], [SET_ALARM_TYPED, {"hour": 5}])


# --------------------------------------------------------------------------------------------------
# other tool-call shapes
# --------------------------------------------------------------------------------------------------


def test_transform_each_tool_calls_are_typed():
    template = {
        "start_anchor": "<s>",
        "fields": {
            "tool_calls": {
                "open": "<|START_ACTION|>",
                "close": "<|END_ACTION|>",
                "content": "json",
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{tool_name}", "arguments": "{parameters}"}},
            }
        },
    }
    body = json.dumps([{"tool_name": "set_alarm", "parameters": SET_ALARM_RAW}, {"tool_name": "other", "parameters": {"hour": "1"}}])
    message = both(f"<|START_ACTION|>{body}<|END_ACTION|>", template, [set_alarm])
    assert_same(
        message["tool_calls"],
        [
            {"type": "function", "function": {"name": "set_alarm", "arguments": SET_ALARM_TYPED}},
            {"type": "function", "function": {"name": "other", "arguments": {"hour": "1"}}},
        ],
    )


def test_gpt_oss_style_tool_calls_are_typed():
    template = {
        "start_anchor": "<|start|>assistant",
        "fields": {
            "tool_calls": {
                "open_pattern": r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
                "close": "<|call|>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            }
        },
    }
    text = '<|channel|>commentary to=functions.set_alarm <|constrain|>json<|message|>{"hour": "7", "enabled": "1"}<|call|>'
    message = both(text, template, [set_alarm])
    assert_same(message["tool_calls"][0]["function"]["arguments"], {"hour": 7, "enabled": True})


def test_typing_applies_to_any_field_shaped_like_a_tool_call():
    # the reference types every region value shaped like {"function": {"name", "arguments"}}, whatever the
    # field is called
    template = {
        "start_anchor": "<s>",
        "fields": {
            "calls": {
                "open": "<c>",
                "close": "</c>",
                "content": "json",
                "transform": {"function": "{content}"},
            }
        },
    }
    message = both('<c>{"name": "set_alarm", "arguments": {"hour": "7"}}</c>', template, [set_alarm])
    assert_same(message, {"calls": {"function": {"name": "set_alarm", "arguments": {"hour": 7}}}})


def test_schema_changed_in_place_between_calls_is_read_again_like_the_reference():
    """A parameter's schema is read when an argument is cast, as the reference reads it:
    a schema changed in place between two calls of one stream types the second call anew."""
    results = []
    for make in (lambda tools: respc.ResponseParser(JSON_TEMPLATE, "", tools=tools), lambda tools: RefParser(JSON_TEMPLATE, "", tools=tools)):
        tools = [schema_tool({"x": {"type": "integer"}})]
        parser = make(tools)
        events = parser.feed(json_call("f", {"x": "7"}))
        tools[0]["function"]["parameters"]["properties"]["x"]["type"] = "string"
        events += parser.feed(json_call("f", {"x": "8"}))
        message, final = parser.finalize()
        results.append((events, final, message))
    assert_same(results[0], results[1])
    assert [call["function"]["arguments"]["x"] for call in results[0][2]["tool_calls"]] == [7, "8"]


# --------------------------------------------------------------------------------------------------
# tool_types' inline reading of a list of OpenAI tool dicts (the common shape) against its general
# reading (any other iterable takes it): the same table, or the same error, for mixed tool lists
# --------------------------------------------------------------------------------------------------


class _Props(dict):
    """A dict subclass as a tool's properties (kept as it is, not replaced by {})."""


def _random_tool(rng):
    def typed(*args, **kwargs):  # (a function tool: read from its hints)
        return None

    typed.__annotations__ = {"n": int}
    typed.__name__ = rng.choice(["f", "g"])
    props = rng.choice([{"x": {"type": "integer"}}, _Props(y={"type": "number"}), {}, None, 5, "p"])
    params = rng.choice([{"type": "object", "properties": props}, {"type": "object"}, None, "bad", []])
    name = rng.choice(["get_weather", "f", "g", 7, None])
    fn = {"name": name, "parameters": params} if name is not None else {"parameters": params}
    return rng.choice(
        [
            {"type": "function", "function": fn},
            {"type": "function", "function": fn},
            {"type": "function", "function": rng.choice([None, "x", fn])},
            fn,
            {"name": name, "input_schema": params},
            typed,
            rng.choice([3, "tool", None]),
        ]
    )


def test_tool_types_inline_reading_matches_the_general_one():
    import random

    from respc.runtime.tools import tool_types

    for seed in range(400):
        rng = random.Random(seed)
        tools = [_random_tool(rng) for _ in range(rng.randrange(0, 5))]

        def read(given):
            try:
                table = tool_types(given)
            except (TypeError, ValueError) as error:
                return type(error), str(error)
            return {name: (type(props), props) for name, props in table.items()}

        assert read(tools) == read(tuple(tools)), f"seed {seed}: tools {tools!r}"
