"""Seeded random generator for the respc differential test suite.

Everything here is pure data generation: given ``(seed, group_index)`` it deterministically
produces one *group*: a response template (valid or deliberately invalid) plus a handful of
inputs (prefix, model output text, tools, chunkings) to run against it.  Each (input, chunking)
pair is one differential *case*; see ``harness.py`` for the execution/comparison side.

Reproducibility: every group draws from its own ``random.Random(f"respc-diff:{seed}:{group}")``,
so a single failing group can be regenerated without replaying the ones before it.

The generator stays inside respc's (documented, stricter-than-reference) validation rules for
*valid* templates: ``content_args`` only carries known keys of the right type for the chosen
parser, ``repeats``/``optional``/``transform_each`` are real booleans, ``tag_pattern`` always
compiles and has ``key`` and ``value`` groups, ``value_parser`` is ``{"name", "args"}`` with a
known parser, separators are non-empty strings, and all values are JSON values.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from typing import Any

import regex as re

# --------------------------------------------------------------------------------------------
# Shared small alphabets (so delimiters collide, overlap and show up partially)
# --------------------------------------------------------------------------------------------

TOKEN_FAMILIES: list[list[str]] = [
    ["<a>", "</a>", "<a", "<ab>", "<b>", "</b>", "<"],
    ["<|s|>", "<|e|>", "<|m|>", "<|c|>", "<|", "|>"],
    ["<think>", "</think>", "<tool_call>", "</tool_call>", "<t"],
    ["[[", "]]", "[", "]", "[[x]]"],
    ["##", "#", "###", "#!"],
    ["«", "»", "→", "🙂", "é", "ß", "日本"],
    ["END", "Answer:", "\n\n", "\n", "E"],
    ["<x>", "<y>", "</x>", "</y>", "<xy>"],
]
ALL_TOKENS: list[str] = [t for fam in TOKEN_FAMILIES for t in fam]

FILLER_PIECES = [
    "hello", "world", " ", "  ", "\n", "\t", "a", "b", "x", "é", "ñ", "ü", "日本語", "中文", "🙂", "👍🏽", "<",
    ">", "|", "/", "{", "}", "[", "]", '"', "'", ":", ",", "=", ";", "1", "42", "0.5", "-", "_", "to=",
    "Ünïcödé", "ok", " the ", "Σ", "\u200b", "\r\n", "\\", "$", "^", ".", "*", "\u212a", "\u017f",
    "\u1e9e", "İ", "e\u0301", "\x00", "\u2028",
]

TOOL_NAMES = ["get_w", "search", "f", "calc", "noargs", "名前", "unknown_tool"]
ARG_NAMES = ["a", "b", "n", "x", "city", "flag", "items", "obj", "opt", "ñ"]
CAPTURE_NAMES = ["name", "id", "kind", "ch"]

NORMAL_FIELD_NAMES = ["content", "reasoning_content", "tool_calls", "x", "y", "z", "answer", "n", "meta"]
WEIRD_FIELD_NAMES = ["a-b", "名", "class", "None", "__x__", "with space", "0", "", "'q'", '"dq"', "\\", "é"]

ANCHOR_LITERALS = [
    "<|im_start|>assistant\n", "<s>", "A:", "<|start|>assistant", "###", "<a>", "\n", "🙂", "aa", "##",
    "ab", "bc", "<a",
]
ANCHOR_PATTERNS = [
    (r"<\|im_start\|>assistant\n?", ["<|im_start|>assistant\n", "<|im_start|>assistant"]),
    (r"(?:User|Bot):\s*", ["User: ", "Bot:", "Bot:\n"]),
    (r"<s>", ["<s>"]),
    (r"^", [""]),
    (r"$", [""]),
    (r"A+:", ["A:", "AA:"]),
    (r"(?<=\n)>>", ["\n>>"]),
    (r"x*", ["", "xx"]),
]

SCALAR_BODIES = {
    "int": [
        " 42 ", "-3", "+7", "1_000", "0", "x", "", "٣", "１２", "1.5", " 12\n", "007",
        "9" * 25,
        "-",
        "1e3",
    ],
    "float": [
        "1.5", "nan", "inf", "-0.0", "1e3", "abc", " 2 ", "", "1_0.5", "-Infinity", ".5", "5.", "NaN",
        "1e999",
    ],
    "bool": ["true", "True", "1", "false", "yes", "", " TRUE ", "0", "tru", "1 "],
}

SCALAR_GOOD = {
    "int": [" 42 ", "-3", "+7", "1_000", "0", "٣", "１２", " 12\n", "007", "9" * 25],
    "float": ["1.5", "nan", "inf", "-0.0", "1e3", " 2 ", "-Infinity", ".5", "5.", "NaN", "1e999", "7"],
    "bool": ["true", "True", "1", "false", "yes", "", " TRUE ", "0", "tru", "1 "],
}

ARG_RAW_VALUES = [
    "12", " 7 ", "3.0", "3.5", "1e3", "1E2", "1.5", "nan", "inf", "-inf", "true", "False", "0", "1",
    "null", "None", "[1, 2]", '{"k": 1}', "abc", "", "1_000", "-0", "١٢", " true ", "[]", "{}", '"s"',
    "2.", "0x10",
]


# --------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------


@dataclass
class Delim:
    """A delimiter (open/close) as it appears in the template plus concrete strings that match it."""

    key: str  # "open"/"open_pattern"/"close"/"close_pattern"
    value: Any  # literal string, list of literals, or regex pattern string
    samples: list[str]
    groups: list[str] = field(default_factory=list)
    zero_width: bool = False


@dataclass
class FieldMeta:
    name: str
    open: Delim | None
    close: Delim | None
    content: str
    content_args: dict
    role: str  # body generation hint
    transform: Any = None
    transform_each: bool = False


@dataclass
class Input:
    prefix: str | None
    text: str
    tools: list[dict] | None  # serialisable tool specs (see materialize_tools)
    chunkings: list[list[str]]
    batch: bool = False  # also run respc's batch parse_response(list) on [text, ...]
    batch_texts: list[str] | None = None
    clean: bool = False
    tools_as: str = "list"  # or "tuple"


@dataclass
class Group:
    seed: int
    index: int
    template: Any
    invalid_kind: str | None  # None for (intended) valid templates
    inputs: list[Input]


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def esc(s: str) -> str:
    return re.escape(s)


def pick(rng: random.Random, seq):
    return seq[rng.randrange(len(seq))]


def chance(rng: random.Random, p: float) -> bool:
    return rng.random() < p


def filler(rng: random.Random, palette: list[str], n: int | None = None) -> str:
    if n is None:
        n = rng.randint(0, 6)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.7:
            out.append(pick(rng, FILLER_PIECES))
        elif r < 0.85 and palette:
            tok = pick(rng, palette)
            out.append(tok[: rng.randint(1, max(1, len(tok)))])  # partial (or whole) delimiter
        elif r < 0.93 and palette:
            out.append(pick(rng, palette))
        else:
            out.append(
                chr(
                    rng.choice(
                        [rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x2FF), rng.randint(0x4E00, 0x4E40)]
                    )
                )
            )
    return "".join(out)


def ident_like(rng: random.Random) -> str:
    return pick(rng, TOOL_NAMES + ARG_NAMES + ["foo", "bar1", "Ω", "x_y"])


# --------------------------------------------------------------------------------------------
# Delimiters
# --------------------------------------------------------------------------------------------


def make_palette(rng: random.Random) -> list[str]:
    fams = rng.sample(TOKEN_FAMILIES, rng.choice([1, 1, 2, 2, 3]))
    pal: list[str] = []
    for fam in fams:
        pal.extend(rng.sample(fam, rng.randint(2, len(fam))))
    if chance(rng, 0.3):
        pal.append(pick(rng, ALL_TOKENS))
    # dedupe, deterministic order
    return list(dict.fromkeys(pal))


def literal_delim(rng: random.Random, kind: str, palette: list[str]) -> Delim:
    r = rng.random()
    if r < 0.6:
        tok = pick(rng, palette)
        return Delim(kind, tok, [tok])
    # literal list, possibly with prefix-overlapping literals and duplicates
    n = rng.randint(1, 3)
    lits = [pick(rng, palette) for _ in range(n)]
    if chance(rng, 0.35):
        base = pick(rng, lits)
        if len(base) > 1:
            lits.append(base[: rng.randint(1, len(base) - 1)])  # strict prefix of another literal
        else:
            lits.append(base + pick(rng, ["b>", "x", base]))
    if chance(rng, 0.2):
        lits.append(pick(rng, lits))  # duplicate
    rng.shuffle(lits)
    return Delim(kind, lits, list(dict.fromkeys(lits)))


def regex_delim(rng: random.Random, kind: str, palette: list[str], groups_ok: bool, zero_ok: bool) -> Delim:
    """Build a regex delimiter from palette tokens, together with matching sample strings."""
    A = pick(rng, palette)
    B = pick(rng, palette)
    forms = ["lit", "ws", "alt", "opt", "gap", "cls", "lookbehind", "exotic", "exotic", "exotic"]
    if groups_ok:
        forms += ["named", "named", "harmony", "harmony", "named_opt"]
    if zero_ok:
        forms += ["zero"]
    form = pick(rng, forms)
    if form == "lit":
        return Delim(kind, esc(A), [A])
    if form == "ws":
        return Delim(kind, esc(A) + r"\s*", [A, A + " ", A + "\n  "])
    if form == "alt":
        C = pick(rng, palette)
        return Delim(kind, f"(?:{esc(A)}|{esc(C)})", [A, C])
    if form == "opt":
        return Delim(kind, f"{esc(A)}(?:\\s*{esc(B)})?", [A, A + B, A + " " + B])
    if form == "gap":
        return Delim(kind, f"{esc(A)}.*?{esc(B)}", [A + B, A + "zz" + B, A + "\n" + B])
    if form == "cls":
        return Delim(kind, f"{esc(A)}[0-9]+", [A + "1", A + "42"])
    if form == "lookbehind":
        C = pick(rng, ["a", "\n", " ", A[-1:]])
        return Delim(kind, f"(?<={esc(C)}){esc(B)}", [C + B])
    if form == "exotic":
        return exotic_delim(rng, kind, palette, A, B)
    if form == "named":
        g = pick(rng, CAPTURE_NAMES)
        samples = [f"{A}{t}{B}" for t in rng.sample(TOOL_NAMES, 3)]
        return Delim(kind, f"{esc(A)}(?P<{g}>\\w+){esc(B)}", samples, [g])
    if form == "named_opt":
        g = pick(rng, CAPTURE_NAMES)
        samples = [f"{A}{B}", f"{A}={pick(rng, TOOL_NAMES)}{B}"]
        return Delim(kind, f"{esc(A)}(?:=(?P<{g}>\\w+))?{esc(B)}", samples, [g])
    if form == "harmony":
        g = "name" if chance(rng, 0.8) else pick(rng, CAPTURE_NAMES)
        tools = rng.sample(TOOL_NAMES, 3)
        samples = [
            f"{A} to={tools[0]} <|constrain|>json{B}",
            f"{A}to={tools[1]}{B}",
            f"{A} to=functions.{tools[2]} {B}",
        ]
        pat = f"{esc(A)}\\s*to=(?:functions\\.)?(?P<{g}>\\w+).*?{esc(B)}"
        return Delim(kind, pat, samples, [g])
    return zero_delim(rng, kind, palette)


def exotic_delim(rng: random.Random, kind: str, palette: list[str], A: str, B: str) -> Delim:
    """Regex features that stress partial matching, respc's buffer trimming and its regex analysis."""
    d = _exotic_delim(rng, kind, palette, A, B)
    compiled = re.compile(d.value, re.DOTALL)
    d.samples = [x for x in d.samples if compiled.search(x)] or [""]
    return d


def _exotic_delim(rng: random.Random, kind: str, palette: list[str], A: str, B: str) -> Delim:
    eA, eB = esc(A), esc(B)
    C = pick(rng, palette)
    eC = esc(C)
    f = pick(
        rng,
        [
            "lb_var", "lb_unbounded", "neg_lb", "neg_la", "word_b", "m_caret", "m_dollar", "abs_A", "G",
            "case_i", "greedy_class", "empty_alt", "backref", "atomic", "possessive", "unicode", "crlf",
            "dot", "scoped_flag", "lb_long", "la_pos", "lazy_end", "nested_q", "fullcase", "v1_set",
            "grapheme", "cond", "lead_ws", "lead_ws", "ci_unicode", "class_first", "class_first",
            "opt_first", "la_first", "empty_branch", "hex_escape", "verbose", "named_char",
        ],
    )
    if f == "lead_ws":
        lead = pick(rng, ["\\s*", "\\s+", "[ \\t]*", "\\n*", "(?:\\s|x)*", "\\s*?"])
        return Delim(kind, f"{lead}{eA}", [A, " " + A, "\n\n" + A, "x " + A, "\t" + A])
    if f == "ci_unicode":
        w, samples = pick(
            rng,
            [
                ("kelvin", ["kelvin", "KELVIN", "\u212aelvin"]),
                ("stop", ["stop", "STOP", "\u017ftop"]),
                ("<think>", ["<THINK>", "<think>", "<Think>"]),
                ("straße", ["STRAßE", "straße", "STRA\u1e9eE"]),
                ("ǆ", ["ǆ", "ǅ", "Ǆ"]),
                ("i", ["i", "I", "\u0130"]),
            ],
        )
        scoped = chance(rng, 0.5)
        pat = f"(?i:{esc(w)})" if scoped else f"(?i){esc(w)}"
        return Delim(kind, pat, samples)
    if f == "class_first":
        cls, samples = pick(
            rng,
            [
                ("[<\\[]", ["<", "["]),
                ("[^a-z]", ["<", "1", "É"]),
                ("\\d", ["1", "٣"]),
                ("\\W", ["<", " "]),
                (".", ["x", "\n"]),
                ("\\p{Lu}", ["A", "É"]),
                ("\\w", ["a", "é", "_"]),
                ("[\\s\\S]", ["q"]),
            ],
        )
        return Delim(kind, f"{cls}{eA}", [x + A for x in samples])
    if f == "opt_first":
        return Delim(kind, f"(?:x)?{eA}", [A, "x" + A])
    if f == "la_first":
        return Delim(kind, f"(?={eA}){eA}", [A])
    if f == "empty_branch":
        return Delim(kind, f"(?:|x){eA}", [A, "x" + A])
    if f == "hex_escape":
        code = ord(A[0])
        rest = esc(A[1:])
        first = pick(
            rng,
            [
                f"\\x{code:02x}" if code < 256 else f"\\U{code:08x}",
                f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}",
            ],
        )
        return Delim(kind, first + rest, [A])
    if f == "verbose":
        spaced = " ".join(esc(ch) if ch != " " else "\\ " for ch in A)
        return Delim(kind, f"(?x) {spaced}  # a comment", [A])
    if f == "named_char":
        return Delim(kind, "\\N{LATIN SMALL LETTER E WITH ACUTE}" + eA, ["é" + A])
    if f == "fullcase":
        return Delim(kind, "(?fi)straße", ["straße", "STRASSE", "Strasse"])
    if f == "v1_set":
        return Delim(kind, f"(?V1){eA}[[a-z]--[aeiou]]+", [A + "xyz", A + "b"])
    if f == "grapheme":
        return Delim(kind, f"{eA}\\X", [A + "e\u0301", A + "x", A + "🙂"])
    if f == "cond":
        return Delim(kind, f"(<)?{eA}(?(1)>|)", ["<" + A + ">", A])
    if f == "lb_var":
        return Delim(kind, f"(?<={eA}|{eC}){eB}", [A + B, C + B])
    if f == "lb_unbounded":
        return Delim(kind, f"(?<={eA}[^\n]*){eB}", [A + "xx" + B, A + B])
    if f == "lb_long":
        return Delim(kind, f"(?<={eA}.{{3}}){eB}", [A + "abc" + B])
    if f == "neg_lb":
        return Delim(kind, f"(?<!x){eB}", [B, "a" + B])
    if f == "neg_la":
        return Delim(kind, f"{eA}(?!{eC})", [A, A + "z"])
    if f == "la_pos":
        return Delim(kind, f"{eA}(?={eC})", [A + C])
    if f == "word_b":
        w = pick(rng, ["END", "end", "stop", "x", "to"])
        return Delim(kind, f"\\b{w}\\b", [w, " " + w + " "])
    if f == "m_caret":
        return Delim(kind, f"(?m)^{eA}", ["\n" + A, A])
    if f == "m_dollar":
        return Delim(kind, f"(?m){eA}$", [A + "\n", A])
    if f == "abs_A":
        return Delim(kind, f"\\A{eA}", [A])
    if f == "G":
        return Delim(kind, f"\\G{eA}", [A])
    if f == "case_i":
        w = pick(rng, ["end", "stop", "answer:", "<T>"])
        return Delim(kind, f"(?i){esc(w)}", [w, w.upper(), w.capitalize()])
    if f == "greedy_class":
        return Delim(kind, f"{eA}[^<\\n]*{eB}", [A + "zz" + B, A + B])
    if f == "empty_alt":
        return Delim(kind, f"(?:{eA}|)", [A, ""])
    if f == "backref":
        return Delim(kind, f"(['\"]){eA}\\1", ["'" + A + "'", '"' + A + '"'])
    if f == "atomic":
        return Delim(kind, f"(?>{eA}|{eA}{eB})", [A, A + B])
    if f == "possessive":
        return Delim(kind, f"{eA}\\s*+(?:{eB})?+", [A, A + " " + B])
    if f == "unicode":
        return Delim(kind, f"{eA}\\p{{Han}}+", [A + "日本", A + "中"])
    if f == "crlf":
        return Delim(kind, f"\\r?\\n{eA}", ["\n" + A, "\r\n" + A])
    if f == "dot":
        return Delim(kind, f"{eA}.{eB}", [A + "\n" + B, A + "x" + B])
    if f == "scoped_flag":
        return Delim(kind, f"{eA}(?-s:.)*?{eB}", [A + "ab" + B, A + B])
    if f == "lazy_end":
        return Delim(kind, f"{eA}.*?$", [A + "tail"])
    return Delim(kind, f"(?:{eA}\\s?){{1,3}}", [A, A + " " + A])


def zero_delim(rng: random.Random, kind: str, palette: list[str]) -> Delim:
    """Zero-width (or possibly zero-width) patterns; palette[0] is favoured so they collide."""
    A = palette[0] if chance(rng, 0.5) else pick(rng, palette)
    zform = pick(rng, ["$", r"\Z", "lookahead", "lookahead", "^", "caret_alt", "caret_alt", "lookbehind0"])
    if zform == "$":
        return Delim(kind, "$", [""], zero_width=True)
    if zform == r"\Z":
        return Delim(kind, r"\Z", [""], zero_width=True)
    if zform == "lookahead":
        return Delim(kind, f"(?={esc(A)})", [""], zero_width=True)
    if zform == "^":
        return Delim(kind, "^", [""], zero_width=True)
    if zform == "caret_alt":
        return Delim(kind, f"(?:^|{esc(A)}\\s*)", [A, A + " "], zero_width=True)
    return Delim(kind, f"(?<={esc(A)})", [""], zero_width=True)


def make_delim(rng: random.Random, side: str, palette: list[str], groups_ok: bool, zero_p: float) -> Delim:
    lit_key = side
    pat_key = side + "_pattern"
    r = rng.random()
    if r < zero_p:
        return zero_delim(rng, pat_key, palette)
    if r < 0.55:
        return literal_delim(rng, lit_key, palette)
    return regex_delim(rng, pat_key, palette, groups_ok, zero_ok=chance(rng, zero_p * 2))


# --------------------------------------------------------------------------------------------
# Content parsers and their (valid) args
# --------------------------------------------------------------------------------------------

TAG_PATTERNS = [
    # (pattern, renderer(key, value) -> str)
    (
        r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>",
        lambda k, v, ws: f"<parameter={k}>{ws}{v}{ws}</parameter>",
    ),
    (r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>", lambda k, v, ws: f"<{k}>{v}</{k}>"),
    (r"(?P<key>\w+)=(?P<value>[^;]*);", lambda k, v, ws: f"{k}={v};"),
    (r'<arg name="(?P<key>[^"]+)">(?P<value>.*?)</arg>', lambda k, v, ws: f'<arg name="{k}">{v}</arg>{ws}'),
    (r"<\|(?P<key>\w+)\|>(?P<value>[^<]*)", lambda k, v, ws: f"<|{k}|>{v}"),
]
#: a tag pattern whose value group may not participate (value None); used without value_parser only
OPTIONAL_VALUE_TAG = (
    r"<(?P<key>\w+)(?:=(?P<value>[^/>]*))?/>",
    lambda k, v, ws: f"<{k}/>" if ws == "\n" else f"<{k}={v}/>",
)
STRING_DELIM_PAIRS = [["<<", ">>"], ["«", "»"], ['<|"|>', '<|"|>'], ["'", "'"], ["<escape>", "<escape>"]]
LINE_SEPS = ["\n", ";", "\n\n", "|", "，"]
KV_SEPS = [":", "=", " = ", "->", "："]


def gen_value_parser(rng: random.Random, depth: int = 0) -> dict:
    names = ["text", "int", "float", "bool", "json", "json", "json"]
    if depth == 0 and chance(rng, 0.1):
        names += ["kv-lines", "xml-inline"]
    name = pick(rng, names)
    vp: dict = {"name": name}
    if name == "xml-inline" or chance(rng, 0.7):  # xml-inline needs its tag_pattern
        vp["args"] = gen_content_args(rng, name, depth + 1)
    return vp


def gen_content_args(rng: random.Random, content: str, depth: int = 0) -> dict:
    args: dict = {}
    if content == "text":
        if chance(rng, 0.5):
            args["strip"] = chance(rng, 0.5)
    elif content in ("int", "float", "bool"):
        if chance(rng, 0.25):
            args["strip"] = chance(rng, 0.5)
    elif content == "json":
        if chance(rng, 0.15):
            args["strip"] = chance(rng, 0.5)
        if chance(rng, 0.35):
            args["unquoted_keys"] = chance(rng, 0.8)
        if chance(rng, 0.25):
            args["string_delims"] = [list(p) for p in rng.sample(STRING_DELIM_PAIRS, rng.randint(1, 2))]
        if chance(rng, 0.4):
            args["allow_non_json"] = chance(rng, 0.8)
    elif content == "xml-inline":
        args["tag_pattern"] = TAG_PATTERNS[rng.randrange(len(TAG_PATTERNS))][0]
        if chance(rng, 0.6) and depth < 2:
            args["value_parser"] = gen_value_parser(rng, depth)
        elif chance(rng, 0.15):
            args["tag_pattern"] = OPTIONAL_VALUE_TAG[0]
        if chance(rng, 0.4):
            args["merge_duplicates"] = chance(rng, 0.7)
    elif content == "kv-lines":
        if chance(rng, 0.5):
            args["line_sep"] = pick(rng, LINE_SEPS)
        if chance(rng, 0.5):
            args["kv_sep"] = pick(rng, KV_SEPS)
        if chance(rng, 0.3):
            args["strip"] = chance(rng, 0.5)
        if chance(rng, 0.4) and depth < 2:
            args["value_parser"] = gen_value_parser(rng, depth)
    return args


# --------------------------------------------------------------------------------------------
# Transforms
# --------------------------------------------------------------------------------------------

TOOL_TRANSFORM = {"type": "function", "function": "{content}"}


def literal_leaf(rng: random.Random) -> Any:
    return pick(
        rng,
        [
            "function", "x", "", "{}", "{ content }", "{a b}", "{1.x}", 0, 1, -2, 1.5, True, False, None,
            "é🙂", [],
        ],
    )


def gen_random_transform(rng: random.Random, scope: list[str], depth: int = 0, dotted: bool = True) -> Any:
    r = rng.random()
    if depth >= 2 or r < 0.35:
        r2 = rng.random()
        if r2 < 0.55:
            return "{" + pick(rng, scope) + "}"
        if r2 < 0.7 and (dotted or chance(rng, 0.1)):
            return "{" + pick(rng, scope) + "." + pick(rng, ARG_NAMES + ["name", "arguments"]) + "}"
        if r2 < 0.74:
            return "{" + pick(rng, ["missing", "nope"]) + "}"  # KeyError at runtime
        return literal_leaf(rng)
    if r < 0.8:
        keys = rng.sample(
            ["type", "function", "name", "arguments", "value", "k", "ä", "content"], rng.randint(1, 3)
        )
        return {k: gen_random_transform(rng, scope, depth + 1, dotted) for k in keys}
    return [gen_random_transform(rng, scope, depth + 1, dotted) for _ in range(rng.randint(0, 3))]


# --------------------------------------------------------------------------------------------
# Template generation
# --------------------------------------------------------------------------------------------


@dataclass
class TemplateMeta:
    palette: list[str]
    fields: list[FieldMeta]
    anchor_samples: list[str]
    tool_universe: list[dict]


def gen_field(
    rng: random.Random, name: str, palette: list[str], implicit: bool, zero_p: float
) -> tuple[dict, FieldMeta]:
    roles = [
        "text", "text", "think", "tool_json", "tool_named", "tool_each", "tool_dotted", "scalar", "random",
        "kv", "xml",
    ]
    role = "text" if implicit and chance(rng, 0.85) else pick(rng, roles)
    if implicit and role in ("tool_named",):
        role = "tool_json"
    spec: dict = {}
    groups_ok = role in ("tool_named", "random") or chance(rng, 0.15)
    open_d = None
    if not implicit:
        open_d = make_delim(rng, "open", palette, groups_ok, zero_p)
        if role == "tool_named" and not open_d.groups:
            g = pick(rng, ["name", "name", "id"])
            A, B = pick(rng, palette), pick(rng, palette)
            open_d = Delim(
                "open_pattern",
                f"{esc(A)}\\s*(?P<{g}>\\w+)\\s*{esc(B)}",
                [f"{A}{t}{B}" for t in TOOL_NAMES[:4]] + [f"{A} {pick(rng, TOOL_NAMES)}\n{B}"],
                [g],
            )
        spec[open_d.key] = open_d.value
    close_d = None
    if chance(rng, 0.82):
        close_d = make_delim(rng, "close", palette, groups_ok and chance(rng, 0.3), zero_p)
        spec[close_d.key] = close_d.value
    groups = (open_d.groups if open_d else []) + (close_d.groups if close_d else [])

    content = "text"
    transform: Any = None
    transform_each = False
    if role in ("text", "think"):
        content = "text"
    elif role == "scalar":
        content = pick(rng, ["int", "float", "bool"])
    elif role == "tool_json":
        content = "json"
        transform = dict(TOOL_TRANSFORM) if chance(rng, 0.85) else None
        if transform is not None and chance(rng, 0.2):
            # aliasing: the same parsed object reachable twice (in-place argument coercion shows in both)
            transform = pick(
                rng,
                [
                    {"type": "function", "function": "{content}", "raw": "{content}"},
                    {
                        "type": "function",
                        "function": {"name": "{content.name}", "arguments": "{content.arguments}"},
                        "args": "{content.arguments}",
                    },
                    ["{content}", {"function": "{content}"}],
                    {"function": "{content}", "again": {"function": "{content}"}},
                ],
            )
    elif role == "tool_named":
        content = pick(rng, ["json", "xml-inline", "kv-lines", "json"])
        g = groups[0] if groups else "name"
        transform = {"type": "function", "function": {"name": "{" + g + "}", "arguments": "{content}"}}
        if chance(rng, 0.2):
            transform = {
                "function": {"arguments": "{content}", "name": "{" + g + "}"},
                "type": "function",
                "id": pick(rng, ["c1", None, 7]),
            }
    elif role == "tool_each":
        content = "json"
        transform_each = True
        transform = {"type": "function", "function": {"name": "{tool_name}", "arguments": "{parameters}"}}
    elif role == "tool_dotted":
        content = "json"
        transform = {
            "type": "function",
            "function": {"name": "{content.name}", "arguments": "{content.args}"},
        }
    elif role == "kv":
        content = "kv-lines"
    elif role == "xml":
        content = "xml-inline"
    else:  # random
        content = pick(rng, ["text", "int", "float", "bool", "json", "xml-inline", "kv-lines"])
        if groups or chance(rng, 0.4):
            transform = gen_random_transform(
                rng, ["content"] + groups, dotted=content in ("json", "xml-inline", "kv-lines")
            )
        if content == "json" and chance(rng, 0.15):
            transform_each = True
            transform = gen_random_transform(rng, ["tool_name", "parameters", "name"] + groups)

    if groups and transform is None:
        transform = {
            "type": "function",
            "function": {"name": "{" + groups[0] + "}", "arguments": "{content}"},
        }

    if content != "text" or chance(rng, 0.4):
        spec["content"] = content
    args = gen_content_args(rng, content)
    if content == "xml-inline" and "tag_pattern" not in args:
        args["tag_pattern"] = TAG_PATTERNS[0][0]
    if args or chance(rng, 0.05):
        spec["content_args"] = args
    if transform is not None:
        spec["transform"] = transform
    if transform_each or chance(rng, 0.05):
        spec["transform_each"] = transform_each

    if role.startswith("tool") and chance(rng, 0.8):
        spec["repeats"] = True
    elif chance(rng, 0.25):
        spec["repeats"] = chance(rng, 0.6)
    if spec.get("repeats") and chance(rng, 0.35 if content == "text" and transform is None else 0.08):
        spec["join"] = pick(rng, ["", "\n", " | ", "🙂"])
    if chance(rng, 0.08):
        spec["optional"] = chance(rng, 0.4)

    # shuffle key order (the reference is order-insensitive w.r.t. field keys)
    items = list(spec.items())
    rng.shuffle(items)
    spec = dict(items)
    meta = FieldMeta(name, open_d, close_d, content, args, role, transform, transform_each)
    return spec, meta


def gen_tool_universe(rng: random.Random) -> list[dict]:
    """Tool descriptions: name plus (arg, type-spec index) pairs into TYPE_CATALOG."""
    tools = []
    for name in rng.sample(TOOL_NAMES[:6], rng.randint(1, 4)):
        args = []
        for a in rng.sample(ARG_NAMES, rng.randint(0, 4)):
            args.append([a, rng.randrange(len(TYPE_CATALOG))])
        tools.append({"name": name, "args": args})
    return tools


def gen_valid_template(rng: random.Random) -> tuple[dict, TemplateMeta]:
    palette = make_palette(rng)
    nfields = pick(rng, [1, 2, 2, 3, 3, 4])
    names: list[str] = []
    while len(names) < nfields:
        n = pick(rng, WEIRD_FIELD_NAMES) if chance(rng, 0.04) else pick(rng, NORMAL_FIELD_NAMES)
        if n not in names:
            names.append(n)
    implicit_idx = rng.randrange(nfields) if chance(rng, 0.65) else None
    zero_p = 0.12
    fields: dict = {}
    metas: list[FieldMeta] = []
    for i, n in enumerate(names):
        spec, meta = gen_field(rng, n, palette, i == implicit_idx, zero_p)
        fields[n] = spec
        metas.append(meta)
    explicit_metas = [m for m in metas if m.open is not None]
    if len(explicit_metas) >= 2 and chance(rng, 0.1):
        # two fields with the very same open delimiter: the reference breaks the tie by field name
        src, dst = rng.sample(explicit_metas, 2)
        if not src.open.groups and not dst.open.groups:
            fields[dst.name].pop("open", None)
            fields[dst.name].pop("open_pattern", None)
            fields[dst.name][src.open.key] = copy.deepcopy(src.open.value)
            dst.open = src.open
    for m in metas:
        spec = fields[m.name]
        if (
            "transform" not in spec
            and not (m.open and m.open.groups)
            and not (m.close and m.close.groups)
            and not spec.get("transform_each")
            and chance(rng, 0.04)
        ):
            spec["transform"] = None  # explicit null: no transform

    tpl: dict = {}
    if chance(rng, 0.1):
        tpl["version"] = 1
    # defaults (sometimes colliding with field names, with compatible values)
    if chance(rng, 0.6):
        d: dict = {}
        if chance(rng, 0.8):
            d["role"] = "assistant"
        if chance(rng, 0.25):
            fm = pick(rng, metas)
            fs = fields[fm.name]
            if fs.get("join") is not None:
                d[fm.name] = pick(rng, ["", "pre"])
            elif fs.get("repeats"):
                d[fm.name] = pick(rng, [[], ["old"]])
            else:
                d[fm.name] = pick(rng, ["", None, 0, "dflt", [], {}, {"k": [1, 2.5, None]}])
        if chance(rng, 0.1):
            d["extra"] = {"nested": [True, 1, 1.0, "s"]}
        tpl["defaults"] = d
    # start anchor
    r = rng.random()
    if r < 0.55:
        lit = pick(rng, ANCHOR_LITERALS + palette[:2])
        tpl["start_anchor"] = lit
        anchor_samples = [lit]
    elif r < 0.7:
        lits = rng.sample(ANCHOR_LITERALS, rng.randint(1, 3))
        tpl["start_anchor"] = lits
        anchor_samples = lits
    else:
        pat, samples = ANCHOR_PATTERNS[rng.randrange(len(ANCHOR_PATTERNS))]
        tpl["start_anchor_pattern"] = pat
        anchor_samples = samples
    tpl["fields"] = fields
    items = list(tpl.items())
    rng.shuffle(items)
    tpl = dict(items)
    return tpl, TemplateMeta(palette, metas, anchor_samples, gen_tool_universe(rng))


# --------------------------------------------------------------------------------------------
# Invalid templates
# --------------------------------------------------------------------------------------------

INVALID_KINDS = [
    "unknown_top_key", "unknown_field_key", "version2", "version_none", "open_and_pattern",
    "close_and_pattern", "empty_list", "empty_literal", "empty_literal_in_list", "nonstr_in_list",
    "open_not_str", "bad_regex", "bad_close_regex", "unknown_parser", "join_no_repeats", "join_not_str",
    "transform_each_not_bool", "transform_each_no_transform", "mixed_placeholder",
    "named_groups_no_transform", "two_implicit", "missing_anchor", "both_anchors", "fields_empty",
    "fields_missing", "fields_list", "defaults_not_dict", "template_list", "field_not_dict",
    "anchor_empty", "anchor_empty_list", "anchor_bad_regex", "anchor_int",
]


def make_invalid(rng: random.Random, tpl: dict, kind: str) -> Any:
    tpl = json.loads(json.dumps(tpl))
    fields = tpl["fields"]
    fname = pick(rng, list(fields))
    f = fields[fname]
    explicit = [n for n, s in fields.items() if "open" in s or "open_pattern" in s]

    def set_open(key: str, val: Any) -> None:
        f.pop("open", None)
        f.pop("open_pattern", None)
        f[key] = val

    if kind == "unknown_top_key":
        tpl[pick(rng, ["extra", "field", "Fields", "start_anchors"])] = 1
    elif kind == "unknown_field_key":
        f[pick(rng, ["opne", "closing", "parser", "args", "default"])] = "x"
    elif kind == "version2":
        tpl["version"] = pick(rng, [2, 0, "1", 1.5])
    elif kind == "version_none":
        tpl["version"] = None
    elif kind == "open_and_pattern":
        f["open"] = "<o>"
        f["open_pattern"] = "<o>"
    elif kind == "close_and_pattern":
        f["close"] = "<c>"
        f["close_pattern"] = "<c>"
    elif kind == "empty_list":
        if chance(rng, 0.5):
            set_open("open", [])
        else:
            f.pop("close_pattern", None)
            f["close"] = []
    elif kind == "empty_literal":
        if chance(rng, 0.5):
            set_open("open", "")
        else:
            f.pop("close_pattern", None)
            f["close"] = ""
    elif kind == "empty_literal_in_list":
        set_open("open", ["<a>", ""])
    elif kind == "nonstr_in_list":
        set_open("open", ["<a>", pick(rng, [3, None, ["<b>"], True])])
    elif kind == "open_not_str":
        set_open("open", pick(rng, [5, {"a": 1}, 1.5, True]))
    elif kind == "bad_regex":
        set_open("open_pattern", pick(rng, ["(", "[a-", "*a", "(?P<1>x)", "a)", "(?P<n>a)(?P<n", "\\"]))
    elif kind == "bad_close_regex":
        f.pop("close", None)
        f["close_pattern"] = pick(rng, ["(", "[", "+", "(?<"])
    elif kind == "unknown_parser":
        f["content"] = pick(rng, ["yaml", "JSON", "Text", "xml", "", "integer"])
        f.pop("content_args", None)
    elif kind == "join_no_repeats":
        f.pop("repeats", None)
        if chance(rng, 0.5):
            f["repeats"] = False
        f["join"] = ""
    elif kind == "join_not_str":
        f["repeats"] = True
        f["join"] = pick(rng, [1, ["a"], True, {"s": 1}])
    elif kind == "transform_each_not_bool":
        f["transform"] = {"x": "{content}"}
        f["transform_each"] = pick(rng, ["yes", 1, 0, None, "true"])
    elif kind == "transform_each_no_transform":
        f.pop("transform", None)
        f["transform_each"] = True
    elif kind == "mixed_placeholder":
        bad = pick(
            rng, ["a {x} b", "{content}x", "{{content}}", " {content}", "{content} {name}", "pre{a.b}"]
        )
        f["transform"] = pick(rng, [bad, {"k": bad}, ["{content}", bad], {"a": {"b": [1, bad]}}])
        f.pop("transform_each", None)
    elif kind == "named_groups_no_transform":
        f.pop("transform", None)
        f.pop("transform_each", None)
        if chance(rng, 0.5) or not explicit:
            f.pop("close", None)
            f["close_pattern"] = "</(?P<tag>\\w+)>"
        else:
            set_open("open_pattern", "<(?P<name>\\w+)>")
    elif kind == "two_implicit":
        for n in rng.sample(list(fields), min(2, len(fields))):
            fields[n].pop("open", None)
            fields[n].pop("open_pattern", None)
        if len(fields) < 2:
            fields["zz_other"] = {"close": "</z>"}
    elif kind == "missing_anchor":
        tpl.pop("start_anchor", None)
        tpl.pop("start_anchor_pattern", None)
    elif kind == "both_anchors":
        tpl["start_anchor"] = "<s>"
        tpl["start_anchor_pattern"] = "<s>"
    elif kind == "fields_empty":
        tpl["fields"] = {}
    elif kind == "fields_missing":
        del tpl["fields"]
    elif kind == "fields_list":
        tpl["fields"] = [dict(fields)]
    elif kind == "defaults_not_dict":
        tpl["defaults"] = pick(rng, [[], "role", 1, [["role", "assistant"]]])
    elif kind == "template_list":
        return [tpl]
    elif kind == "field_not_dict":
        fields[fname] = pick(rng, ["text", ["open"], 1, None])
    elif kind == "anchor_empty":
        tpl.pop("start_anchor_pattern", None)
        tpl["start_anchor"] = ""
    elif kind == "anchor_empty_list":
        tpl.pop("start_anchor_pattern", None)
        tpl["start_anchor"] = []
    elif kind == "anchor_bad_regex":
        tpl.pop("start_anchor", None)
        tpl["start_anchor_pattern"] = pick(rng, ["(", "[x", "?"])
    elif kind == "anchor_int":
        tpl.pop("start_anchor_pattern", None)
        tpl["start_anchor"] = pick(rng, [1, None, {"a": "b"}])
    else:  # pragma: no cover
        raise AssertionError(kind)
    return tpl


# --------------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------------

# (json schema for a property, python type hint source or None)
TYPE_CATALOG: list[tuple[Any, str | None]] = [
    ({"type": "integer"}, "int"),
    ({"type": "number"}, "float"),
    ({"type": "boolean"}, "bool"),
    ({"type": "string"}, "str"),
    ({"type": "object"}, "dict"),
    ({"type": "array"}, "list"),
    ({"type": "array", "items": {"type": "integer"}}, "list[int]"),
    ({"type": "null"}, None),
    ({"type": ["integer", "string"]}, "Union[int, str]"),
    ({"type": ["string", "integer"]}, "Union[str, int]"),
    ({"type": "integer", "nullable": True}, "int | None"),
    ({"type": "number", "nullable": True}, "Optional[float]"),
    ({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, None),
    ({"oneOf": [{"type": "null"}, {"type": "number"}]}, None),
    ({"type": ["boolean", "null"]}, "bool | None"),
    ({}, "Any"),
    ({"type": "foo"}, None),
    ({"type": 5}, None),
    ("notadict", None),
    ({"anyOf": [{"type": "array"}, {"type": "object"}]}, "Union[list, dict]"),
    ({"type": ["number", "boolean"]}, None),
    ({"type": ["null", "array"]}, None),
    ({"type": "integer", "nullable": False}, None),
    ({"anyOf": [{"anyOf": [{"type": "boolean"}]}, {"type": "integer"}]}, None),
    ({"type": "boolean"}, "Optional[bool]"),  # hint differs from json spec here: nullable bool
    ({"type": "string", "enum": ["x", "y"]}, 'Literal["x", "y"]'),
    ({"type": "integer", "enum": [1, 2]}, "Literal[1, 2]"),
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}, "tuple[int, str]"),
    ({"type": "array", "items": {"type": "string"}, "nullable": True}, "list[str] | None"),
    ({"type": "object", "additionalProperties": {}}, "dict[str, Any]"),
    ({"type": ["integer", "string"], "nullable": True}, "Optional[Union[int, str]]"),
    ({"type": ["integer", "number"]}, "float | int"),
    ({"type": ["integer", "number"], "nullable": True}, "int | float | None"),
    ({"type": ["number", "integer"]}, None),
    ({"type": "null"}, "None"),
    ({"type": ["boolean", "integer"]}, "Union[bool, int]"),
    ({"type": ["string", "number"]}, "str | float"),
]


def gen_tools(rng: random.Random, universe: list[dict]) -> list[dict]:
    """Pick a tool list for one input. Returns serialisable tool descriptors."""
    out: list[dict] = []
    for tool in universe:
        if not chance(rng, 0.8):
            continue
        form = pick(rng, ["openai", "openai", "bare", "pyfunc", "pyfunc", "noparams", "noprops"])
        if (
            form == "pyfunc"
            and all(TYPE_CATALOG[ti][1] is not None for _, ti in tool["args"])
            and tool["name"].isidentifier()
        ):
            # (functions the reference cannot convert -- no docstring, unannotated or unsupported
            # hints -- are a documented difference: respc only reads the hints; see docs/parity.md)
            src = pyfunc_source(tool, style=rng.randrange(3))
            out.append({"kind": "pyfunc", "source": src, "name": tool["name"]})
            continue
        if form == "pyfunc" and chance(rng, 0.3) and tool["name"].isidentifier():
            # method form with hinted subset
            hinted = {
                "name": tool["name"],
                "args": [a for a in tool["args"] if TYPE_CATALOG[a[1]][1] is not None],
            }
            out.append({"kind": "method", "source": pyfunc_source(hinted, method=True), "name": tool["name"]})
            continue
        props = {a: TYPE_CATALOG[ti][0] for a, ti in tool["args"]}
        fn: dict = {"name": tool["name"], "description": "d"}
        if form == "noparams":
            pass
        elif form == "noprops":
            fn["parameters"] = (
                {"type": "object"} if chance(rng, 0.5) else {"type": "object", "properties": []}
            )
        else:
            fn["parameters"] = {"type": "object", "properties": props}
            if chance(rng, 0.3):
                fn["parameters"]["required"] = list(props)
        if form == "bare":
            out.append({"kind": "json", "value": fn})
        else:
            out.append({"kind": "json", "value": {"type": "function", "function": fn}})
    if universe and chance(rng, 0.05):
        # same name twice: the later schema wins in the reference
        t = pick(rng, universe)
        out.append(
            {
                "kind": "json",
                "value": {
                    "name": t["name"],
                    "parameters": {
                        "type": "object",
                        "properties": {a: {"type": "string"} for a, _ in t["args"]},
                    },
                },
            }
        )
    if chance(rng, 0.05):
        out.append(
            {
                "kind": "json",
                "value": pick(
                    rng,
                    [
                        {"type": "function"},
                        {"name": 3},
                        {"function": {"name": "f", "parameters": 5}},
                        {"function": "x"},
                    ],
                ),
            }
        )
    if chance(rng, 0.03):
        out.append({"kind": "json", "value": "not-a-dict"})
    if chance(rng, 0.02):
        out.append({"kind": pick(rng, ["builtin", "callable_obj"]), "source": "", "name": "len"})
    rng.shuffle(out)
    return out


def pyfunc_source(tool: dict, method: bool = False, style: int = 0, bad: str | None = None) -> str:
    params = []
    doc_args = []
    for i, (a, ti) in enumerate(tool["args"]):
        hint = TYPE_CATALOG[ti][1]
        if bad == "nohint" and i == 0:
            params.append(a)
        elif bad == "badhint" and i == 0:
            params.append(f"{a}: set[int]")
        else:
            default = "" if i == 0 else " = None"
            params.append(f"{a}: {hint}{default}")
        if bad == "missing_arg" and i == len(tool["args"]) - 1:
            continue
        if style == 1:
            doc_args.append(f"        {a}: the {a} argument,")
            doc_args.append("            continued on a second line")
        else:
            doc_args.append(f"        {a}: the {a} argument")
    sig = ", ".join((["self"] if method else []) + params)
    body = [f"def {tool['name']}({sig}):"]
    if bad != "nodoc":
        body += ['    """Does something.', ""]
        if doc_args:
            body.append("    Args:")
            body.extend(doc_args)
        if style == 2:
            body += ["", "    Returns:", "        Nothing at all."]
        body.append('    """')
    body.append("    return None")
    if method:
        body = ["class _Holder:"] + ["    " + line for line in body]
    return "\n".join(body) + "\n"


_PYFUNC_CACHE: dict[tuple[str, str], Any] = {}


class _CallableTool:
    """A callable object that is neither a function nor a method (the reference skips it)."""

    def __call__(self, a: int) -> None:
        """Does something.

        Args:
            a: the a argument
        """


def materialize_tools(specs: list[dict] | None, tools_as: str = "list") -> list | tuple | None:
    out = _materialize_tools(specs)
    return tuple(out) if out is not None and tools_as == "tuple" else out


def _materialize_tools(specs: list[dict] | None) -> list | None:
    """Turn serialisable tool descriptors into the objects passed to the parsers (fresh each time)."""
    if specs is None:
        return None
    from typing import Any as _Any, Literal, Optional, Union

    out: list = []
    for s in specs:
        if s["kind"] == "json":
            out.append(json.loads(json.dumps(s["value"])))
        elif s["kind"] == "builtin":
            out.append(len)  # not a python function: the reference ignores it
        elif s["kind"] == "callable_obj":
            out.append(_CallableTool())
        else:
            key = (s["kind"], s["source"])
            if key not in _PYFUNC_CACHE:
                ns: dict = {}
                exec(s["source"], {"Union": Union, "Optional": Optional, "Any": _Any, "Literal": Literal}, ns)
                if s["kind"] == "pyfunc":
                    _PYFUNC_CACHE[key] = ns[s["name"]]
                else:
                    _PYFUNC_CACHE[key] = getattr(ns["_Holder"](), s["name"])
            out.append(_PYFUNC_CACHE[key])
    return out


# --------------------------------------------------------------------------------------------
# Bodies
# --------------------------------------------------------------------------------------------


def json_scalar(rng: random.Random) -> Any:
    return pick(
        rng,
        [
            0, 1, -7, 12345678901234567890, 1.5, -0.0, 2.0, 1e300, "s", "", "é🙂", 'a"b', "line\nbreak",
            True, False, None, "12", "3.5", "true", "null", "[1]",
            float("nan"),
            float("inf"),
        ],
    )


def json_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth >= 3 or r < 0.5:
        return json_scalar(rng)
    if r < 0.75:
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {ident_like(rng): json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def arg_value(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.6:
        return pick(rng, ARG_RAW_VALUES)
    if r < 0.75:
        return [pick(rng, ARG_RAW_VALUES) for _ in range(rng.randint(0, 3))]
    return json_value(rng, 1)


def tool_args(rng: random.Random, meta: TemplateMeta, tool_name: str) -> dict:
    names = ARG_NAMES
    for t in meta.tool_universe:
        if t["name"] == tool_name and t["args"]:
            names = [a for a, _ in t["args"]] + ([pick(rng, ARG_NAMES)] if chance(rng, 0.2) else [])
    out = {}
    for a in rng.sample(names, rng.randint(0, min(4, len(names)))):
        out[a] = arg_value(rng)
    return out


def pick_tool_name(rng: random.Random, meta: TemplateMeta) -> str:
    if meta.tool_universe and chance(rng, 0.8):
        return pick(rng, meta.tool_universe)["name"]
    return pick(rng, TOOL_NAMES)


class JsonWriter:
    """Tiny JSON-ish serializer with the dialect knobs of the json content parser."""

    def __init__(self, rng: random.Random, unquoted: bool, delims: list[list[str]] | None):
        self.rng = rng
        self.unquoted = unquoted
        self.delims = delims
        self.sp = pick(rng, ["", " ", "\n  "])
        # the reference's unquoted-keys rewrite only fires right after "{" or ","
        self.comma = "," if unquoted and chance(rng, 0.85) else "," + self.sp
        self.ascii = chance(rng, 0.3)

    def s(self, v: str, key: bool = False) -> str:
        if key and self.unquoted and re.fullmatch(r"\w+", v) and chance(self.rng, 0.85):
            return v
        if not key and self.delims and chance(self.rng, 0.6):
            o, c = pick(self.rng, self.delims)
            if c not in v:
                return o + v + c
        return json.dumps(v, ensure_ascii=self.ascii)

    def w(self, v: Any) -> str:
        if isinstance(v, dict):
            inner = self.comma.join(self.s(str(k), True) + ":" + self.sp + self.w(x) for k, x in v.items())
            return "{" + inner + "}"
        if isinstance(v, list):
            return "[" + self.comma.join(self.w(x) for x in v) + "]"
        if isinstance(v, str):
            return self.s(v)
        return json.dumps(v)


def mangle(rng: random.Random, s: str, palette: list[str]) -> str:
    r = rng.random()
    if r < 0.35 and s:
        return s[: rng.randrange(len(s))]
    if r < 0.55:
        return s + pick(rng, ["}", "]", ",", " trailing", "\x01", "garbage"])
    if r < 0.7:
        return pick(rng, ["", "not json", "{'a': 1}", "{a: 1}", "[1,]", "NaN", "-Infinity", "01", "\x02"])
    return filler(rng, palette)


def gen_body(rng: random.Random, fm: FieldMeta, meta: TemplateMeta, clean: bool = False) -> str:
    """A body for ``fm``; in clean mode retry a few times to avoid bodies containing the field's close."""
    body = _gen_body(rng, fm, meta, clean)
    if clean and fm.close is not None and not fm.close.zero_width:
        for _ in range(4):
            if not _contains_close(fm, body):
                break
            body = _gen_body(rng, fm, meta, clean)
    return body


def _contains_close(fm: FieldMeta, body: str) -> bool:
    d = fm.close
    if d is None:
        return False
    if d.key == "close":
        lits = [d.value] if isinstance(d.value, str) else d.value
        return any(lit in body for lit in lits)
    try:
        return re.search(d.value, body, flags=re.DOTALL, partial=True) is not None and re.search(
            d.value, body, flags=re.DOTALL, partial=True
        ).start() < len(body)
    except re.error:
        return False


def _gen_body(rng: random.Random, fm: FieldMeta, meta: TemplateMeta, clean: bool) -> str:
    pal = [] if clean else meta.palette
    bad = not clean and chance(rng, 0.12)
    c = fm.content
    if c == "text":
        return filler(rng, pal, rng.randint(0, 8))
    if c in SCALAR_BODIES:
        if clean:
            return pick(rng, SCALAR_GOOD[c])
        return pick(rng, SCALAR_BODIES[c]) if not bad else filler(rng, pal)
    if c == "json":
        args = fm.content_args
        wr = JsonWriter(rng, args.get("unquoted_keys", False) or chance(rng, 0.05), args.get("string_delims"))
        role = fm.role
        tf = fm.transform
        if fm.transform_each or role == "tool_each":
            items = []
            for _ in range(rng.randint(0, 3)):
                if chance(rng, 0.85):
                    t = pick_tool_name(rng, meta)
                    items.append({"tool_name": t, "parameters": tool_args(rng, meta, t)})
                else:
                    items.append(json_value(rng, 1))
            val: Any = items if chance(rng, 0.9) else json_value(rng)
        elif role == "tool_dotted":
            t = pick_tool_name(rng, meta)
            val = {"name": t, "args": tool_args(rng, meta, t)}
            if chance(rng, 0.1):
                val = {"name": t, "arguments": {}}
        elif role in ("tool_json",) or (isinstance(tf, dict) and tf == TOOL_TRANSFORM):
            t = pick_tool_name(rng, meta)
            val = {"name": t, "arguments": tool_args(rng, meta, t)}
            if chance(rng, 0.1):
                val["arguments"] = json_value(rng, 2)
        elif role == "tool_named":
            val = tool_args(rng, meta, pick_tool_name(rng, meta))
        else:
            val = (
                json_value(rng) if chance(rng, 0.6) else {k: arg_value(rng) for k in rng.sample(ARG_NAMES, 2)}
            )
        s = wr.w(val)
        if chance(rng, 0.3):
            s = pick(rng, ["", " ", "\n"]) + s + pick(rng, ["", " ", "\n"])
        if bad:
            s = mangle(rng, s, pal)
        return s
    if c == "xml-inline":
        pat = fm.content_args.get("tag_pattern")
        render = None
        for p, r in TAG_PATTERNS + [OPTIONAL_VALUE_TAG]:
            if p == pat:
                render = r
        t = pick_tool_name(rng, meta)
        args = tool_args(rng, meta, t)
        parts = []
        for k, v in args.items():
            sv = v if isinstance(v, str) else json.dumps(v)
            parts.append(render(k, sv, pick(rng, ["", " ", "\n"])))
            if chance(rng, 0.15):
                parts.append(render(k, pick(rng, ARG_RAW_VALUES), ""))  # duplicate key
            if chance(rng, 0.15):
                parts.append(filler(rng, pal, 2))
        s = "".join(parts)
        if bad:
            s = mangle(rng, s, pal)
        return s
    if c == "kv-lines":
        ls = fm.content_args.get("line_sep", "\n")
        ks = fm.content_args.get("kv_sep", ":")
        t = pick_tool_name(rng, meta)
        args = tool_args(rng, meta, t)
        lines = []
        for k, v in args.items():
            sv = v if isinstance(v, str) else json.dumps(v)
            lines.append(pick(rng, ["", " "]) + k + ks + pick(rng, ["", " "]) + sv)
            if chance(rng, 0.15):
                lines.append(pick(rng, ["", "no separator here", "  "]))
        s = ls.join(lines)
        if chance(rng, 0.2):
            s += ls
        if bad:
            s = mangle(rng, s, pal)
        return s
    return filler(rng, pal)


# --------------------------------------------------------------------------------------------
# Output text and prefix
# --------------------------------------------------------------------------------------------


def sample_of(rng: random.Random, d: Delim | None) -> str:
    if d is None:
        return ""
    return pick(rng, d.samples)


def gen_segments(rng: random.Random, meta: TemplateMeta, nseg: int, clean: bool = False) -> str:
    out: list[str] = []
    explicit = [f for f in meta.fields if f.open is not None]
    implicit = [f for f in meta.fields if f.open is None]
    for _ in range(nseg):
        r = rng.random()
        if clean:
            r = r * 0.75
        if r < 0.5 and explicit:
            fm = pick(rng, explicit)
            out.append(sample_of(rng, fm.open))
            body = gen_body(rng, fm, meta, clean)
            if not clean and chance(rng, 0.07) and body:
                body = body[: rng.randrange(len(body) + 1)]
            out.append(body)
            if fm.close is None and (clean or chance(rng, 0.85)):
                break  # runs to the end of the text
            if fm.close is not None and (clean or chance(rng, 0.85)):
                cs = sample_of(rng, fm.close)
                if not clean and chance(rng, 0.1) and len(cs) > 1:
                    cs = cs[: rng.randrange(1, len(cs))]
                out.append(cs)
        elif r < 0.75:
            if implicit and (implicit[0].content != "text" or chance(rng, 0.7)):
                out.append(gen_body(rng, implicit[0], meta, clean))
                if implicit[0].close is not None and chance(rng, 0.3):
                    out.append(sample_of(rng, implicit[0].close))
            else:
                out.append(filler(rng, [] if clean else meta.palette))
        elif r < 0.87:
            tok = pick(rng, meta.palette)
            out.append(tok[: rng.randint(1, len(tok))])
        else:
            fm = pick(rng, meta.fields)
            d = pick(rng, [fm.open, fm.close])
            if d is not None:
                s = sample_of(rng, d)
                out.append(s[: rng.randint(0, len(s))])
    return "".join(out)


def gen_text(
    rng: random.Random, meta: TemplateMeta, clean: bool = False, pending: FieldMeta | None = None
) -> str:
    if pending is not None:
        # the prefix opened ``pending``'s region: continue its body, close it, then carry on
        head = gen_body(rng, pending, meta, clean)
        if pending.close is None:
            return head
        return head + sample_of(rng, pending.close) + gen_text(rng, meta, clean)
    r = rng.random()
    if r < 0.04:
        return ""
    if r < 0.1:
        return filler(rng, meta.palette, rng.randint(1, 4))
    s = gen_segments(rng, meta, rng.randint(20, 60) if chance(rng, 0.015) else rng.randint(1, 7), clean)
    if not clean and chance(rng, 0.12) and s:
        s = s[: rng.randrange(len(s) + 1)]
    if chance(rng, 0.08):
        s += pick(rng, meta.anchor_samples)  # anchor inside generation is not special
    return s


def gen_prefix(
    rng: random.Random, meta: TemplateMeta, clean: bool = False
) -> tuple[str | None, FieldMeta | None]:
    r = rng.random()
    if r < 0.01:
        return None, None  # reference requires a prefix: ValueError at construction
    if r < 0.33:
        return "", None
    pending = None
    parts: list[str] = []
    use_anchor = chance(rng, 0.8)
    if use_anchor:
        for _ in range(rng.randint(1, 3)):
            parts.append(filler(rng, meta.palette, rng.randint(0, 3)))
            if chance(rng, 0.4):
                parts.append(gen_segments(rng, meta, rng.randint(1, 2), clean))  # history turn
            a = pick(rng, meta.anchor_samples)
            if a and chance(rng, 0.15):
                a = a[: rng.randrange(len(a))] + a  # partial anchor run into a full one (overlaps)
            parts.append(a)
    r2 = rng.random()
    if r2 < 0.35:
        # prefill opens a region before generation starts
        explicit = [f for f in meta.fields if f.open is not None]
        if explicit:
            fm = pick(rng, explicit)
            parts.append(sample_of(rng, fm.open))
            if clean:
                pending = fm
            elif chance(rng, 0.4):
                parts.append(gen_body(rng, fm, meta, clean)[:5])
    elif r2 < 0.55:
        parts.append(gen_segments(rng, meta, rng.randint(1, 3), clean))
    elif r2 < 0.7 and not clean:
        tok = pick(rng, meta.palette)
        parts.append(tok[: rng.randint(1, len(tok))])  # prefix ends in a partial delimiter
    elif r2 < 0.8:
        parts.append(filler(rng, meta.palette, 2))
    return "".join(parts), pending


def gen_chunkings(rng: random.Random, text: str) -> list[list[str]]:
    ch: list[list[str]] = [[text], list(text) if text else []]
    chunks = []
    i = 0
    while i < len(text):
        n = rng.randint(1, 8)
        chunks.append(text[i : i + n])
        i += n
        if chance(rng, 0.05):
            chunks.append("")
    ch.append(chunks)
    return ch


# --------------------------------------------------------------------------------------------
# Groups
# --------------------------------------------------------------------------------------------


def group_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"respc-diff:{seed}:{index}")


def gen_group(seed: int, index: int, inputs_per_group: int = 8) -> Group:
    rng = group_rng(seed, index)
    tpl, meta = gen_valid_template(rng)
    if chance(rng, 0.08):
        kind = pick(rng, INVALID_KINDS)
        bad = make_invalid(rng, tpl, kind)
        # an invalid template gets one input (construction is what is compared), two chunkings
        text = gen_text(rng, meta)
        inp = Input(prefix=pick(rng, ["", "x"]), text=text, tools=None, chunkings=[[text]])
        return Group(seed, index, bad, kind, [inp])
    inputs = []
    for _ in range(inputs_per_group):
        clean = chance(rng, 0.5)
        prefix, pending = gen_prefix(rng, meta, clean)
        text = gen_text(rng, meta, clean, pending)
        tools = gen_tools(rng, meta.tool_universe) if chance(rng, 0.4) else None
        inp = Input(prefix, text, tools, gen_chunkings(rng, text), clean=clean)
        if tools is not None and chance(rng, 0.1):
            inp.tools_as = "tuple"
        elif tools is None and chance(rng, 0.03):
            inp.tools = []
        if chance(rng, 0.04):
            inp.batch = True
            inp.batch_texts = [text, gen_text(rng, meta), gen_text(rng, meta)]
        inputs.append(inp)
    return Group(seed, index, tpl, None, inputs)
