"""Arguments of the wrong type: each is an error that names the argument and what it takes,
raised before anything else trips over it (an AttributeError, a RecursionError, a message
about something else); a template that holds itself or nests too deeply is a TemplateError
at its path; and which runtime runs (compiled or the Python sources) is told, with why."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import respc
from respc import _native
from respc.compiler import compile_source, template_hash
from respc.compiler.validate import MAX_DEPTH

ROOT = Path(__file__).resolve().parent.parent
QWEN3 = json.loads((ROOT / "templates" / "qwen3.json").read_text(encoding="utf-8"))
OUTPUT = "<think>plan</think>Sure.<|im_end|>"
MESSAGE = {"role": "assistant", "reasoning_content": "plan", "content": "Sure."}
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}

# every public way in that takes a template
TEMPLATE_ENTRY_POINTS = {
    "compile_template": lambda t: respc.compile_template(t),
    "parse_response": lambda t: respc.parse_response(OUTPUT, t, prefix=""),
    "ResponseParser": lambda t: respc.ResponseParser(t, ""),
    "get_response_parser": lambda t: respc.get_response_parser(t, prefix=""),
}


def _deep(levels: int, leaf: object = "leaf") -> object:
    """``leaf`` inside ``levels`` nested objects (built without recursion)."""
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


# --- load() and the template argument ----------------------------------------------------
@pytest.mark.parametrize("name", [None, 42, b"qwen3", ["qwen3"]], ids=["None", "int", "bytes", "list"])
def test_load_takes_a_name(name):
    with pytest.raises(
        TypeError, match=rf"^load\(\) takes a bundled template's name \(a str.*got {type(name).__name__}$"
    ):
        respc.load(name)


def test_load_points_a_template_dict_or_path_to_compile_template():
    for template in (copy.deepcopy(QWEN3), ROOT / "templates" / "qwen3.json"):
        with pytest.raises(
            TypeError,
            match=r"got (dict|PosixPath|WindowsPath); compile a template dict or file with respc\.compile_template\(\)$",
        ):
            respc.load(template)


@pytest.mark.parametrize("entry", list(TEMPLATE_ENTRY_POINTS))
@pytest.mark.parametrize("template", [None, 42, 1.5, ["qwen3"], {"qwen3"}], ids=["None", "int", "float", "list", "set"])
def test_a_template_of_no_template_type_is_a_type_error(entry, template):
    with pytest.raises(TypeError) as excinfo:
        TEMPLATE_ENTRY_POINTS[entry](template)
    # still a TemplateError (a ValueError), as it was before it was also a TypeError
    assert isinstance(excinfo.value, respc.TemplateError)
    message = str(excinfo.value)
    assert message.startswith("template: must be a dict (a JSON object), a path to a template JSON file, ")
    assert "CompiledTemplate" in message
    assert message.endswith(f"got {type(template).__name__}")


def test_template_bytes_say_to_decode_them():
    text = json.dumps(QWEN3).encode()
    for entry in TEMPLATE_ENTRY_POINTS.values():
        with pytest.raises(
            TypeError, match=r"^template: must be a dict .*got bytes \(decode the bytes first: json\.loads"
        ):
            entry(text)


# --- text and prefix ---------------------------------------------------------------------------
@pytest.mark.parametrize("prefix", [b"x", 42, {"x": 1}], ids=["bytes", "int", "dict"])
def test_parse_prefix_of_the_wrong_type(prefix):
    wanted = rf"^prefix must be a str \(or a list of str with a list of texts\), got {type(prefix).__name__}$"
    with pytest.raises(TypeError, match=wanted):
        respc.parse_response(OUTPUT, QWEN3, prefix=prefix)
    with pytest.raises(TypeError, match=wanted):
        respc.load("qwen3").parse(OUTPUT, prefix=prefix)
    with pytest.raises(TypeError, match=wanted):  # a batch
        respc.parse_response([OUTPUT, OUTPUT], QWEN3, prefix=prefix)


def test_parse_prefix_list_with_one_text_says_what_goes_with_what():
    with pytest.raises(ValueError, match="a list of prefixes goes with a list of texts"):
        respc.parse_response(OUTPUT, QWEN3, prefix=["", ""])
    assert respc.parse_response([OUTPUT, OUTPUT], QWEN3, prefix=["", ""]) == [MESSAGE, MESSAGE]


@pytest.mark.parametrize("text", [OUTPUT.encode(), None, 42], ids=["bytes", "None", "int"])
def test_parse_text_of_the_wrong_type(text):
    with pytest.raises(TypeError, match=rf"^text must be a str or a list of str, got {type(text).__name__}$"):
        respc.parse_response(text, QWEN3, prefix="")


@pytest.mark.parametrize("prefix", [b"x", 42, ["x"]], ids=["bytes", "int", "list"])
def test_stream_prefix_of_the_wrong_type(prefix):
    wanted = rf"^prefix must be a str, got {type(prefix).__name__}$"
    compiled = respc.load("qwen3")
    for make in (
        lambda: compiled.parser(prefix=prefix),
        lambda: respc.ResponseParser(QWEN3, prefix),
        lambda: respc.ResponseParser(compiled, prefix=prefix),
        lambda: respc.get_response_parser("qwen3", prefix=prefix),
    ):
        with pytest.raises(TypeError, match=wanted):
            make()


# --- tools -------------------------------------------------------------------------------------
def _tools_calls():
    compiled = respc.load("qwen3")
    return {
        "parse_response": lambda tools: respc.parse_response(OUTPUT, QWEN3, prefix="", tools=tools),
        "parse batch": lambda tools: compiled.parse([OUTPUT], prefix="", tools=tools),
        "parser": lambda tools: compiled.parser(prefix="", tools=tools),
        "ResponseParser": lambda tools: respc.ResponseParser(QWEN3, "", tools=tools),
        "get_response_parser": lambda tools: respc.get_response_parser("qwen3", prefix="", tools=tools),
    }


@pytest.mark.parametrize("tools", [42, "get_weather", b"x", TOOL], ids=["int", "str", "bytes", "one-dict"])
def test_tools_must_be_a_list(tools):
    # the reference fails on 42 ("'int' object is not iterable") and quietly types nothing for
    # a str or a lone dict (it iterates their characters / keys)
    for call in _tools_calls().values():
        with pytest.raises(
            TypeError,
            match=rf"^tools must be a list of tools \(JSON schema dicts or functions\), got {type(tools).__name__}",
        ):
            call(tools)
    with pytest.raises(TypeError, match="put the one tool in a list"):
        respc.parse_response(OUTPUT, QWEN3, prefix="", tools=TOOL)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (42, TypeError, r"tools\[1\]: must be a tool dict or a function, got int"),
        (None, TypeError, r"tools\[1\]: must be a tool dict or a function, got NoneType"),
        (print, TypeError, r"tools\[1\]: .*callable builtin_function_or_method that is not a function"),
        ({"type": "function"}, ValueError, r"tools\[1\]: a tool needs a str 'name', got no name \(keys: type\)"),
        ({"function": "x"}, ValueError, r"tools\[1\]\.function: must be a dict"),
        ({"type": "function", "function": {"name": 3}}, ValueError, r"tools\[1\]\.function: .*name of type int"),
    ],
)
def test_an_item_that_is_not_a_tool_is_an_error_naming_its_index(bad, error, message):
    # the reference skips such items, so the arguments of the tool meant stay untyped with no
    # sign; every entry point raises instead, naming the item and the shapes a tool may have
    for call in _tools_calls().values():
        with pytest.raises(error, match=message):
            call([TOOL, bad])
    with pytest.raises(error, match="an Anthropic tool"):
        respc.parse_response(OUTPUT, QWEN3, prefix="", tools=[TOOL, bad])


def test_tools_of_the_right_types_are_taken():
    def get_time(timezone: str) -> str:
        """Get the time.

        Args:
            timezone: an IANA timezone name
        """
        return timezone

    for tools in (None, [], [TOOL], (TOOL,), [TOOL, get_time]):
        for call in _tools_calls().values():
            call(tools)


def test_a_generator_of_tools_types_every_text_of_a_batch():
    """A generator is read once, into a list: every text of a batch is typed with it (it
    used to type the first text only: the next found the generator spent)."""
    samples = json.loads((ROOT / "templates" / "samples" / "qwen3-coder.json").read_text(encoding="utf-8"))
    case = next(c for c in samples["cases"] if c["name"] == "reasoning_tool_call")
    compiled = respc.load("qwen3-coder")
    untyped = compiled.parse(case["output"], prefix=case["prefix"])
    assert untyped != case["expected"]  # so the tools matter here
    got = compiled.parse([case["output"]] * 2, prefix=case["prefix"], tools=(tool for tool in samples["tools"]))
    assert got == [case["expected"]] * 2


# --- templates that hold themselves, or nest too deeply --------------------------------------
def _self_referencing() -> dict:
    template = copy.deepcopy(QWEN3)
    template["fields"]["content"]["transform"] = template
    return template


@pytest.mark.parametrize("entry", list(TEMPLATE_ENTRY_POINTS))
def test_a_template_that_holds_itself_is_a_template_error_at_the_cycle(entry):
    with pytest.raises(respc.TemplateError) as excinfo:
        TEMPLATE_ENTRY_POINTS[entry](_self_referencing())
    assert excinfo.value.path == "fields.content.transform"
    assert str(excinfo.value).startswith(
        "fields.content.transform: the template refers to itself (a cycle: this is the whole template again); "
        "templates must be JSON data"
    )


def test_a_cycle_below_the_top_names_where_it_closes():
    template = copy.deepcopy(QWEN3)
    template["defaults"]["items"] = [template["defaults"]]
    with pytest.raises(
        respc.TemplateError,
        match=r"^defaults\.items\[0\]: the template refers to itself \(a cycle: this is defaults again\)",
    ):
        respc.compile_template(template)
    template = copy.deepcopy(QWEN3)
    template["fields"]["tool_calls"]["transform"]["function"] = {"x": [template["fields"]["tool_calls"]]}
    with pytest.raises(
        respc.TemplateError,
        match=r"^fields\.tool_calls\.transform\.function\.x\[0\]: .*this is fields\.tool_calls again",
    ):
        respc.compile_template(template)


def test_the_compiler_functions_refuse_a_cycle_too():
    for call in (compile_source, template_hash, lambda t: respc.compile_template(t, strict=True)):
        with pytest.raises(respc.TemplateError, match=r"^fields\.content\.transform: the template refers to itself"):
            call(_self_referencing())


def test_a_value_used_twice_is_no_cycle():
    shared = {"role": "assistant"}
    template = copy.deepcopy(QWEN3)
    template["defaults"] = {"a": shared, "b": [shared, shared]}
    message = respc.parse_response(OUTPUT, template, prefix="")
    assert message["a"] == {"role": "assistant"} and message["b"] == [{"role": "assistant"}] * 2


def test_a_template_dict_changed_into_a_cycle_after_compiling():
    """compile_template remembers dicts it has compiled, and looks at what they hold when one
    comes again: a cycle added since is still the error above."""
    template = copy.deepcopy(QWEN3)
    assert respc.compile_template(template).parse(OUTPUT, prefix="") == MESSAGE
    template["fields"]["content"]["transform"] = template
    with pytest.raises(respc.TemplateError, match=r"^fields\.content\.transform: the template refers to itself"):
        respc.compile_template(template)


def _too_deep(where: str) -> tuple[dict, str]:
    """A template with a value 10,000 levels deep, and the path its error names."""
    template = copy.deepcopy(QWEN3)
    if where == "defaults":
        template["defaults"]["d"] = _deep(10_000)
        return template, "defaults.d.a.a.a.a.a.a...(492 more levels)"
    if where == "transform":
        template["fields"]["content"]["transform"] = {"c": "{content}", "d": _deep(10_000)}
        return template, "fields.content.transform.d.a.a.a.a...(492 more levels)"
    if where == "content_args":  # an argument the parser ignores: the reference never looks at it
        template["fields"]["content"]["content_args"] = {"ignored": _deep(10_000)}
        return template, "fields.content.content_args.ignored.a.a.a.a...(492 more levels)"
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    template["defaults"]["d"] = deep
    return template, "defaults.d[0][0][0][0][0][0]...(492 more levels)"


@pytest.mark.parametrize("entry", list(TEMPLATE_ENTRY_POINTS))
@pytest.mark.parametrize("where", ["defaults", "transform", "content_args", "list"])
def test_a_template_10000_levels_deep_is_a_template_error(where, entry):
    template, path = _too_deep(where)
    with pytest.raises(respc.TemplateError) as excinfo:
        TEMPLATE_ENTRY_POINTS[entry](template)
    assert excinfo.value.path == path  # the first keys of a path 500 keys long
    assert len(excinfo.value.parts) == MAX_DEPTH
    assert str(excinfo.value).startswith(f"{path}: objects and arrays nest more than {MAX_DEPTH} levels deep here")


def test_a_template_dict_made_too_deep_after_compiling():
    # (the dict's snapshot used to fall back to its repr, a RecursionError this deep)
    template = copy.deepcopy(QWEN3)
    assert respc.compile_template(template).parse(OUTPUT, prefix="") == MESSAGE
    template["defaults"]["d"] = _deep(10_000)
    with pytest.raises(respc.TemplateError, match=r"^defaults\.d\.a\.a.*: objects and arrays nest more than"):
        respc.compile_template(template)


def test_a_template_as_deep_as_allowed_compiles_and_parses():
    template = copy.deepcopy(QWEN3)
    template["defaults"]["d"] = _deep(MAX_DEPTH - 2)  # the template, defaults, then these
    compiled = respc.compile_template(template)
    assert compiled.parse(OUTPUT, prefix="")["d"] == _deep(MAX_DEPTH - 2)
    parser = compiled.parser(prefix="")
    parser.feed(OUTPUT)
    assert parser.finalize()[0]["d"] == _deep(MAX_DEPTH - 2)
    template["defaults"]["d"] = _deep(MAX_DEPTH - 1)
    with pytest.raises(respc.TemplateError, match=r"^defaults\.d\.a.*: objects and arrays nest more than 500 levels"):
        respc.compile_template(template)


# --- which runtime runs ------------------------------------------------------------------
def test_the_runtime_in_use_is_told_with_where_it_came_from():
    assert type(respc.COMPILED_RUNTIME) is bool
    files = _native.runtime_files()
    assert list(files) == list(_native.NATIVE_MODULES)
    for name, path in files.items():
        assert os.path.isfile(path), (name, path)
    assert respc.COMPILED_RUNTIME == all(not path.endswith(".py") for path in files.values())
    info = respc.RUNTIME_INFO
    assert info.startswith("compiled runtime (" if respc.COMPILED_RUNTIME else "pure-Python runtime")


def _import_respc_in(folder: Path, env: dict) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", "import respc; print(respc.COMPILED_RUNTIME); print(respc.RUNTIME_INFO)"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(folder),
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_in_the_repository_root_import_respc_runs_the_checkout_sources():
    """The README's note: in the repository root `import respc` finds the checkout (the
    current directory comes first on sys.path), never compiled, whatever is installed."""
    env = {k: v for k, v in os.environ.items() if k != _native.PURE_PYTHON_ENV}  # (another reason)
    compiled, info = _import_respc_in(ROOT, env)
    assert compiled == "False"
    assert info.startswith(f"pure-Python runtime: respc was imported from the source checkout {ROOT} ")
    assert "run from another directory for the compiled one" in info


def test_elsewhere_import_respc_runs_the_installed_copy(tmp_path):
    compiled, info = _import_respc_in(tmp_path, dict(os.environ))
    assert compiled == str(respc.COMPILED_RUNTIME) and info == respc.RUNTIME_INFO
