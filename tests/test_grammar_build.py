"""How compiled.grammar() is built: the same bytes whatever was built before it in the
process and whatever the hash seed, and the shortcuts of the build (what is kept per
template, the IR without the scanners' analyses, a piece's empty match read from its
items, how far back a pattern reads) agree with what they stand for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import regex

import respc
from respc.compiler import grammar as G
from respc.compiler.ir import build_ir

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "templates" / "samples"
FAMILIES = sorted(p.stem for p in SAMPLES.glob("*.json"))


def _tools(family: str) -> list:
    return json.loads((SAMPLES / f"{family}.json").read_text(encoding="utf-8"))["tools"]


def _renamed(tools: list, suffix: str) -> list:
    out = json.loads(json.dumps(tools))
    for tool in out:
        tool.get("function", tool)["name"] += suffix
    return out


def _clear() -> None:
    G._CACHE.clear()
    G._PARTS.clear()
    G._IRS.clear()


def _build(family: str, tools: list, **options):
    try:
        return respc.load(family).grammar(tools, **options)
    except G.GrammarUnsupported as error:
        return f"refused: {error}"


# a few options whose builds share what is kept per template (pieces, searches, reps)
_OPTIONS = [
    {},
    {"tool_choice": "required", "parallel_tool_calls": False},
    {"tool_choice": "none"},
    {"format": "structural_tag"},
]


@pytest.mark.parametrize("family", ["qwen3", "gpt-oss", "muse-glimmer", "kimi-k3", "granite3.3", "hunyuan", "olmo3"])
def test_grammar_does_not_depend_on_what_was_built_before(family):
    tools = _tools(family)
    others = [_renamed(tools, "_a"), _renamed(tools, "_b"), tools[:1]]
    for options in _OPTIONS:
        _clear()
        alone = _build(family, tools, **options)
        _clear()
        for other in others:  # other tool lists and options first: the template's caches filled
            for before in _OPTIONS:
                _build(family, other, **before)
        G._CACHE.clear()
        assert _build(family, tools, **options) == alone, (family, options)


_SEEDED = """
import json, sys
sys.path.insert(0, {root!r})
import respc
tools = json.loads(open({tools!r}).read())["tools"]
marks = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
         "<|a|>", "<|b|>", "<|c|>", "<|d|>", "<|e|>", "<|f|>", "<|endoftext|>"]
sys.stdout.write(respc.load("qwen3").grammar(tools, special_tokens=marks))
"""


def test_grammar_text_does_not_depend_on_the_hash_seed():
    # markers of the same length were ordered by the set's iteration order
    code = _SEEDED.format(root=str(ROOT), tools=str(SAMPLES / "qwen3.json"))
    outs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout)
    assert len(outs) == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_ir_without_scan_analyses_keeps_what_the_grammar_reads(family):
    template = respc.load(family).template
    full, lite = build_ir(template), build_ir(template, scan=False)
    for a, b in zip(full.fields, lite.fields, strict=True):
        assert (a.name, a.path, a.content, a.content_args, a.repeats, a.implicit, a.transform, a.transform_each) == (
            b.name, b.path, b.content, b.content_args, b.repeats, b.implicit, b.transform, b.transform_each)
        for da, db in ((a.open, b.open), (a.close, b.close)):
            assert (da is None) == (db is None)
            if da is not None:
                assert (da.kind, da.path, da.literals, da.pattern, da.groups, da.regex_source) == (
                    db.kind, db.path, db.literals, db.pattern, db.groups, db.regex_source)
    for sa, sb in zip(full.states, lite.states, strict=True):
        assert [(w.action, w.field.name, w.delim.path) for w in sa.watches] == [
            (w.action, w.field.name, w.delim.path) for w in sb.watches]


_EMPTY_CASES = [r"\s*", r"a?", r"(?:a|)", r"(?=x)", r"\s+", r"[ab]", r"(?:x*)+", r"(?P<n>a*)b?", r"(?:ab){0,2}",
                r"(?!y)\s*", r"\Z", r"(?:a|b)+", r".", r"x{0}"]


@pytest.mark.parametrize("pattern", _EMPTY_CASES)
def test_empty_match_read_from_items_agrees_with_the_regex(pattern):
    items, _ = G._parse(pattern, "p")
    assert G._matches_empty(items) == G._nullable(G.translate(items, "p"))


def test_empty_match_of_every_piece_of_the_bundled_families():
    checked = 0
    for family in FAMILIES:
        compiled = respc.load(family)
        ir = G._ir_of(compiled.template)
        b = G.Builder(compiled.template, ir, G.Options("auto", True, frozenset(), G._tool_list(_tools(family))))
        for alts in b.alts.values():
            for alt in alts:
                try:
                    b.pieces(alt, {})
                except G.GrammarUnsupported:
                    continue
        for text, empty in b.empty.items():
            assert empty == G._nullable(text), (family, text)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("pattern, reach", [
    (r"<tool_call>", 0),
    (r"(?<=\n)<tool_call>", 1),
    (r"(?<!ab)x", 2),
    (r"\bcall", 1),
    (r"\A\s*\[", 0),
    (r"^x|y$", 0),
    (r"(?<=</think>\s*)x", None),
    (r"(?:a(?<=xa))+", 2),
])
def test_reach_back(pattern, reach):
    items, _ = G._parse(pattern, "p")
    assert G._reach_back(items) == reach


@pytest.mark.parametrize("pattern, text, pos", [
    (r"(?<=\n)<a>", "x\n<a>", 2),
    (r"(?<=\n)<a>", "xy<a>", 2),
    (r"\b<a>", "b<a>", 1),
    (r"\A<a>", "y<a>", 1),
    (r"^<a>", "<a>", 0),
])
def test_reach_back_bounds_what_a_search_reads(pattern, text, pos):
    # a search from pos reads nothing before pos - reach (nor whether pos starts the text
    # beyond what pos == 0 says): the same text from there gives the same match
    items, _ = G._parse(pattern, "p")
    reach = G._reach_back(items)
    pat = regex.compile(pattern, regex.DOTALL)
    cut = max(0, pos - reach)
    moved = ("z" * 3 if cut else "") + text[cut:]
    shift = len(moved) - len(text)
    a, b = pat.search(text, pos), pat.search(moved, pos + shift)
    assert (a is None) == (b is None)
    if a is not None:
        assert (a.start() + shift, a.end() + shift) == b.span()
