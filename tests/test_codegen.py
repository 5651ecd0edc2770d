"""The compiler's output: deterministic, readable, safe, fresh, and specialized."""

from __future__ import annotations

import ast
import json
import linecache
import traceback
from pathlib import Path

import pytest
import regex
from optional import needs

needs("hypothesis")

from hypothesis import given, settings
from hypothesis import strategies as st

import respc
from respc.compiler import compile_source, load_template_file, template_hash
from respc.runtime.scan import partial_start, tail_in

ROOT = Path(__file__).resolve().parent.parent


def _ident(name: str) -> str:
    """A bundled template's module name: lower-case, ``-`` and ``.`` as ``_`` (glm-4.6 -> glm_4_6)."""
    return name.lower().replace("-", "_").replace(".", "_")


SMOL = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>", "content": "text"},
    },
}


def test_source_is_deterministic_and_headed():
    digest, first = compile_source(SMOL)
    _, second = compile_source(dict(SMOL))
    assert first == second
    assert digest == template_hash(SMOL) and digest.startswith("sha256:")
    header = first.splitlines()[:4]
    assert "DO NOT EDIT" in header[0] and "respc" in header[0]
    assert header[1] == f"# Template hash: {digest}"


def test_hash_depends_on_content():
    other = {**SMOL, "defaults": {"role": "model"}}
    assert template_hash(other) != template_hash(SMOL)


def test_one_method_per_state_with_literals_found_by_find():
    source = respc.compile_template(SMOL).source
    tree = ast.parse(source)
    parser_cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Parser")
    methods = {n.name for n in parser_cls.body if isinstance(n, ast.FunctionDef)}
    # the implicit field is the free state; each explicit field has its own state
    assert {"_state_free", "_state_reasoning_content", "_state_tool_calls"} <= methods
    # a literal that starts with a rare character: found by that character, then checked
    assert 'i = buf.find("<", pos)' in source and 'buf.startswith("<think>", i)' in source
    assert "_regex.compile" not in source  # literal-only template: no regex at all
    # comments point back at the template keys
    assert "# close tool_calls -- fields.tool_calls.close: literal </tool_call>" in source
    assert 'return {"type": "function", "function": value}' in source  # transform inlined


def test_regexes_compiled_once_at_module_level():
    template = load_template_file(ROOT / "templates" / "qwen3.json")
    source = respc.compile_template(template).source
    tree = ast.parse(source)
    module_level = [n for n in tree.body if isinstance(n, ast.Assign) and "_regex.compile" in ast.unparse(n)]
    assert module_level, "regex delimiters are compiled at import"
    in_functions = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and "_regex.compile" in ast.unparse(n)
    ]
    assert not in_functions


def test_tracebacks_show_generated_lines():
    template = {
        "start_anchor": "<s>",
        "fields": {"n": {"open": "<n>", "close": "</n>", "content": "int"}},
    }
    compiled = respc.compile_template(template)
    with pytest.raises(ValueError) as info:
        compiled.parse("<n>abc</n>", prefix="")
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<respc-generated")]
    assert generated and generated[-1].line, "the generated frame shows its source line"
    assert "int(body.strip())" in generated[-1].line
    assert linecache.getline(generated[-1].filename, generated[-1].lineno).strip() == generated[-1].line


EVIL = [
    '"""',
    "'''",
    "\\",
    "x\n    import os\nos.system('echo pwned')",
    '"); __import__("os").system("echo pwned"); ("',
    "\u2028 # line separator \u2029",
    "}}{{ {% raw %}",
    "\x00\x01\r\n",
]


@pytest.mark.parametrize("evil", EVIL)
def test_template_strings_never_become_code(evil, tmp_path):
    template = {
        "defaults": {evil: evil, "role": "assistant"},
        "start_anchor": "A" + evil,
        "fields": {
            evil: {"open": "<o>" + evil, "close": evil + "</o>", "content": "text"},
            "t" + evil: {
                "open_pattern": regex.escape("<p>" + evil) + r"(?P<name>\w+)",
                "close": ["</p>", evil + "!"],
                "content": "json",
                "content_args": {"allow_non_json": True, "string_delims": [[evil + "[", "]" + evil]]},
                "transform": {evil: "{name}", "lit": [evil, 1.5, None, True], "c": "{content}"},
            },
        },
    }
    compiled = respc.compile_template(template)
    tree = ast.parse(compiled.source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "os" not in names and "__import__" not in names
    calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    allowed = regex.compile(
        r"_regex\.compile|_content\.make_parser|_tf\.\w+|_scan\.(Field|State|partial_start|prefix_partial|tail_in|edge_moves)|"
        r"_scan\.(quiet_cut|quiet_table|still_pending|ws_tail|ws_run_start|ws_run_end|long_beginning|timed)|buf\.(find|startswith)|frozenset|"
        r"prefix\.rfind|_RE_\w+\.(search|finditer|match)|m\.(span|start|end)|out\.append|body\.strip|"
        r"int|float|len|_parse_\w+|body(\.strip\(\))?\.lower"
    )
    assert all(allowed.fullmatch(c) for c in calls), sorted(c for c in calls if not allowed.fullmatch(c))
    docstrings = [ast.get_docstring(n) or "" for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))]
    assert not any(evil in d for d in docstrings if evil.strip())
    assert compiled.template == template
    message = compiled.parse(f"<o>{evil}hi{evil}</o>", prefix="")
    assert message[evil] == "hi"
    out = compiled.parse(f"<p>{evil}fn payload</p>", prefix="")
    assert out["t" + evil] == {evil: "fn", "lit": [evil, 1.5, None, True], "c": "payload"}


@pytest.mark.slow  # (regenerates or collects a lot: the quick tier leaves it out)
def test_generated_modules_are_fresh():
    """generated/ is exactly what `respc build` makes from templates/ (never hand-edited)."""
    templates = sorted((ROOT / "templates").glob("*.json"))
    assert templates
    for path in templates:
        target = ROOT / "generated" / f"{_ident(path.stem)}.py"
        assert target.exists(), f"{target} missing: run `respc build`"
        _, source = compile_source(load_template_file(path))
        assert target.read_text(encoding="utf-8") == source, f"{target} is stale: run `respc build`"
    modules = {p.stem for p in (ROOT / "generated").glob("*.py")} - {"__init__"}
    assert modules == {_ident(p.stem) for p in templates}


def test_bundled_templates_load_their_generated_module():
    for name in respc.bundled_templates():
        compiled = respc.load(name)
        assert compiled.module.__name__ == f"respc.generated.{_ident(name)}"
        assert compiled.hash == template_hash(compiled.template)
    with pytest.raises(KeyError, match="no bundled template"):
        respc.load("no-such-model")


def test_a_bundled_template_dict_gets_its_generated_module():
    """compile_template of a dict equal to a bundled template (a fresh copy) is the bundled
    template: its generated module, compiled where the install is."""
    for name in respc.bundled_templates():
        template = load_template_file(ROOT / "templates" / f"{name}.json")
        # families with equal templates (glm-4.5, glm-4.6) share it: the dict gets one of them
        same = [respc.load(n) for n in respc.bundled_templates() if respc.load(n).hash == respc.load(name).hash]
        assert any(respc.compile_template(json.loads(json.dumps(template))) is c for c in same)
        assert any(respc.compile_template(ROOT / "templates" / f"{name}.json") is c for c in same)
        assert respc.load(name).name == name and respc.load(name).module.__name__.endswith(
            "." + name.replace("-", "_").replace(".", "_")
        )
        changed = {**template, "defaults": {**template.get("defaults", {}), "role": "someone"}}
        other = respc.compile_template(changed)
        assert other is not respc.load(name) and other.module.__file__.startswith("<respc-generated sha256:")
        assert other.parse("", prefix="")["role"] == "someone"


def test_runtime_templates_run_as_generated_modules():
    compiled = respc.compile_template({"start_anchor": "x", "fields": {"a": {"open": "[", "close": "]"}}})
    assert compiled.module.__file__.startswith("<respc-generated sha256:")
    parser = compiled.parser(prefix="")
    assert type(parser).__module__ == compiled.module.__name__
    assert isinstance(parser, respc.ResponseParser)


# --- literal partial matching agrees with the regex module -------------------------------
_ALPHABET = st.text(alphabet="ab<>", max_size=10)


@settings(max_examples=400, deadline=None)
@given(
    lits=st.lists(st.text(alphabet="ab<>", min_size=1, max_size=4), min_size=1, max_size=3, unique=True),
    buf=_ALPHABET,
    data=st.data(),
)
def test_partial_start_matches_regex_partial_search(lits, buf, data):
    """Held literal tails are exactly where `regex`'s partial search puts them."""
    pos = data.draw(st.integers(0, len(buf)))
    ordered = tuple(sorted(lits, key=len, reverse=True))
    pattern = regex.compile("|".join(regex.escape(s) for s in ordered), regex.DOTALL)
    if any(buf.find(s, pos) >= 0 for s in ordered):
        return  # a complete match is found with str.find first
    m = pattern.search(buf, pos, partial=True)
    assert m.partial and m.end() == len(buf)
    if len(ordered) == 1:
        assert partial_start(buf, pos, ordered[0]) == m.start()
    # the generated scans ask tail_in, from the last place a partial literal can start
    beginnings = frozenset(s[:k] for s in ordered for k in range(1, len(s)))
    firsts = "".join(sorted({s[0] for s in ordered}))
    lo = max(pos, len(buf) - len(ordered[0]) + 1)
    assert tail_in(buf, lo, firsts, beginnings) == m.start()


def test_deeply_nested_defaults_and_transforms_compile_and_match_the_reference(tmp_path, monkeypatch):
    """Defaults and a transform nested 250 levels deep (past Python's 200 nested brackets):
    emitted as JSON text / filled at run time, so the module compiles, `respc compile` shows
    it, and parsing gives the reference's message."""
    import copy

    needs("transformers.utils.chat_parsing")
    from transformers.utils.chat_parsing import parse_response as ref_parse

    from respc.compiler import compile_source

    deep_value, deep_transform = "leaf", "{content}"
    for _ in range(250):
        deep_value, deep_transform = {"a": deep_value}, [deep_transform, "{n}"]
    template = {
        "start_anchor": "S",
        "defaults": {"d": deep_value},
        "fields": {
            "x": {"open_pattern": r"<x (?P<n>\w+)>", "close": "</x>", "transform": {"t": deep_transform}},
            "y": {"open": "<y>", "close": "</y>", "content": "json", "transform": {"k": [[deep_value]], "c": "{content}"}},
        },
    }
    monkeypatch.setenv("RESPC_CACHE_DIR", str(tmp_path))
    text = "<x q>1</x><y>[2]</y>"
    assert respc.parse_response(text, template, prefix="") == ref_parse(text, copy.deepcopy(template), prefix="")
    _, source = compile_source(template)  # black-formatted, as `respc compile` prints it
    compile(source, "<deep>", "exec")
    assert list(tmp_path.glob("*.py"))  # the module that compiled was cached


def test_a_module_that_does_not_compile_is_not_cached(tmp_path, monkeypatch):
    from respc import api
    from respc.runtime import loader

    monkeypatch.setenv("RESPC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(api, "compile_source", lambda template, **kw: ("sha256:" + "0" * 64, "def broken(:\n"))
    with pytest.raises(SyntaxError):
        api._build({"start_anchor": "S", "fields": {"x": {}}}, '{"never": "seen"}')
    assert not list(tmp_path.glob("*.py"))
    assert loader.read_cached("sha256:" + "0" * 64) is None


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, derandomize=True)
@given(
    lit=st.text(alphabet="<|ab", min_size=1, max_size=4),
    buf=st.text(alphabet="<|ab", max_size=24),
    start=st.integers(0, 26),
    top=st.one_of(st.none(), st.integers(0, 26)),
)
def test_found_literals_are_where_str_find_finds_them(lit, buf, start, top):
    """The scans' literal search (by a rare first character, then the literal) is str.find."""
    from respc.compiler.emit import Writer, find_into

    w = Writer()
    find_into(w, "i", lit, "start", "" if top is None else "top")
    scope = {"buf": buf, "start": start, "top": top}
    exec("\n".join(w.lines), scope)
    want = buf.find(lit, start) if top is None else buf.find(lit, start, top + len(lit))
    assert scope["i"] == want, (w.lines, buf, start, top)
