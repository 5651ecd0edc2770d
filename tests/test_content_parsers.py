"""Edge cases of every content parser, through single-field templates.

Every case states an explicit expected message (or error) and is also compared with the behavioural
reference (transformers==5.23.0), one-shot and streamed (whole text and char by char).
"""

import copy
import math

import pytest

import respc
from compare import assert_same, run_stream
from transformers.utils.chat_parsing import ResponseParser as RefParser
from transformers.utils.chat_parsing import parse_response as ref_parse


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def template_for(content, args=None, defaults=None, **extra):
    field = {"open": "<v>", "close": "</v>", "content": content}
    if args is not None:
        field["content_args"] = args
    field.update(extra)
    template = {"start_anchor": "<s>", "fields": {"v": field}}
    if defaults is not None:
        template["defaults"] = defaults
    return template


def parse(body, content, args=None, defaults=None, **extra):
    """Parse `<v>body</v>` with respc and with the reference; assert they agree (streaming too); return message."""
    template = template_for(content, args, defaults, **extra)
    text = f"<v>{body}</v>"
    got = respc.parse_response(text, copy.deepcopy(template), prefix="")
    ref = ref_parse(text, copy.deepcopy(template), prefix="")
    assert_same(got, ref)
    for chunks in ([text], list(text)):
        got_run = run_stream(lambda: respc.ResponseParser(copy.deepcopy(template), ""), chunks)
        ref_run = run_stream(lambda: RefParser(copy.deepcopy(template), ""), chunks)
        assert_same(got_run, ref_run)
        assert_same(got_run["message"], got)
    return got


def value(body, content, args=None, **extra):
    """The parsed value of field `v` (asserting it is present in the message)."""
    message = parse(body, content, args, **extra)
    assert set(message) == {"v"}, message
    return message["v"]


def assert_raises_both(body, content, args=None, exc=ValueError, **extra):
    template = template_for(content, args, **extra)
    text = f"<v>{body}</v>"
    with pytest.raises(exc):
        respc.parse_response(text, copy.deepcopy(template), prefix="")
    with pytest.raises(exc):
        ref_parse(text, copy.deepcopy(template), prefix="")
    # streaming raises too (at the latest when the region closes)
    with pytest.raises(exc):
        parser = respc.ResponseParser(copy.deepcopy(template), "")
        parser.feed(text)
        parser.finalize()


# --------------------------------------------------------------------------------------------------
# text
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,expected",
    [("hi", "hi"), ("  hi  ", "hi"), ("\n\thi there\n", "hi there"), ("a  b\n c", "a  b\n c"), ("ünï cödé ✓", "ünï cödé ✓")],
)
def test_text_strip_default(body, expected):
    assert_same(value(body, "text"), expected)


@pytest.mark.parametrize("body", ["  hi  ", "\nhi\n", "x"])
def test_text_strip_false_keeps_whitespace(body):
    assert_same(value(body, "text", {"strip": False}), body)


def test_text_strip_true_explicit():
    assert_same(value("  hi  ", "text", {"strip": True}), "hi")


def test_content_defaults_to_text():
    template = {"start_anchor": "<s>", "fields": {"v": {"open": "<v>", "close": "</v>"}}}
    got = respc.parse_response("<v>  x </v>", template, prefix="")
    assert_same(got, {"v": "x"})
    assert_same(got, ref_parse("<v>  x </v>", template, prefix=""))


@pytest.mark.parametrize("body", ["", "   ", "\n\t \n"])
def test_whitespace_only_text_is_dropped(body):
    assert_same(parse(body, "text"), {})


def test_whitespace_only_text_region_close_carries_empty_string():
    template = template_for("text")
    got = run_stream(lambda: respc.ResponseParser(copy.deepcopy(template), ""), ["<v>  </v>"])
    closes = [e for e in got["fed"][0] if e["type"] == "region_close"]
    assert_same(closes, [{"type": "region_close", "field": "v", "value": ""}])
    assert_same(got["message"], {})


def test_whitespace_only_text_kept_when_in_defaults():
    assert_same(parse("   ", "text", defaults={"v": "default"}), {"v": ""})
    assert_same(parse("x", "text", defaults={"v": "d"}), {"v": "x"})


def test_default_kept_when_region_never_matches():
    template = template_for("text")
    template["defaults"] = {"v": "default", "role": "assistant"}
    got = respc.parse_response("no region", copy.deepcopy(template), prefix="")
    assert_same(got, {"v": "default", "role": "assistant"})
    assert_same(got, ref_parse("no region", copy.deepcopy(template), prefix=""))


def test_whitespace_only_text_strip_false_is_kept():
    assert_same(parse("   ", "text", {"strip": False}), {"v": "   "})


# --------------------------------------------------------------------------------------------------
# int
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,expected",
    [
        ("42", 42),
        (" 42 ", 42),
        ("-7", -7),
        ("+7", 7),
        ("1_000", 1000),
        ("\n 5\t", 5),
        ("0", 0),
        ("-0", 0),
        ("007", 7),
        ("123456789012345678901234567890", 123456789012345678901234567890),
    ],
)
def test_int_values(body, expected):
    assert_same(value(body, "int"), expected)


def test_int_zero_is_kept_in_message():
    assert_same(parse("0", "int"), {"v": 0})


@pytest.mark.parametrize("body", ["abc", "4.2", "1e3", "", "   ", "1 2", "0x10", "_1", "1__0"])
def test_int_invalid_raises(body):
    assert_raises_both(body, "int")


# --------------------------------------------------------------------------------------------------
# float
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,expected",
    [
        ("1.5", 1.5),
        (" 2 ", 2.0),
        ("1e3", 1000.0),
        ("-2.5E-1", -0.25),
        (".5", 0.5),
        ("1_0.5", 10.5),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("Infinity", math.inf),
        ("nan", math.nan),
        ("NaN", math.nan),
        ("0", 0.0),
    ],
)
def test_float_values(body, expected):
    got = value(body, "float")
    assert type(got) is float
    assert_same(got, expected)


@pytest.mark.parametrize("body", ["abc", "", "  ", "1.2.3", "1,5"])
def test_float_invalid_raises(body):
    assert_raises_both(body, "float")


# --------------------------------------------------------------------------------------------------
# bool
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,expected",
    [
        ("true", True),
        ("TRUE", True),
        (" True ", True),
        ("1", True),
        ("\n1\n", True),
        ("yes", False),
        ("false", False),
        ("0", False),
        ("on", False),
        ("2", False),
        ("", False),
        ("  ", False),
    ],
)
def test_bool_values(body, expected):
    got = value(body, "bool")
    assert got is expected


def test_bool_false_is_kept_in_message():
    assert_same(parse("false", "bool"), {"v": False})


# --------------------------------------------------------------------------------------------------
# json
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,expected",
    [
        ('{"a": {"b": [1, 2, {"c": null}]}, "d": 1.5}', {"a": {"b": [1, 2, {"c": None}]}, "d": 1.5}),
        ("[1, \"two\", true, false]", [1, "two", True, False]),
        ('  \n {"a": 1} \n ', {"a": 1}),
        ('"hi"', "hi"),
        ("0", 0),
        ("2.5", 2.5),
        ("false", False),
        ('{"x": NaN, "y": Infinity}', {"x": math.nan, "y": math.inf}),
        ("NaN", math.nan),
        ('{"u": "\\u00e9\\n"}', {"u": "é\n"}),
        ('{"a": 1, "a": 2}', {"a": 2}),
    ],
)
def test_json_values(body, expected):
    assert_same(value(body, "json"), expected)


@pytest.mark.parametrize("body", ["null", "[]", "{}", '""'])
def test_json_empty_values_are_dropped(body):
    assert_same(parse(body, "json"), {})


@pytest.mark.parametrize("body", ["nope", "{a: 1}", '{"a": 1', "", "  ", "{'a': 1}", '{"a": 1,}'])
def test_json_invalid_raises(body):
    assert_raises_both(body, "json")


@pytest.mark.parametrize(
    "body,expected",
    [("  not json  ", "not json"), ("{broken", "{broken"), ('{"ok": 1}', {"ok": 1}), ("[1]", [1]), ('"s"', "s")],
)
def test_json_allow_non_json(body, expected):
    assert_same(value(body, "json", {"allow_non_json": True}), expected)


def test_json_allow_non_json_false_still_raises():
    assert_raises_both("text", "json", {"allow_non_json": False})


@pytest.mark.parametrize(
    "body,expected",
    [
        ("{a:1,b:{c:2}}", {"a": 1, "b": {"c": 2}}),
        ('{city: "London"}', {"city": "London"}),
        ('{a:1,"b":2}', {"a": 1, "b": 2}),
        ('[{x:1},{y_2:[1]}]', [{"x": 1}, {"y_2": [1]}]),
        ('{"already": {"quoted": true}}', {"already": {"quoted": True}}),
    ],
)
def test_json_unquoted_keys(body, expected):
    assert_same(value(body, "json", {"unquoted_keys": True}), expected)


def test_json_unquoted_keys_after_comma_space_is_not_quoted():
    # Only a bare key directly after "{" or "," is quoted: in `{a: 1, b: {c: 2}}` the key `b` follows
    # ", " and stays bare, so the text is still not JSON and the parse fails (reference behaviour).
    assert_raises_both("{a: 1, b: {c: 2}}", "json", {"unquoted_keys": True})


def test_json_unquoted_keys_disabled_by_default():
    assert_raises_both("{a:1}", "json")


@pytest.mark.parametrize(
    "delims,body,expected",
    [
        ([['<|"|>', '<|"|>']], '{"q": <|"|>say "hi"<|"|>}', {"q": 'say "hi"'}),
        ([["$(", ")$"]], '{"q": $(a "quoted" [x]+ \\d*)$}', {"q": 'a "quoted" [x]+ \\d*'}),
        ([["*", "*"], ["^", "^"]], '{"q": *a*, "r": ^b^}', {"q": "a", "r": "b"}),
        ([["[[", "]]"]], '{"q": [[multi\nline]], "n": [1]}', {"q": "multi\nline", "n": [1]}),
        ([["(?", "?)"]], '{"q": (?x|y?), "r": (??)}', {"q": "x|y", "r": ""}),
        ([["<s>", "</s>"]], '{"a": <s>1</s>, "b": <s>2</s>}', {"a": "1", "b": "2"}),
    ],
)
def test_json_string_delims(delims, body, expected):
    assert_same(value(body, "json", {"string_delims": delims}), expected)


def test_json_string_delims_with_unquoted_keys():
    args = {"string_delims": [['<|"|>', '<|"|>']], "unquoted_keys": True}
    assert_same(value('{city:<|"|>Paris, FR<|"|>,n:2}', "json", args), {"city": "Paris, FR", "n": 2})


def test_json_string_delims_content_is_not_key_quoted():
    # text inside custom string delimiters is protected from the unquoted_keys rewrite
    args = {"string_delims": [["<<", ">>"]], "unquoted_keys": True}
    assert_same(value("{q:<<{a:1}>>}", "json", args), {"q": "{a:1}"})


@pytest.mark.parametrize("body", ['{"q": "a\x01b"}', '{"q": <|"|>a\x02<|"|>}', "\x01"])
def test_json_string_delims_rejects_sentinel_characters(body):
    assert_raises_both(body, "json", {"string_delims": [['<|"|>', '<|"|>']]})


def test_json_invalid_after_dialect_transforms_raises():
    assert_raises_both('{q: <<x>>, }', "json", {"string_delims": [["<<", ">>"]], "unquoted_keys": True})


def test_json_dialect_failure_with_allow_non_json_returns_stripped_original():
    args = {"string_delims": [["<<", ">>"]], "unquoted_keys": True, "allow_non_json": True}
    assert_same(value("  {q: <<x>>, }  ", "json", args), "{q: <<x>>, }")


# --------------------------------------------------------------------------------------------------
# xml-inline
# --------------------------------------------------------------------------------------------------

PARAM = r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>"


def xml(**kwargs):
    return {"tag_pattern": PARAM, **kwargs}


def test_xml_inline_raw_strings():
    body = "<parameter=a>5</parameter><parameter=b> two words </parameter>"
    assert_same(value(body, "xml-inline", xml()), {"a": "5", "b": "two words"})


def test_xml_inline_value_parser_json():
    body = '<parameter=a>5</parameter><parameter=b>"s"</parameter><parameter=c>[1, {"d": null}]</parameter>'
    assert_same(
        value(body, "xml-inline", xml(value_parser={"name": "json"})), {"a": 5, "b": "s", "c": [1, {"d": None}]}
    )


def test_xml_inline_value_parser_json_invalid_raises():
    assert_raises_both("<parameter=a>not json</parameter>", "xml-inline", xml(value_parser={"name": "json"}))


def test_xml_inline_value_parser_json_allow_non_json():
    body = "<parameter=a>London</parameter><parameter=b>3</parameter>"
    vp = {"name": "json", "args": {"allow_non_json": True}}
    assert_same(value(body, "xml-inline", xml(value_parser=vp)), {"a": "London", "b": 3})


def test_xml_inline_value_parser_int():
    body = "<parameter=a> 5 </parameter><parameter=b>-12</parameter>"
    assert_same(value(body, "xml-inline", xml(value_parser={"name": "int"})), {"a": 5, "b": -12})


def test_xml_inline_value_parser_int_invalid_raises():
    assert_raises_both("<parameter=a>five</parameter>", "xml-inline", xml(value_parser={"name": "int"}))


def test_xml_inline_value_parser_bool_and_float():
    body = "<parameter=a>TRUE</parameter><parameter=b>no</parameter>"
    assert_same(value(body, "xml-inline", xml(value_parser={"name": "bool"})), {"a": True, "b": False})
    assert_same(value("<parameter=x>1e-2</parameter>", "xml-inline", xml(value_parser={"name": "float"})), {"x": 0.01})


def test_xml_inline_value_parser_text_strip_false():
    pattern = r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"
    args = {"tag_pattern": pattern, "value_parser": {"name": "text", "args": {"strip": False}}}
    assert_same(value("<a> x </a><b>y</b>", "xml-inline", args), {"a": " x ", "b": "y"})


def test_xml_inline_nested_value_parser_kv_lines():
    pattern = r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"
    args = {"tag_pattern": pattern, "value_parser": {"name": "kv-lines", "args": {"kv_sep": "="}}}
    assert_same(value("<cfg>a=1\nb=2</cfg>", "xml-inline", args), {"cfg": {"a": "1", "b": "2"}})


def test_xml_inline_duplicates_overwrite_without_merge():
    body = "<parameter=a>1</parameter><parameter=a>2</parameter>"
    assert_same(value(body, "xml-inline", xml()), {"a": "2"})
    assert_same(value(body, "xml-inline", xml(merge_duplicates=False)), {"a": "2"})


def test_xml_inline_merge_duplicates_two():
    body = "<parameter=a>1</parameter><parameter=b>x</parameter><parameter=a>2</parameter>"
    assert_same(value(body, "xml-inline", xml(merge_duplicates=True)), {"a": ["1", "2"], "b": "x"})


def test_xml_inline_merge_duplicates_three():
    body = "<parameter=a>1</parameter><parameter=a>2</parameter><parameter=a>3</parameter>"
    assert_same(value(body, "xml-inline", xml(merge_duplicates=True)), {"a": ["1", "2", "3"]})


def test_xml_inline_merge_duplicates_single_value_is_not_wrapped():
    assert_same(value("<parameter=a>1</parameter>", "xml-inline", xml(merge_duplicates=True)), {"a": "1"})


def test_xml_inline_merge_duplicates_first_value_already_a_list():
    # a first value that is itself a list is extended, not wrapped (reference behaviour)
    body = "<parameter=a>[1, 2]</parameter><parameter=a>3</parameter><parameter=a>[4]</parameter>"
    args = xml(merge_duplicates=True, value_parser={"name": "json"})
    assert_same(value(body, "xml-inline", args), {"a": [1, 2, 3, [4]]})


def test_xml_inline_merge_duplicates_with_int_parser():
    body = "<parameter=n>1</parameter><parameter=n>2</parameter>"
    args = xml(merge_duplicates=True, value_parser={"name": "int"})
    assert_same(value(body, "xml-inline", args), {"n": [1, 2]})


@pytest.mark.parametrize("body", ["", "no tags at all", "<parameter=>x</parameter>", "<param=a>x</param>"])
def test_xml_inline_no_matches_is_dropped(body):
    assert_same(parse(body, "xml-inline", xml()), {})


def test_xml_inline_no_matches_region_close_value_is_empty_dict():
    template = template_for("xml-inline", xml())
    run = run_stream(lambda: respc.ResponseParser(copy.deepcopy(template), ""), ["<v>none</v>"])
    assert_same([e for e in run["fed"][0] if e["type"] == "region_close"], [{"type": "region_close", "field": "v", "value": {}}])
    assert_same(run["message"], {})


def test_xml_inline_unicode_keys_and_values():
    body = "<parameter=città>Roma</parameter><parameter=名前>太郎</parameter><parameter=ключ>значение</parameter>"
    assert_same(value(body, "xml-inline", xml()), {"città": "Roma", "名前": "太郎", "ключ": "значение"})


def test_xml_inline_dotall_values_span_lines():
    pattern = r"<arg name=\"(?P<key>[^\"]+)\">(?P<value>.*?)</arg>"
    body = '<arg name="code">line1\nline2</arg>\n<arg name="x y">z</arg>'
    assert_same(value(body, "xml-inline", {"tag_pattern": pattern}), {"code": "line1\nline2", "x y": "z"})


def test_xml_inline_text_between_tags_is_ignored():
    body = "junk<parameter=a>1</parameter> more junk <parameter=b>2</parameter>tail"
    assert_same(value(body, "xml-inline", xml()), {"a": "1", "b": "2"})


# --------------------------------------------------------------------------------------------------
# kv-lines
# --------------------------------------------------------------------------------------------------


def test_kv_lines_default():
    assert_same(value("name: alice\nage: 30", "kv-lines"), {"name": "alice", "age": "30"})


def test_kv_lines_custom_separators():
    assert_same(value("a=1;b=2", "kv-lines", {"line_sep": ";", "kv_sep": "="}), {"a": "1", "b": "2"})


def test_kv_lines_multichar_separators():
    args = {"line_sep": "||", "kv_sep": "->"}
    assert_same(value("a -> 1 || b -> 2||c->x-> y", "kv-lines", args), {"a": "1", "b": "2", "c": "x-> y"})


def test_kv_lines_regex_metacharacter_separators():
    args = {"line_sep": ".*", "kv_sep": "+"}
    assert_same(value("a+1.*b+2", "kv-lines", args), {"a": "1", "b": "2"})


def test_kv_lines_strip_false():
    assert_same(value(" a : b \n c:d", "kv-lines", {"strip": False}), {" a ": " b ", " c": "d"})


def test_kv_lines_strip_true_explicit():
    assert_same(value(" a : b \n c:d", "kv-lines", {"strip": True}), {"a": "b", "c": "d"})


def test_kv_lines_lines_without_separator_and_blank_lines_ignored():
    assert_same(value("a: 1\nno separator here\n\n   \nb: 2", "kv-lines"), {"a": "1", "b": "2"})


def test_kv_lines_value_contains_separator():
    assert_same(value("url: http://x.y:80/z\ntime: 12:30", "kv-lines"), {"url": "http://x.y:80/z", "time": "12:30"})


def test_kv_lines_duplicate_key_last_wins():
    assert_same(value("a: 1\na: 2", "kv-lines"), {"a": "2"})


def test_kv_lines_empty_key_and_empty_value():
    assert_same(value(": v\nk:", "kv-lines"), {"": "v", "k": ""})


def test_kv_lines_windows_line_endings_are_stripped():
    assert_same(value("a: 1\r\nb: 2\r\n", "kv-lines"), {"a": "1", "b": "2"})


def test_kv_lines_value_parser_int():
    assert_same(value("a: 1\nb: 22", "kv-lines", {"value_parser": {"name": "int"}}), {"a": 1, "b": 22})


def test_kv_lines_value_parser_int_invalid_raises():
    assert_raises_both("a: one", "kv-lines", {"value_parser": {"name": "int"}})


def test_kv_lines_value_parser_json():
    args = {"value_parser": {"name": "json"}}
    assert_same(value('a: [1, 2]\nb: {"c": true}\nc: "s"', "kv-lines", args), {"a": [1, 2], "b": {"c": True}, "c": "s"})


def test_kv_lines_value_parser_bool():
    assert_same(value("x: yes\ny: TRUE", "kv-lines", {"value_parser": {"name": "bool"}}), {"x": False, "y": True})


@pytest.mark.parametrize("body", ["", "   ", "no separators\nanywhere"])
def test_kv_lines_no_pairs_is_dropped(body):
    assert_same(parse(body, "kv-lines"), {})


# --------------------------------------------------------------------------------------------------
# parsers combined with repeats / join / transform
# --------------------------------------------------------------------------------------------------


def test_int_with_repeats_collects_list():
    template = template_for("int", repeats=True)
    text = "<v>1</v> <v> 2 </v><v>-3</v>"
    got = respc.parse_response(text, copy.deepcopy(template), prefix="")
    assert_same(got, {"v": [1, 2, -3]})
    assert_same(got, ref_parse(text, copy.deepcopy(template), prefix=""))


def test_json_with_repeats_keeps_empty_items():
    template = template_for("json", repeats=True)
    text = "<v>{}</v><v>null</v><v>[1]</v>"
    got = respc.parse_response(text, copy.deepcopy(template), prefix="")
    assert_same(got, {"v": [{}, None, [1]]})
    assert_same(got, ref_parse(text, copy.deepcopy(template), prefix=""))


def test_kv_lines_with_transform():
    template = template_for("kv-lines", transform={"meta": "{content}", "name": "{content.name}"})
    text = "<v>name: bob\nage: 4</v>"
    got = respc.parse_response(text, copy.deepcopy(template), prefix="")
    assert_same(got, {"v": {"meta": {"name": "bob", "age": "4"}, "name": "bob"}})
    assert_same(got, ref_parse(text, copy.deepcopy(template), prefix=""))


def test_text_join_with_strip_false():
    template = template_for("text", {"strip": False}, repeats=True, join="|")
    text = "<v> a </v><v>b </v>"
    got = respc.parse_response(text, copy.deepcopy(template), prefix="")
    assert_same(got, {"v": " a |b "})
    assert_same(got, ref_parse(text, copy.deepcopy(template), prefix=""))
