"""Template validation: every rule raises `respc.TemplateError` (a ValueError) whose message starts with the
dotted path of the offending value (`fields.x.open[1]: ...`, `fields["a.b"].open: ...`).

Rules the reference (transformers==5.24.0) also enforces are cross-checked: the reference must reject the
same template with a ValueError. What the reference accepts, respc compiles too: the "accepted with a
warning" section checks each such case gets a TemplateWarning at its path (TemplateError in strict mode)
and parses as the reference parses it.
"""

import copy
import json
import warnings

import pytest

import respc
from optional import needs

needs("transformers.utils.chat_parsing")

from transformers.utils.chat_parsing import parse_response as ref_parse


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

BASE = {"start_anchor": "<s>", "fields": {"x": {"open": "<x>", "close": "</x>"}}}

_DROP = object()


def with_field(**changes):
    """BASE with field `x` updated; a value of _DROP removes the key."""
    template = copy.deepcopy(BASE)
    for key, val in changes.items():
        if val is _DROP:
            template["fields"]["x"].pop(key, None)
        else:
            template["fields"]["x"][key] = val
    return template


def with_top(**changes):
    template = copy.deepcopy(BASE)
    for key, val in changes.items():
        if val is _DROP:
            template.pop(key, None)
        else:
            template[key] = val
    return template


def rejected(template, paths=None, words=()):
    """Assert respc rejects `template` with a TemplateError whose message starts with one of `paths` followed
    by ':' and contains (case-insensitively) at least one word of each group in `words`. Checked through
    compile_template, parse_response, ResponseParser and get_response_parser. Returns the message."""
    messages = []
    calls = (
        lambda t: respc.compile_template(t),
        lambda t: respc.parse_response("<x>1</x>", t, prefix=""),
        lambda t: respc.ResponseParser(t, ""),
        lambda t: respc.get_response_parser(t, prefix=""),
    )
    for call in calls:
        with pytest.raises(respc.TemplateError) as excinfo:
            call(copy.deepcopy(template) if not isinstance(template, set) else template)
        assert isinstance(excinfo.value, ValueError)
        messages.append(str(excinfo.value))
    msg = messages[0]
    if paths is not None:
        paths = (paths,) if isinstance(paths, str) else paths
        assert any(msg.startswith(p + ":") for p in paths), f"message {msg!r} does not start with any of {paths}"
    for group in words:
        group = (group,) if isinstance(group, str) else group
        assert any(w.lower() in msg.lower() for w in group), f"message {msg!r} lacks any of {group}"
    return msg


def warned(template, paths, words=(), texts=("<x>1</x>", "<x> a: 1 </x>", "x <x>[f(a=1)]</x>")):
    """Assert the reference accepts `template` and respc compiles it too, with a TemplateWarning
    whose message starts with one of `paths` followed by ':' (and holds a word of each group in
    `words`); that strict mode raises it as a TemplateError at that path; and that respc parses
    `texts` exactly as the reference does (the same message, or the same error class).
    Returns the warning's message."""
    from transformers.utils.chat_parsing.response_templates import load_response_template

    load_response_template(copy.deepcopy(template))  # the reference accepts it
    paths = (paths,) if isinstance(paths, str) else paths
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        respc.compile_template(copy.deepcopy(template))
    found = [str(w.message) for w in caught if issubclass(w.category, respc.TemplateWarning)]
    msg = next((m for m in found if any(m.startswith((p + ":", p + "[", p + ".")) for p in paths)), None)
    assert msg is not None, f"no TemplateWarning at {paths}: {found}"
    for group in words:
        group = (group,) if isinstance(group, str) else group
        assert any(w.lower() in msg.lower() for w in group), f"message {msg!r} lacks any of {group}"
    with pytest.raises(respc.TemplateError) as excinfo:
        respc.compile_template(copy.deepcopy(template), strict=True)
    assert str(excinfo.value).split(": ")[0] in [f.split(": ")[0] for f in found]
    for text in texts:
        same_outcome(template, text)
    return msg


def same_outcome(template, text):
    """respc and the reference give the same message for `text`, or raise the same class."""
    try:
        want = ref_parse(text, copy.deepcopy(template), prefix="")
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        with pytest.raises(type(exc)):
            respc.parse_response(text, copy.deepcopy(template), prefix="")
        return
    assert respc.parse_response(text, copy.deepcopy(template), prefix="") == want


def ref_rejects(template, text="<x>1</x>"):
    with pytest.raises(ValueError):
        ref_parse(text, copy.deepcopy(template), prefix="")


def accepted(template, text="<x>1</x>", expected=None):
    compiled = respc.compile_template(copy.deepcopy(template))
    got = compiled.parse(text, prefix="")
    ref = ref_parse(text, copy.deepcopy(template), prefix="")
    assert got == ref
    if expected is not None:
        assert got == expected
    return got


# --------------------------------------------------------------------------------------------------
# top level
# --------------------------------------------------------------------------------------------------


def test_error_class():
    assert issubclass(respc.TemplateError, ValueError)


@pytest.mark.parametrize("template", [[1], 42, None, [BASE]], ids=["list", "int", "none", "list-of-dict"])
def test_template_not_a_dict(template):
    # NOTE: the path of the template root itself is not specified, so only the class is asserted
    msg = rejected(template)
    assert msg
    with pytest.raises((ValueError, TypeError)):
        ref_parse("", template, prefix="")


def test_unknown_top_level_key():
    template = with_top(foo=1)
    rejected(template, "foo", ["unknown"])
    ref_rejects(template)


def test_unknown_top_level_key_typo():
    template = with_top(start_anchor=_DROP, start_ancor="<s>")
    msg = rejected(template, ("start_ancor", "start_anchor"))
    assert "start_ancor" in msg


@pytest.mark.parametrize("version", [2, 0, "1", 1.5])
def test_unsupported_version(version):
    template = with_top(version=version)
    rejected(template, "version")
    ref_rejects(template)


def test_version_1_accepted():
    accepted(with_top(version=1), expected={"x": "1"})
    accepted(BASE, expected={"x": "1"})


@pytest.mark.parametrize("defaults", [[], "role", 1, [["role", "assistant"]]])
def test_defaults_not_a_dict(defaults):
    template = with_top(defaults=defaults)
    rejected(template, "defaults")
    ref_rejects(template)


def test_fields_missing():
    template = with_top(fields=_DROP)
    rejected(template, "fields")
    ref_rejects(template)


def test_fields_empty():
    template = with_top(fields={})
    rejected(template, "fields")
    ref_rejects(template)


@pytest.mark.parametrize("fields", [[], [{"open": "<x>"}], "x", 1])
def test_fields_not_a_dict(fields):
    template = with_top(fields=fields)
    rejected(template, "fields")
    ref_rejects(template)


def test_neither_start_anchor_nor_pattern():
    template = with_top(start_anchor=_DROP)
    rejected(template, "start_anchor", [("start_anchor",)])
    ref_rejects(template)


def test_both_start_anchor_and_pattern():
    # the convention does not say which of the two keys is "the offending value": accept either
    template = with_top(start_anchor_pattern="<s>")
    rejected(template, ("start_anchor", "start_anchor_pattern"))
    ref_rejects(template)


@pytest.mark.parametrize("anchor", ["", 5, None, {"a": 1}])
def test_start_anchor_bad_value(anchor):
    template = with_top(start_anchor=anchor)
    rejected(template, "start_anchor")
    ref_rejects(template)


@pytest.mark.parametrize("pattern", ["(", "[a-", "*x", "(?P<1>a)"])
def test_start_anchor_pattern_invalid_regex(pattern):
    template = with_top(start_anchor=_DROP, start_anchor_pattern=pattern)
    rejected(template, "start_anchor_pattern", ["regex"])
    ref_rejects(template)


def test_start_anchor_pattern_valid_accepted():
    accepted(with_top(start_anchor=_DROP, start_anchor_pattern=r"<s\d*>"), expected={"x": "1"})


# --------------------------------------------------------------------------------------------------
# fields
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["<x>", 1, None, ["<x>", "</x>"]])
def test_field_not_a_dict(field):
    template = with_top(fields={"x": field})
    rejected(template, "fields.x")
    ref_rejects(template)


def test_unknown_field_key():
    template = with_field(opn="<x>")
    rejected(template, "fields.x.opn", ["unknown"])
    ref_rejects(template)


def test_unknown_field_key_in_field_with_non_identifier_name():
    template = with_top(fields={"a.b": {"open": "<x>", "opn": "<y>"}})
    rejected(template, 'fields["a.b"].opn', ["unknown"])
    ref_rejects(template)


def test_non_identifier_field_name_uses_brackets_for_nested_paths():
    template = with_top(fields={"tool-calls": {"open_pattern": "(", "close": "</x>"}})
    rejected(template, 'fields["tool-calls"].open_pattern', ["regex"])
    ref_rejects(template)


def test_both_open_and_open_pattern():
    template = with_field(open_pattern="<x>")
    rejected(template, ("fields.x.open", "fields.x.open_pattern"))
    ref_rejects(template)


def test_both_close_and_close_pattern():
    template = with_field(close_pattern="</x>")
    rejected(template, ("fields.x.close", "fields.x.close_pattern"))
    ref_rejects(template)


@pytest.mark.parametrize("key", ["open", "close"])
def test_empty_literal_list(key):
    template = with_field(**{key: []})
    rejected(template, f"fields.x.{key}")
    ref_rejects(template)


@pytest.mark.parametrize("key", ["open", "close"])
@pytest.mark.parametrize("bad", [5, None, ["nested"], {"a": 1}])
def test_non_string_in_literal_list(key, bad):
    template = with_field(**{key: ["<a>", bad]})
    rejected(template, f"fields.x.{key}[1]")
    ref_rejects(template)


@pytest.mark.parametrize("key", ["open", "close"])
def test_empty_string_literal(key):
    template = with_field(**{key: ""})
    rejected(template, f"fields.x.{key}")
    ref_rejects(template)


@pytest.mark.parametrize("key", ["open", "close"])
def test_empty_string_literal_in_list(key):
    template = with_field(**{key: ["<a>", ""]})
    rejected(template, f"fields.x.{key}[1]")
    ref_rejects(template)


@pytest.mark.parametrize("key", ["open", "close"])
@pytest.mark.parametrize("bad", [5, None, True, {"a": "b"}])
def test_literal_not_str_or_list(key, bad):
    template = with_field(**{key: bad})
    rejected(template, f"fields.x.{key}")
    ref_rejects(template)


def test_literal_list_with_duplicates_accepted():
    accepted(with_field(open=["<x>", "<x>", "<y>"]), text="<y>2</x>", expected={"x": "2"})


@pytest.mark.parametrize("key", ["open_pattern", "close_pattern"])
@pytest.mark.parametrize("pattern", ["(", "a)", "[z-a]", "(?P<1>x)"])
def test_invalid_regex(key, pattern):
    template = with_field(**{key.split("_")[0]: _DROP, key: pattern})
    rejected(template, f"fields.x.{key}", ["regex"])
    ref_rejects(template)


def test_invalid_regex_in_tool_calls_field():
    template = with_top(fields={"tool_calls": {"open_pattern": "<tool_call(", "close": "</tool_call>"}})
    rejected(template, "fields.tool_calls.open_pattern", ["regex"])
    ref_rejects(template)


@pytest.mark.parametrize("key", ["open_pattern", "close_pattern"])
@pytest.mark.parametrize("bad", [5, None, ["<x>"]])
def test_pattern_not_a_string(key, bad):
    # reference: regex.compile() raises TypeError here; respc rejects the template
    template = with_field(**{key.split("_")[0]: _DROP, key: bad})
    rejected(template, f"fields.x.{key}")


@pytest.mark.parametrize("content", ["yaml", "JSON", "xml", ""])
def test_unknown_content_parser(content):
    template = with_field(content=content)
    rejected(template, "fields.x.content")
    ref_rejects(template)


@pytest.mark.parametrize("join", [1, True, ["\n"], {"sep": ""}])
def test_join_not_a_string(join):
    template = with_field(join=join, repeats=True)
    rejected(template, "fields.x.join")
    ref_rejects(template)


def test_join_without_repeats():
    template = with_field(join="\n")
    rejected(template, "fields.x.join", ["repeats"])
    ref_rejects(template)
    template = with_field(join="", repeats=False)
    rejected(template, "fields.x.join", ["repeats"])
    ref_rejects(template)


def test_join_with_repeats_accepted():
    accepted(with_field(join="+", repeats=True), text="<x>a</x><x>b</x>", expected={"x": "a+b"})


@pytest.mark.parametrize("value", [1, "true", None, 0])
def test_transform_each_not_a_bool(value):
    template = with_field(transform_each=value, transform={"a": "{b}"}, content="json")
    rejected(template, "fields.x.transform_each")
    ref_rejects(template)


def test_transform_each_without_transform():
    template = with_field(transform_each=True, content="json")
    rejected(template, "fields.x.transform_each", ["transform"])
    ref_rejects(template)


def test_transform_each_false_without_transform_accepted():
    accepted(with_field(transform_each=False), expected={"x": "1"})


def test_mixed_placeholder_string_in_transform():
    template = with_field(transform="abc {content} def")
    rejected(template, "fields.x.transform", ["placeholder", "{"])
    ref_rejects(template)


def test_mixed_placeholder_nested_in_dict():
    template = with_field(transform={"type": "function", "function": {"name": "fn_{content}"}})
    rejected(template, "fields.x.transform.function.name")
    ref_rejects(template)


def test_mixed_placeholder_nested_in_list():
    template = with_field(transform={"function": {"arguments": ["{content}", "{a}{b}"]}})
    rejected(template, "fields.x.transform.function.arguments[1]")
    ref_rejects(template)


def test_mixed_placeholder_in_top_level_list_transform():
    template = with_field(transform=["ok", "{content} and more"])
    rejected(template, "fields.x.transform[1]")
    ref_rejects(template)


def test_transform_plain_literals_accepted():
    accepted(
        with_field(transform={"a": "{content}", "b": "{ spaced }", "c": "{a-b}", "d": ["{}", 3, None]}),
        expected={"x": {"a": "1", "b": "{ spaced }", "c": "{a-b}", "d": ["{}", 3, None]}},
    )


@pytest.mark.parametrize("key,pattern", [("open_pattern", r"<x (?P<id>\d+)>"), ("close_pattern", r"</x(?P<tail>!?)>")])
def test_named_groups_without_transform(key, pattern):
    template = with_field(**{key.split("_")[0]: _DROP, key: pattern})
    rejected(template, f"fields.x.{key}", ["transform"])
    ref_rejects(template)


def test_unnamed_groups_without_transform_accepted():
    accepted(with_field(open=_DROP, open_pattern=r"<x( \d+)?>"), text="<x 3>v</x>", expected={"x": "v"})


def test_named_groups_with_transform_accepted():
    template = with_field(open=_DROP, open_pattern=r"<x (?P<id>\d+)>", transform={"id": "{id}", "v": "{content}"})
    accepted(template, text="<x 3>v</x>", expected={"x": {"id": "3", "v": "v"}})


def test_two_implicit_fields():
    template = with_top(fields={"a": {"close": "</a>"}, "b": {}})
    # a rule about the whole template may use the path `fields`; naming the second implicit field is also fine
    msg = rejected(template, ("fields", "fields.b", "fields.a"))
    assert "a" in msg and "b" in msg
    ref_rejects(template)


def test_one_implicit_field_accepted():
    accepted(with_top(fields={"x": {"open": "<x>", "close": "</x>"}, "content": {}}), text="hi<x>1</x>", expected={"x": "1", "content": "hi"})


# --------------------------------------------------------------------------------------------------
# accepted with a warning
#
# transformers accepts these templates when it loads them (and reads the odd value only when a region is
# parsed: ignores it, uses its truthiness, or fails then). A template published with a model is checked by
# transformers alone, so respc compiles them too: with a TemplateWarning at the path (strict mode raises it),
# and parses them exactly as the reference does.
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [[], "strip", 1, ["strip", False]])
def test_content_args_not_a_dict(args):
    warned(with_field(content_args=args), "fields.x.content_args")


@pytest.mark.parametrize(
    "content,args,bad",
    [
        ("text", {"strp": False}, "strp"),
        ("json", {"strict": True}, "strict"),
        ("json", {"unquoted_key": True}, "unquoted_key"),
        ("xml-inline", {"tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", "merge": True}, "merge"),
        ("kv-lines", {"sep": "="}, "sep"),
        ("int", {"base": 16}, "base"),
    ],
)
def test_unknown_content_args_key(content, args, bad):
    warned(with_field(content=content, content_args=args), f"fields.x.content_args.{bad}", ["ignores"])


def test_unknown_content_args_key_non_identifier_uses_brackets():
    warned(with_field(content="json", content_args={"a b": 1}), 'fields.x.content_args["a b"]', ["ignores"])


@pytest.mark.parametrize("args", [_DROP, {}, {"merge_duplicates": True}])
def test_xml_inline_without_tag_pattern(args):
    template = with_field(content="xml-inline", content_args=args)
    msg = warned(template, ("fields.x.content_args", "fields.x.content_args.tag_pattern", "fields.x.content"))
    assert "tag_pattern" in msg


@pytest.mark.parametrize("pattern", ["(", r"<(?P<key>\w+)>(?P<value>.*?", "[a-"])
def test_xml_inline_tag_pattern_invalid_regex(pattern):
    template = with_field(content="xml-inline", content_args={"tag_pattern": pattern})
    warned(template, "fields.x.content_args.tag_pattern", ["regex"])


@pytest.mark.parametrize(
    "pattern,missing",
    [
        (r"<(?P<name>\w+)>(?P<value>.*?)</(?P=name)>", "key"),
        (r"<(?P<key>\w+)/>", "value"),
        (r"<(\w+)>(.*?)</\1>", "key"),
    ],
)
def test_xml_inline_tag_pattern_without_key_or_value_group(pattern, missing):
    template = with_field(content="xml-inline", content_args={"tag_pattern": pattern})
    msg = warned(template, "fields.x.content_args.tag_pattern")
    assert missing in msg


def test_xml_inline_tag_pattern_not_a_string():
    template = with_field(content="xml-inline", content_args={"tag_pattern": 5})
    warned(template, "fields.x.content_args.tag_pattern")


@pytest.mark.parametrize("content", ["xml-inline", "kv-lines"])
def test_value_parser_unknown_name(content):
    args = {"value_parser": {"name": "yaml"}}
    if content == "xml-inline":
        args["tag_pattern"] = r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>"
    warned(with_field(content=content, content_args=args), "fields.x.content_args.value_parser.name")


@pytest.mark.parametrize("value_parser", ["json", 1, ["json"]])
def test_value_parser_not_a_dict(value_parser):
    template = with_field(content="kv-lines", content_args={"value_parser": value_parser})
    warned(template, "fields.x.content_args.value_parser")


def test_value_parser_unknown_args_key():
    template = with_field(content="kv-lines", content_args={"value_parser": {"name": "json", "args": {"lenient": True}}})
    warned(template, "fields.x.content_args.value_parser.args.lenient", ["ignores"])


def test_value_parser_valid_accepted():
    template = with_field(content="kv-lines", content_args={"value_parser": {"name": "json", "args": {"allow_non_json": True}}})
    accepted(template, text="<x>a: 1\nb: hi</x>", expected={"x": {"a": 1, "b": "hi"}})


@pytest.mark.parametrize(
    "delims,path",
    [
        ("<<>>", "fields.x.content_args.string_delims"),
        ({"<<": ">>"}, "fields.x.content_args.string_delims"),
        ([["<<"]], "fields.x.content_args.string_delims[0]"),
        ([["<<", ">>", "!!"]], "fields.x.content_args.string_delims[0]"),
        (["<<>>"], "fields.x.content_args.string_delims[0]"),
        ([["<<", ">>"], [1, 2]], "fields.x.content_args.string_delims[1]"),
        ([["", ">>"]], "fields.x.content_args.string_delims[0]"),
    ],
)
def test_string_delims_malformed(delims, path):
    template = with_field(content="json", content_args={"string_delims": delims})
    warned(template, ("fields.x.content_args.string_delims", path), texts=('<x>{"a": <<q>>}</x>', "<x>[1]</x>"))


def test_string_delims_valid_accepted():
    template = with_field(content="json", content_args={"string_delims": [["<<", ">>"], ["$(", ")$"]]})
    accepted(template, text='<x>{"a": <<q>>, "b": $(r)$}</x>', expected={"x": {"a": "q", "b": "r"}})


@pytest.mark.parametrize("key", ["line_sep", "kv_sep"])
def test_kv_lines_empty_separator(key):
    warned(with_field(content="kv-lines", content_args={key: ""}), f"fields.x.content_args.{key}")


@pytest.mark.parametrize("key", ["line_sep", "kv_sep"])
def test_kv_lines_separator_not_a_string(key):
    warned(with_field(content="kv-lines", content_args={key: 1}), f"fields.x.content_args.{key}")


@pytest.mark.parametrize("key", ["repeats", "optional"])
@pytest.mark.parametrize("value", ["yes", 1, None, "false"])
def test_repeats_optional_not_bool(key, value):
    warned(with_field(**{key: value}), f"fields.x.{key}")


@pytest.mark.parametrize("content", [["json"], 5, {"name": "json"}])
def test_content_not_a_string(content):
    # reference: unhashable values raise TypeError, others "unknown parser"
    rejected(with_field(content=content), "fields.x.content")


def test_non_json_value_set_in_defaults():
    rejected(with_top(defaults={"role": {"assistant"}}), "defaults.role")


def test_non_json_value_tuple_as_open():
    rejected(with_field(open=("<x>", "<y>")), "fields.x.open")


def test_non_json_value_object_in_transform():
    rejected(with_field(transform={"k": object()}), "fields.x.transform.k")


def test_non_json_value_tuple_nested_in_transform_list():
    rejected(with_field(transform={"k": ["{content}", ("a", "b")]}), "fields.x.transform.k[1]")


def test_non_json_value_in_content_args():
    rejected(with_field(content="text", content_args={"strip": object()}), "fields.x.content_args.strip")


def test_non_json_value_bytes_literal():
    rejected(with_field(close=b"</x>"), "fields.x.close")


def test_non_json_value_set_as_template():
    msg = rejected({"start_anchor", "fields"})
    assert msg


# --------------------------------------------------------------------------------------------------
# template files
# --------------------------------------------------------------------------------------------------


def test_missing_template_file(tmp_path):
    path = tmp_path / "does_not_exist.json"
    for template in (str(path), path):
        for call in (
            lambda: respc.compile_template(template),
            lambda: respc.parse_response("x", template, prefix=""),
            lambda: respc.ResponseParser(template, ""),
        ):
            with pytest.raises((respc.TemplateError, OSError)) as excinfo:
                call()
            assert "does_not_exist.json" in str(excinfo.value)


def test_template_file_with_invalid_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"start_anchor": "<s>", "fields": {', encoding="utf-8")
    for template in (str(path), path):
        with pytest.raises(respc.TemplateError) as excinfo:
            respc.compile_template(template)
        assert isinstance(excinfo.value, ValueError)
        assert "broken.json" in str(excinfo.value)


def test_template_file_with_invalid_template(tmp_path):
    path = tmp_path / "bad_rule.json"
    path.write_text(json.dumps(with_field(opn="<y>")), encoding="utf-8")
    with pytest.raises(respc.TemplateError) as excinfo:
        respc.compile_template(path)
    assert "fields.x.opn" in str(excinfo.value)


def test_template_file_valid(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(BASE), encoding="utf-8")
    assert respc.compile_template(str(path)).parse("<x> 1 </x>", prefix="") == {"x": "1"}


def test_validation_happens_before_any_parsing():
    # a TemplateError is raised even when the text would never reach the faulty field
    with pytest.raises(respc.TemplateError):
        respc.parse_response("", with_field(transform_each=True), prefix="")
    # strict mode raises a warning's finding the same way
    with pytest.raises(respc.TemplateError, match="tag_pattern"):
        respc.compile_template(with_field(content="xml-inline"), strict=True)


def test_tokenizer_config_without_response_template(tmp_path):
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps({"model_max_length": 4096, "chat_template": "{{ x }}"}), encoding="utf-8")
    with pytest.raises(respc.TemplateError, match="no response template found"):
        respc.compile_template(str(path))
    path.write_text(json.dumps({"model_max_length": 4096, "response_template": BASE}), encoding="utf-8")
    assert respc.compile_template(str(path)).parse("<x>1</x>", prefix="") == {"x": "1"}


def test_null_join_is_no_join():
    warned(with_field(join=None), "fields.x.join", texts=("<x>1</x><x>2</x>",))


def test_version_true_or_float_is_version_1():
    for version in (True, 1.0):
        warned(with_top(version=version), "version")


# --------------------------------------------------------------------------------------------------
# transform placeholders that no region can fill (the reference accepts them and fails per region)
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, path, words",
    [
        (dict(transform={"a": "{nope}"}), "fields.x.transform.a", ["never be filled", "'nope'"]),
        (dict(transform=["{content}", {"b": "{nope}"}]), "fields.x.transform[1].b", ["never be filled"]),
        (dict(open=_DROP, open_pattern=r"<x(?P<id> \d+)?>", transform={"a": "{idd}"}), "fields.x.transform.a", ["id"]),
        (dict(close=_DROP, close_pattern=r"</(?P<tag>x)>", transform={"a": "{tagg}"}), "fields.x.transform.a", ["tag"]),
        # a dotted path into a str (a text region or a capture) can never be indexed
        (dict(transform={"a": "{content.args}"}), "fields.x.transform.a", ["a str"]),
        (dict(open=_DROP, open_pattern=r"<x(?P<id> \d+)?>", transform={"a": "{id.x}"}), "fields.x.transform.a", ["capture"]),
        (dict(content="int", transform={"a": "{content.v}"}), "fields.x.transform.a", ["an int"]),
        # transform_each over python-call-list: each item holds exactly name and arguments
        (dict(content="python-call-list", transform_each=True, transform={"n": "{name}", "c": "{content}"}),
         "fields.x.transform.c", ["transform_each", "arguments, name"]),
        (dict(content="python-call-list", transform_each=True, transform={"n": "{name.first}"}),
         "fields.x.transform.n", ["a str"]),
    ],
)
def test_placeholder_that_can_never_be_filled_is_warned(changes, path, words):
    warned(with_field(**changes), path, words, texts=("<x>1</x>", "<x 2>[f(a=1)]</x>", "<x>[f(a=1)]</x>"))


@pytest.mark.parametrize(
    "changes",
    [
        dict(transform={"a": "{content}"}),
        dict(open=_DROP, open_pattern=r"<x(?P<id> \d+)?>", transform={"a": "{id}", "b": "{content}"}),
        dict(close=_DROP, close_pattern=r"</x(?P<t>!)?>", transform={"a": "{t}"}),
        # keys that depend on the parsed content: never refused, never warned
        dict(content="json", transform={"a": "{content.args.x}"}),
        dict(content="json", transform_each=True, transform={"a": "{anything}", "b": "{content}"}),
        dict(content="kv-lines", transform={"a": "{content.key}"}),
        dict(content="python-call-list", transform_each=True, transform={"n": "{name}", "a": "{arguments.city}"}),
        dict(open=_DROP, open_pattern=r"<x(?P<id> \d+)?>", content="python-call-list", transform_each=True,
             transform={"n": "{name}", "i": "{id}"}),
    ],
)
def test_placeholders_that_may_be_filled_are_not_warned(changes):
    with warnings.catch_warnings():
        warnings.simplefilter("error", respc.TemplateWarning)
        respc.compile_template(with_field(**changes), strict=True)


def test_lint_reports_a_placeholder_that_can_never_be_filled():
    from respc.compiler.lint import lint

    found = [str(f) for f in lint(with_field(transform={"a": "{nope}"}))]
    assert any(f.startswith("fields.x.transform.a: placeholder {nope}") for f in found), found
