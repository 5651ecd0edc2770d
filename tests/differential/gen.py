"""Seeded random generator for the respc differential test suite.

Everything here is pure data generation: given ``(seed, group_index)`` it deterministically
produces one *group*: a response template (valid or deliberately invalid) plus a handful of
inputs (prefix, model output text, tools, chunkings) to run against it.  Each (input, chunking)
pair is one differential *case*; see ``harness.py`` for the execution/comparison side.

Reproducibility: every group draws from its own ``random.Random(f"respc-diff:{seed}:{group}")``,
so a single failing group can be regenerated without replaying the ones before it.

Goal: cover the whole language the reference (``transformers.utils.chat_parsing``, 5.24) accepts,
plus invalid templates that both sides must reject.  Valid templates are exactly the ones the
reference's ``load_response_template`` accepts -- including "loose" ones respc used to refuse:
``content_args`` keys the chosen parser never reads, non-boolean ``repeats``/``optional`` and
boolean-ish args (the reference uses truthiness), ``value_parser`` dicts with odd or ignored args,
``join: null``, ``version: true``, ``tag_pattern`` without a ``value`` group, ``string_delims``
given as two-character strings, ...  Some loose templates load fine but fail at parse time in the
reference: an unknown ``value_parser`` name (``KeyError``), an empty ``line_sep`` (``ValueError``)
and, rarely (``CRASH_ARGS``), args of the wrong type that make it raise ``TypeError``,
``AttributeError`` or ``regex.error``; respc must raise the same class at the same step.
Templates only ever hold JSON values; the reference's loader accepts every valid one and rejects
every invalid one with ``ValueError``.

The 5.24 additions each get a share of the default mix through per-group *focus* flags
(``FOCUS_P``; recorded in ``Group.features``): ``python-call-list`` fields (valid bodies and
every corner of its strict grammar, with and without ``transform_each`` over
``{name}``/``{arguments}``), ``close_pattern`` named groups reaching transforms (new names,
overriding an open capture, not participating, captured in a lookahead), end-leaning regex
delimiters (``$``, ``\\Z``, ``\\n?$``, ``(?=\\n|$)``, ``(?!.)``, trailing lookaheads) with texts
and an extra chunking that end right there or continue, ``json`` ``unquoted_keys`` bodies with
key-like text inside string values and whitespace around bare keys, ``xml-inline``
``merge_duplicates`` over list values, and the loose templates above.
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
    end: bool = False  # leans on the end of input ($, \Z, a trailing lookahead): texts may end right after it


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
    features: list[str] = field(default_factory=list)  # what the template exercises (see template_features)


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


def end_delim(rng: random.Random, kind: str, palette: list[str], zero_ok: bool = True) -> Delim:
    """A delimiter that leans on the end of the input: ``$`` (also just before a final newline),
    ``\\Z``, ``(?!.)``, or a lookahead that can only be decided by what comes next.  A complete match
    of such a pattern is final only if it survives the buffer growing by one character."""
    A = palette[0] if chance(rng, 0.4) else pick(rng, palette)
    B = pick(rng, palette)
    eA, eB = esc(A), esc(B)
    zero = [
        ("$", [""]),
        (r"\Z", [""]),
        (r"\n?$", ["", "\n"]),
        (r"(?=\n|$)", ["", "\n"]),
        (r"(?!.)", [""]),
        (r"\n*\Z", ["", "\n", "\n\n"]),
        (r"(?=\s*$)", ["", " ", "\n"]),
        (r"(?=\n\n|\Z)", ["\n\n", ""]),
    ]
    consumed = [
        (eA + "$", [A, A + "\n"]),
        (eA + r"\s*$", [A, A + " ", A + "\n"]),
        (eA + r"(?=\n|$)", [A, A + "\n"]),
        (eA + r"(?!.)", [A]),
        (eA + r"\n?\Z", [A, A + "\n"]),
        (eA + r"(?=\n\n|$)", [A, A + "\n\n", A + "\n"]),
        (eA + r"(?=\s*\Z)", [A, A + " \n"]),
        (eA + r"(?!\S)", [A, A + " ", A + "\n"]),
        (eA + f"(?={eB})", [A + B]),
        (eA + f"(?!{eB})", [A, A + "x"]),
        (eA + r"[^\n]*$", [A, A + "tail", A + "tail\n"]),
        ("(?m)" + eA + "$", [A + "\n", A]),
        (eA + r"(?:\n|$)", [A + "\n", A]),
        (eA + r"(?:\n|\Z)", [A + "\n", A]),
        (eA + r"\n?(?![\s\S])", [A, A + "\n"]),
        (eA + r"(?=\n|$)|" + eB, [A, A + "\n", B]),
        (r"\n" + eA + r"(?=\n|$)", ["\n" + A, "\n" + A + "\n"]),
        # lookaheads that reach far past the match (up to the end of the input)
        (eA + r"(?!\n\n)", [A, A + "\n"]),
        (eA + r"(?=[^\n]*$)", [A, A + "tail"]),
        (eA + r"(?=[^<]*\Z)", [A, A + "tail"]),
        (eA + f"(?![\\s\\S]*{eB})", [A]),
        (eA + r"(?=(?:[^\n]*\n)?[^\n]*\Z)", [A, A + "x\ny"]),
    ]
    if re.fullmatch(r".*\w", A):
        consumed.append((eA + r"\b", [A, A + " "]))
    if zero_ok and chance(rng, 0.35):
        pat, samples = pick(rng, zero)
        return Delim(kind, pat, samples, zero_width=True, end=True)
    pat, samples = pick(rng, consumed)
    return Delim(kind, pat, samples, end=True)


CLOSE_GROUP_NAMES = ["status", "tag", "id", "kind", "name", "call_id", "end", "ch"]


def close_group_delim(rng: random.Random, palette: list[str], open_groups: list[str]) -> tuple[Delim, str]:
    """A ``close_pattern`` whose named groups join the transform scope (close captures override open
    captures of the same name; groups that do not participate leave the open capture in place)."""
    A, B, C = pick(rng, palette), pick(rng, palette), pick(rng, palette)
    eA, eB, eC = esc(A), esc(B), esc(C)
    words = rng.sample(TOOL_NAMES, 3)
    variant = pick(
        rng,
        [
            "new", "new", "override", "override", "optional", "alt", "lookahead", "end", "content_name", "two",
            "zero",
        ],
    )
    if open_groups and chance(rng, 0.35):
        variant = "override"
    g = pick(rng, CLOSE_GROUP_NAMES)
    if variant == "override":
        g = open_groups[0] if open_groups else pick(rng, CAPTURE_NAMES)
        # the group may not participate: then the open capture of the same name stays in scope
        pat = f"{eA}(?:=(?P<{g}>\\w+))?{eB}"
        return Delim("close_pattern", pat, [A + B, f"{A}={words[0]}{B}", f"{A}={words[1]}{B}"], [g]), variant
    if variant == "optional":
        return Delim("close_pattern", f"(?P<{g}>[0-9]+)?{eA}", [A, "7" + A, "42" + A], [g]), variant
    if variant == "alt":
        return Delim("close_pattern", f"{eA}(?P<{g}>\\w+){eB}|{eC}", [f"{A}{words[0]}{B}", C], [g]), variant
    if variant == "lookahead":
        # captured inside a trailing lookahead: its value depends on what follows the buffer edge
        pat = f"{eA}(?=(?P<{g}>\\w+))"
        return Delim("close_pattern", pat, [A + words[0], A + words[1] + " "], [g], end=True), variant
    if variant == "end":
        pat = f"{eA}(?P<{g}>\\w+)?(?=\\n|$)"
        return Delim("close_pattern", pat, [A + words[0], A + words[1] + "\n", A], [g], end=True), variant
    if variant == "zero":
        # zero-width: closes right before A (which stays in the buffer), capturing it
        return Delim("close_pattern", f"(?=(?P<{g}>{eA}))", [A], [g], zero_width=True), variant
    if variant == "content_name":
        g = "content"  # shadowed by the parsed content (except under transform_each)
    if variant == "two":
        g2 = pick(rng, [n for n in CLOSE_GROUP_NAMES if n != g])
        pat = f"{eA}(?P<{g}>\\w+)(?:[:=](?P<{g2}>\\w+))?{eB}"
        samples = [f"{A}{words[0]}{B}", f"{A}{words[1]}:{words[2]}{B}", f"{A}{words[2]}={words[0]}{B}"]
        return Delim("close_pattern", pat, samples, [g, g2]), variant
    return Delim("close_pattern", f"{eA}(?P<{g}>\\w+){eB}", [f"{A}{w}{B}" for w in words], [g]), variant


def pycall_delims(rng: random.Random, palette: list[str]) -> tuple[Delim | None, Delim | None]:
    """Delimiters python-call-list fields meet in real templates (Llama 3.2/4 pythonic tool calls)."""
    form = pick(rng, ["python_tag", "tool_calls", "lookahead", "lookahead_close"])
    if form == "python_tag":
        start, end = "<|python_start|>", "<|python_end|>"
        return Delim("open", start, [start]), Delim("close", end, [end])
    if form == "tool_calls":
        return Delim("open", "[TOOL_CALLS]", ["[TOOL_CALLS]"]), None
    open_d = Delim("open_pattern", r"(?=\[\s*[A-Za-z_][\w.-]*\s*\()", [""], zero_width=True)
    if form == "lookahead":
        return open_d, None
    return open_d, Delim("close_pattern", r"(?<=\)\])", [""], zero_width=True, end=True)


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
    if chance(rng, 0.05):
        names.append("python-call-list")
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
    # python-call-list takes no args (whatever is given is ignored; see loosen())
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
    features: list[str] = field(default_factory=list)
    keyish_json: bool = False  # json bodies carry key-like text inside string values


PYCALL_EACH_TRANSFORMS: list[Any] = [
    {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
    {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
    {"function": {"arguments": "{arguments}", "name": "{name}"}, "type": "function"},
    {"name": "{name}", "args": "{arguments}"},
    {"type": "function", "function": {"name": "{name}", "arguments": {"city": "{arguments.city}"}}},
    ["{name}", "{arguments}"],
    "{arguments}",
    {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}, "raw": "{arguments}"},
]
PYCALL_TRANSFORMS: list[Any] = [
    {"calls": "{content}"},
    "{content}",
    {"type": "function", "function": "{content}"},
    {"first": "{content.name}"},  # a list cannot be indexed: ValueError at close
]


def gen_field(
    rng: random.Random,
    name: str,
    palette: list[str],
    implicit: bool,
    zero_p: float,
    force_role: str | None = None,
) -> tuple[dict, FieldMeta]:
    roles = [
        "text", "text", "think", "tool_json", "tool_named", "tool_each", "tool_dotted", "scalar", "random",
        "kv", "xml",
    ]
    if force_role is not None:
        role = force_role
    else:
        role = "text" if implicit and chance(rng, 0.85) else pick(rng, roles)
    if implicit and role in ("tool_named",):
        role = "tool_json"
    if role == "xml_lists" and not implicit and chance(rng, 0.5):
        role = "tool_named_lists"  # tool-call shaped: arguments from the merged dict
    spec: dict = {}
    groups_ok = role in ("tool_named", "tool_named_lists", "random") or chance(rng, 0.15)
    open_d = None
    native_close: Delim | None = None
    if not implicit:
        open_d = make_delim(rng, "open", palette, groups_ok, zero_p)
        if role == "pycall" and chance(rng, 0.3):
            open_d, native_close = pycall_delims(rng, palette)
        if role in ("tool_named", "tool_named_lists") and not open_d.groups:
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
    if native_close is not None or (open_d is not None and open_d.value == "[TOOL_CALLS]"):
        close_d = native_close
        if close_d is not None:
            spec[close_d.key] = close_d.value
    elif chance(rng, 0.82):
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
    elif role in ("tool_named", "tool_named_lists"):
        content = pick(rng, ["json", "xml-inline", "kv-lines", "json"])
        if role == "tool_named_lists":
            content = "xml-inline"
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
    elif role in ("xml", "xml_lists"):
        content = "xml-inline"
    elif role == "json_uq":
        content = "json"
        transform = dict(TOOL_TRANSFORM) if chance(rng, 0.5) else None
    elif role == "pycall":
        content = "python-call-list"
        r = rng.random()
        if r < 0.45:
            transform_each = True
            transform = copy.deepcopy(pick(rng, PYCALL_EACH_TRANSFORMS))
            if groups and chance(rng, 0.6) and isinstance(transform, dict):
                transform["id"] = "{" + groups[0] + "}"  # captures sit next to the item's keys
        elif r < 0.58:
            transform = copy.deepcopy(pick(rng, PYCALL_TRANSFORMS))
        elif r < 0.66:
            transform_each = chance(rng, 0.5)
            scope = ["name", "arguments"] + groups if transform_each else ["content"] + groups
            transform = gen_random_transform(rng, scope)
    else:  # random
        content = pick(
            rng, ["text", "int", "float", "bool", "json", "xml-inline", "kv-lines", "python-call-list"]
        )
        if groups or chance(rng, 0.4):
            transform = gen_random_transform(
                rng, ["content"] + groups, dotted=content in ("json", "xml-inline", "kv-lines")
            )
        if content == "json" and chance(rng, 0.15):
            transform_each = True
            transform = gen_random_transform(rng, ["tool_name", "parameters", "name"] + groups)

    if transform_each and transform is None:
        transform = {"item": None}  # (a random transform can be null; transform_each needs one)
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
    if role in ("xml_lists", "tool_named_lists"):
        # merge_duplicates over values that are lists themselves (value_parser json)
        args["tag_pattern"] = TAG_PATTERNS[rng.randrange(len(TAG_PATTERNS))][0]
        args["merge_duplicates"] = True if chance(rng, 0.85) else False
        vp: dict = {"name": "json"}
        if chance(rng, 0.4):
            vp["args"] = {"allow_non_json": True} if chance(rng, 0.7) else {}
        args["value_parser"] = vp
    if role == "json_uq":
        args["unquoted_keys"] = True
        if chance(rng, 0.2):
            args["allow_non_json"] = True
        if chance(rng, 0.15):
            args["string_delims"] = [list(p) for p in rng.sample(STRING_DELIM_PAIRS, 1)]
    if args or chance(rng, 0.05):
        spec["content_args"] = args
    if transform is not None:
        spec["transform"] = transform
    if transform_each or chance(rng, 0.05):
        spec["transform_each"] = transform_each

    if (role.startswith("tool") and chance(rng, 0.8)) or (role == "pycall" and chance(rng, 0.5)):
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
    focus = [k for k, p in FOCUS_P.items() if chance(rng, p)]
    forced: dict[int, str] = {}
    # (mostly) explicit fields: an implicit structured field collects every stray byte and rarely parses
    slots = [i for i in range(nfields) if i != implicit_idx or nfields == 1 or chance(rng, 0.15)]
    rng.shuffle(slots)
    for role in ("pycall", "xml_lists", "json_uq"):
        if role in focus and slots:
            forced[slots.pop()] = role
    fields: dict = {}
    metas: list[FieldMeta] = []
    for i, n in enumerate(names):
        spec, meta = gen_field(rng, n, palette, i == implicit_idx, zero_p, forced.get(i))
        fields[n] = spec
        metas.append(meta)
    if "close_groups" in focus:
        add_close_groups(rng, fields, metas, palette)
    if "end_leaning" in focus:
        add_end_leaning(rng, fields, metas, palette)
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
    meta = TemplateMeta(palette, metas, anchor_samples, gen_tool_universe(rng))
    meta.keyish_json = "json_uq" in focus or chance(rng, 0.05)
    if "loose" in focus:
        meta.features = ["loose"] + ["loose:" + k for k in loosen(rng, tpl, metas)]
    return tpl, meta


# --------------------------------------------------------------------------------------------
# 5.24 focus: close_pattern named groups, end-leaning delimiters, loose templates
# --------------------------------------------------------------------------------------------

#: per-group probability of each focus (drawn independently, in this order)
FOCUS_P: dict[str, float] = {
    "pycall": 0.2,
    "close_groups": 0.15,
    "end_leaning": 0.15,
    "json_uq": 0.12,
    "xml_lists": 0.10,
    "loose": 0.18,
}


def add_close_groups(rng: random.Random, fields: dict, metas: list[FieldMeta], palette: list[str]) -> None:
    """Give one field a close_pattern with named groups, and a transform that reads them."""
    cands = [m for m in metas if not (m.close and m.close.groups)]
    if not cands:
        return
    explicit = [m for m in cands if m.open is not None]
    fm = pick(rng, explicit) if explicit and chance(rng, 0.85) else pick(rng, cands)
    spec = fields[fm.name]
    if fm.open is not None and not fm.open.groups and chance(rng, 0.4):
        # an open capture for the close pattern to override (or to leave alone when not participating)
        g = pick(rng, CAPTURE_NAMES)
        A, B = pick(rng, palette), pick(rng, palette)
        fm.open = Delim(
            "open_pattern",
            f"{esc(A)}(?P<{g}>\\w+){esc(B)}",
            [f"{A}{t}{B}" for t in rng.sample(TOOL_NAMES, 3)],
            [g],
        )
        spec.pop("open", None)
        spec["open_pattern"] = fm.open.value
    open_groups = list(fm.open.groups) if fm.open else []
    d, variant = close_group_delim(rng, palette, open_groups)
    spec.pop("close", None)
    spec["close_pattern"] = d.value
    fm.close = d
    cg = d.groups
    scope = open_groups + [g for g in cg if g not in open_groups]
    if fm.transform_each:
        tf = copy.deepcopy(fm.transform) if isinstance(fm.transform, dict) else {"value": fm.transform}
        for g in cg:
            tf[pick(rng, ["id", g, "from_close"])] = "{" + g + "}"
        if fm.content == "python-call-list" and chance(rng, 0.3):
            tf["who"] = "{name}"  # a close group "name" is shadowed by the item's own "name"
    else:
        r = rng.random()
        g = cg[0]
        if r < 0.45:
            tf = {"type": "function", "function": {"name": "{" + g + "}", "arguments": "{content}"}}
            if len(scope) > 1:
                tf["extra"] = "{" + pick(rng, scope) + "}"
        elif r < 0.75:
            tf = {"value": "{content}"}
            for x in scope:
                tf[x if x != "content" else "shadowed"] = "{" + x + "}"
        else:
            tf = gen_random_transform(rng, ["content"] + scope, dotted=False)
            if not (isinstance(tf, dict) and tf):
                tf = {"v": tf, "g": "{" + g + "}"}
    spec["transform"] = tf
    fm.transform = tf


def add_end_leaning(rng: random.Random, fields: dict, metas: list[FieldMeta], palette: list[str]) -> None:
    """Swap one or two delimiters for patterns that lean on the end of the input."""
    for fm in rng.sample(metas, min(len(metas), rng.choice([1, 1, 2]))):
        spec = fields[fm.name]
        if fm.open is not None and not fm.open.groups and chance(rng, 0.3):
            d = end_delim(rng, "open_pattern", palette, zero_ok=chance(rng, 0.2))
            spec.pop("open", None)
            spec.pop("open_pattern", None)
            spec["open_pattern"] = d.value
            fm.open = d
        elif not (fm.close and fm.close.groups):
            d = end_delim(rng, "close_pattern", palette)
            spec.pop("close", None)
            spec.pop("close_pattern", None)
            spec["close_pattern"] = d.value
            fm.close = d


LOOSE_TRUTHY: list[Any] = [1, 2, "yes", "false", "0", [0], {"a": 1}, 0.5, -1, "no"]
LOOSE_FALSY: list[Any] = [0, "", None, [], {}, 0.0]
#: args each parser reads; anything else in content_args is ignored by the reference
PARSER_READS: dict[str, tuple[str, ...]] = {
    "text": ("strip",),
    "int": ("strip",),
    "float": ("strip",),
    "bool": ("strip",),
    "json": ("strip", "unquoted_keys", "string_delims", "allow_non_json"),
    "xml-inline": ("tag_pattern", "value_parser", "merge_duplicates"),
    "kv-lines": ("line_sep", "kv_sep", "value_parser", "strip"),
    "python-call-list": (),
}
IGNORED_ARG_VALUES: dict[str, list[Any]] = {
    "strip": [True, False, "no", 0],
    "unquoted_keys": [True, 1, "yes"],
    "string_delims": [[["<<", ">>"]], 5, "x", None],
    "allow_non_json": [True, False, "x"],
    "tag_pattern": ["(", "<(?P<key>\\w+)>(?P<value>.*?)</(?P=key)>", 3],
    "value_parser": [
        {"name": "json"}, {"name": "nope"}, "json", None, {"name": "int", "args": {"allow_non_json": True}}
    ],
    "merge_duplicates": [True, "x", 0],
    "line_sep": ["", ";", 1],
    "kv_sep": ["", "=", None],
    "bogus": [1, None, "", [1, 2], {"k": "v"}],
}
LOOSE_VALUE_PARSERS: list[Any] = [
    {"name": "int", "args": {"allow_non_json": True}},
    {"name": "float", "args": {"unquoted_keys": 1, "strip": "no"}},
    {"name": "text", "args": {"tag_pattern": "(", "strip": 0}},
    {"name": "bool", "args": {"value_parser": {"name": "json"}}},
    {"name": "json", "args": {"allow_non_json": 1, "unquoted_keys": "yes"}},
    {},
    {"args": {"strip": False}},
    {"name": "text"},
    {"name": "json", "extra": 1},
    None,
    {"name": "python-call-list", "args": None},
    {"name": "python-call-list", "args": "ignored"},
    {
        "name": "kv-lines",
        "args": {
            "line_sep": ",",
            "kv_sep": "=",
            "value_parser": {"name": "int", "args": {"allow_non_json": True}},
        },
    },
]
#: value parsers the reference loads but that fail when a value is parsed
FAILING_VALUE_PARSERS: list[Any] = [{"name": "nope"}, {"name": "xml-inline"}, {"name": "YAML", "args": {}}]
#: xml-inline tag patterns without a ``value`` group (the value is then "")
KEY_ONLY_TAGS = [
    (r"<(?P<key>\w+)/>", lambda k, v, ws: f"<{k}/>{ws}"),
    (r"@(?P<key>\w+)", lambda k, v, ws: f"@{k} "),
]
LOOSE_KINDS = [
    "extra_args", "extra_args", "truthy_args", "truthy_args", "repeats", "optional", "value_parser",
    "value_parser", "value_parser_fails", "tag_no_value", "tag_missing", "string_delims", "empty_sep",
    "join_null", "version", "pycall_args", "transform_literal", "crash_args",
]
#: loaded by the reference, but parsing a non-empty body raises TypeError / AttributeError / regex.error
#: (or a ValueError from an odd spot); respc must raise the same class at the same step
CRASH_ARGS: list[tuple[str, Any]] = [
    ("content_args", None), ("content_args", "x"), ("content_args", [1]), ("content_args", 5),
    ("string_delims", None), ("string_delims", 5), ("string_delims", [[1, 2]]), ("string_delims", [["a"]]),
    ("line_sep", 5), ("kv_sep", 5), ("kv_sep", None), ("value_parser", "json"), ("value_parser", 5),
    ("tag_pattern", 5), ("tag_pattern", "("), ("tag_pattern", "(?P<key>"), ("tag_pattern", "[a-"),
    # the value group may not participate: None reaches the value parser
    ("tag_pattern+vp", OPTIONAL_VALUE_TAG[0]),
    # the key group may not participate: ValueError "must have a named group 'key'"
    ("tag_pattern", r"(?:(?P<key>\w+)=)?(?P<value>[^;]*);"),
]


def _args_of(spec: dict, fm: FieldMeta) -> dict | None:
    args = spec.get("content_args")
    if args is None and "content_args" not in spec:
        args = {}
        spec["content_args"] = args
        fm.content_args = args
    return args if isinstance(args, dict) else None


def _has_args(fields: dict, m: FieldMeta) -> bool:
    return isinstance(fields[m.name].get("content_args"), dict)


def loosen(rng: random.Random, tpl: dict, metas: list[FieldMeta]) -> list[str]:
    """Apply 1-3 relaxations the reference accepts at load time (respc used to refuse them)."""
    applied: list[str] = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        kind = pick(rng, LOOSE_KINDS)
        if _loosen_one(rng, tpl, metas, kind):
            applied.append(kind)
    return applied


def _loosen_one(rng: random.Random, tpl: dict, metas: list[FieldMeta], kind: str) -> bool:
    fields = tpl["fields"]
    fm = pick(rng, metas)
    spec = fields[fm.name]
    c = fm.content
    if kind == "extra_args":
        args = _args_of(spec, fm)
        if args is None:
            return False
        ignored = [k for k in IGNORED_ARG_VALUES if k not in PARSER_READS[c]]
        for k in rng.sample(ignored, rng.randint(1, 2)):
            args[k] = copy.deepcopy(pick(rng, IGNORED_ARG_VALUES[k]))
        return True
    if kind == "truthy_args":
        args = _args_of(spec, fm)
        flags = ("strip", "unquoted_keys", "allow_non_json", "merge_duplicates")
        keys = [k for k in flags if k in PARSER_READS[c]]
        if args is None or not keys:
            return False
        for k in rng.sample(keys, rng.randint(1, len(keys))):
            args[k] = copy.deepcopy(pick(rng, LOOSE_TRUTHY + LOOSE_FALSY))
        return True
    if kind == "repeats":
        joined = spec.get("join") is not None  # join needs a truthy repeats
        spec["repeats"] = copy.deepcopy(pick(rng, LOOSE_TRUTHY if joined else LOOSE_TRUTHY + LOOSE_FALSY))
        return True
    if kind == "optional":
        spec["optional"] = copy.deepcopy(pick(rng, LOOSE_TRUTHY + LOOSE_FALSY))
        return True
    if kind in ("value_parser", "value_parser_fails"):
        if not any(m.content in ("kv-lines", "xml-inline") for m in metas):
            # make one plain text field a kv-lines field to carry the value_parser
            texts = [
                m
                for m in metas
                if m.content == "text" and m.transform is None and "join" not in fields[m.name]
            ]
            if not texts:
                return False
            fm = pick(rng, texts)
            fm.content, fm.content_args = "kv-lines", {}
            fields[fm.name]["content"] = "kv-lines"
            fields[fm.name]["content_args"] = fm.content_args
        nested = [
            m
            for m in metas
            if m.content in ("kv-lines", "xml-inline")
            and _has_args(fields, m)
            # a value group that may not participate hands None to the value parser (AttributeError)
            and fields[m.name]["content_args"].get("tag_pattern") != OPTIONAL_VALUE_TAG[0]
        ]
        if not nested:
            return False
        fm = pick(rng, nested)
        table = LOOSE_VALUE_PARSERS if kind == "value_parser" else FAILING_VALUE_PARSERS
        fields[fm.name]["content_args"]["value_parser"] = copy.deepcopy(pick(rng, table))
        return True
    if kind in ("tag_no_value", "tag_missing"):
        xml = [m for m in metas if m.content == "xml-inline" and _has_args(fields, m)]
        if not xml:
            return False
        fm = pick(rng, xml)
        args = fields[fm.name]["content_args"]
        if kind == "tag_missing":
            if not chance(rng, 0.3):
                return False  # rare: every close then fails
            args.pop("tag_pattern", None)
        else:
            args["tag_pattern"] = KEY_ONLY_TAGS[rng.randrange(len(KEY_ONLY_TAGS))][0]
        return True
    if kind == "string_delims":
        js = [m for m in metas if m.content == "json" and _has_args(fields, m)]
        if not js:
            return False
        fm = pick(rng, js)
        fields[fm.name]["content_args"]["string_delims"] = copy.deepcopy(
            pick(rng, [["<>", "«»"], ["''"], [], "", [["<<", ""]], ["<>"], "«»", [["a", "b", "c"]]])
        )
        return True
    if kind == "empty_sep":
        kv = [m for m in metas if m.content == "kv-lines" and _has_args(fields, m)]
        if not kv or not chance(rng, 0.5):
            return False
        fields[pick(rng, kv).name]["content_args"][pick(rng, ["line_sep", "kv_sep"])] = ""
        return True
    if kind == "join_null":
        if "join" in spec:
            return False
        spec["join"] = None
        return True
    if kind == "version":
        tpl["version"] = pick(rng, [True, 1.0])
        return True
    if kind == "pycall_args":
        pc = [m for m in metas if m.content == "python-call-list"]
        if not pc:
            return False
        fields[pick(rng, pc).name]["content_args"] = copy.deepcopy(
            pick(
                rng,
                [None, "x", [1], 5, True, {"strip": False, "tag_pattern": "("}, {"value_parser": "json"}],
            ),
        )
        return True
    if kind == "crash_args":
        key, value = pick(rng, CRASH_ARGS)
        reads = {
            "string_delims": ("json",),
            "line_sep": ("kv-lines",),
            "kv_sep": ("kv-lines",),
            "value_parser": ("kv-lines", "xml-inline"),
            "tag_pattern": ("xml-inline",),
            "tag_pattern+vp": ("xml-inline",),
        }.get(key, ("text", "int", "float", "bool", "json", "kv-lines", "xml-inline"))
        cands = [m for m in metas if m.content in reads and (key == "content_args" or _has_args(fields, m))]
        if not cands:
            return False
        fm = pick(rng, cands)
        if key == "content_args":
            fields[fm.name]["content_args"] = copy.deepcopy(value)  # (the body generator keeps fm.content_args)
        elif key == "tag_pattern+vp":
            fields[fm.name]["content_args"]["tag_pattern"] = value
            fields[fm.name]["content_args"]["value_parser"] = gen_value_parser(rng, 1)
        else:
            fields[fm.name]["content_args"][key] = copy.deepcopy(value)
        return True
    if kind == "transform_literal":
        grouped = (fm.open and fm.open.groups) or (fm.close and fm.close.groups)
        if "transform" in spec or spec.get("transform_each") or grouped:
            return False
        literal = pick(rng, [5, "literal", True, False, 0, [], {}, {"k": [1, None]}, "{}"])
        spec["transform"] = copy.deepcopy(literal)
        fm.transform = spec["transform"]
        return True
    raise AssertionError(kind)  # pragma: no cover


def template_features(tpl: Any, meta: TemplateMeta | None) -> list[str]:
    """What a (valid) template exercises, for the generator statistics."""
    out: list[str] = []
    if not isinstance(tpl, dict) or not isinstance(tpl.get("fields"), dict):
        return out
    for f in tpl["fields"].values():
        if not isinstance(f, dict):
            continue
        if f.get("content") == "python-call-list":
            out.append("pycall")
            if f.get("transform_each"):
                out.append("pycall:each")
            else:
                out.append("pycall:transform" if f.get("transform") is not None else "pycall:bare")
        cp = f.get("close_pattern")
        if isinstance(cp, str) and f.get("transform") is not None and re.compile(cp, re.DOTALL).groupindex:
            out.append("close_groups")
            op = f.get("open_pattern")
            close_names = set(re.compile(cp, re.DOTALL).groupindex)
            if isinstance(op, str) and set(re.compile(op, re.DOTALL).groupindex) & close_names:
                out.append("close_groups:override")
        args = f.get("content_args")
        if f.get("content") == "json" and isinstance(args, dict) and args.get("unquoted_keys"):
            out.append("json_uq")
        vp = args.get("value_parser") if isinstance(args, dict) else None
        merging = f.get("content") == "xml-inline" and isinstance(args, dict) and args.get("merge_duplicates")
        if merging and isinstance(vp, dict) and vp.get("name") == "json":
            out.append("xml_lists")
    if meta is not None:
        if any(d is not None and d.end for m in meta.fields for d in (m.open, m.close)):
            out.append("end_leaning")
        if meta.keyish_json:
            out.append("json_keyish")
        out.extend(meta.features)
    return sorted(set(out))


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
    "anchor_empty", "anchor_empty_list", "anchor_bad_regex", "anchor_int", "join_falsy_repeats",
    "content_null", "close_groups_null_transform",
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
        f["content"] = pick(
            rng,
            [
                "yaml", "JSON", "Text", "xml", "", "integer", "python_call_list", "python-calls",
                "Python-Call-List",
            ],
        )
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
    elif kind == "join_falsy_repeats":
        # the reference checks ``join`` against the truthiness of ``repeats``
        f["repeats"] = pick(rng, [0, "", None, [], {}, False])
        f["join"] = pick(rng, ["", "\n"])
    elif kind == "content_null":
        f["content"] = None
        f.pop("content_args", None)
    elif kind == "close_groups_null_transform":
        f["transform"] = None
        f.pop("transform_each", None)
        f.pop("close", None)
        f["close_pattern"] = pick(rng, ["</(?P<tag>\\w+)>", "(?P<status>ok|err)?$", "<e>(?=(?P<next>\\w+))"])
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

    def __init__(self, rng: random.Random, unquoted: Any, delims: Any, keyish: bool = False):
        self.rng = rng
        self.unquoted = unquoted
        # loose templates may give string_delims as two-character strings (or junk): keep usable pairs
        self.delims = (
            [d for d in delims if isinstance(d, (list, str)) and len(d) == 2 and all(isinstance(x, str) for x in d)]
            if isinstance(delims, list)
            else None
        )
        self.keyish = keyish
        self.sp = pick(rng, ["", " ", "\n  "])
        # the unquoted-keys rewrite fires right after "{" or ",", with optional whitespace around the key
        self.comma = "," if unquoted and chance(rng, 0.5) else "," + self.sp
        self.kb, self.ka = "", ""
        if unquoted and (keyish or chance(rng, 0.3)):
            self.kb = pick(rng, ["", " ", "\n  ", "\t", "  "])
            self.ka = pick(rng, ["", " ", "\t", "\n"])
        self.ascii = chance(rng, 0.3)

    def s(self, v: str, key: bool = False) -> str:
        if key and self.unquoted and re.fullmatch(r"\w+", v) and chance(self.rng, 0.85):
            return self.kb + v + self.ka
        if not key and self.keyish and chance(self.rng, 0.45):
            kl = pick(self.rng, KEYLIKE_TEXT)
            v = pick(self.rng, [kl, v + kl, kl + v])
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


# --------------------------------------------------------------------------------------------
# python-call-list bodies
# --------------------------------------------------------------------------------------------

_PY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
_PY_MAX_INT = 2**53 - 1


class Raw(str):
    """Text written verbatim into a python-call-list body (a grammar corner)."""


#: argument values that the grammar accepts (raw text)
PY_GOOD_VALUES = [
    "0", "-0", "-0.0", "1e5", "1E+2", "1.5e-3", "2.50", "9007199254740991", "-9007199254740991", "1e-999",
    "123456789012345678901234.5", "True", "true", "False", "false", "None", "null", "''", '""',
    "'\\u00e9'", "'\\u00E9'", "'\\uD83D\\uDE00'", "'\\ud83d\\ude00'", "'\\/'", "'\\b\\f\\n\\r\\t'", "'\\\\'",
    "'\"'", "\"'\"", "'\\''", '"\\""', "'\\u0000'", "'日本🙂'", "'a\\u2028b'", "[]", "{}",
    "[1, [2, [3]]]",
    "{'a': {'b': []}}", '{"k" : 1}', "{ 'x' :[ None , true ] }", "[ ]", "{\n}", "'\x00'", "'\u2028'",
    "[" * 100 + "]" * 100, "{'a': " * 99 + "[]" + "}" * 99, "'tab\there'", "-1.0E-2",
]
#: argument values the grammar rejects (raw text)
PY_BAD_VALUES = [
    "01", "1.", ".5", "+1", "1_000", "0x10", "9007199254740992", "-9007199254740992", "123456789012345678",
    "00000000000000000001", "1e999", "-1e400", "NaN", "Infinity", "inf", "-inf", "TRUE", "Truex", "none",
    "True.x", "None-1", "'abc", "'abc\"", "'a\nb'", "'a\rb'", "'a\\\nb'", "'\\x41'", "'\\a'", "'\\0'",
    "'\\U0001F600'", "'\\u12'", "'\\u12G4'", "'\\ud83d'", "'\\ude00'", "'\\ud83d\\u0041'", "'\\ud83dx'",
    "'\\uDBFF'", "'a' 'b'", "'''x'''", "f'x'", "b'x'", "{1: 2}", "{a: 1}", "{'a' 1}", "{1, 2}", "(1, 2)",
    "[1,]", "{'a': 1,}", "{'a': 1, 'a': 2}", "", "x", "a.b", "-", "--1", "1e", "1e+", "[1 2]", "[,]",
    "[" * 101 + "]" * 101, "{'a': " * 100 + "[]" + "}" * 100, "'\\N{DASH}'", "`x`", "1\u00a0", "'x'\f",
    "1.5.2", "[1]]", "{'a': 1}}",
]
#: whole bodies the grammar accepts
PY_GOOD_BODIES = [
    "[]", "[ ]", " \n[]\t", "\r\n[\r\n]\r\n", "[f()]", "[f ( a = 1 ) ]", "[functions.get_w(a=1)]",
    "[get-w(x=1)]", "[a.b-c.d_1(x=1)]", "[f(), g()]", "[_f()]", "[F9()]", "[f(a.b=1, c-d=2)]",
    "[\tf(\n a=1 ,\n b=2\n)\n]", "[f(x=1),f(x=1)]", "[f(a=[1, {'k': None}])]",
]
#: whole bodies the grammar rejects
PY_BAD_BODIES = [
    "", " ", "f()", "[f()", "[f(),]", "[f() g()]", "[f(),,g()]", "[f(1)]", "[f('x', a=1)]", "[f(a=1,)]",
    "[f(a=1 b=2)]", "[f(a=1, a=2)]", "[f(a=)]", "[f(=1)]", "[f(a==1)]", "[f(**k)]", "[1f()]", "[f.()]",
    "[f..g()]", "[.f()]", "[f-()]", "[ñ()]", "[f()] x", "[f()]]", "[f()][g()]", "[f]", "[f(a=1)",
    "[[f()]]", "[f()]\u00a0", "\u00a0[f()]", "[f()\f]", "[f(a=1;b=2)]", "(f())", "{f()}", "[f()]\x00",
    "[f(a-=1)]", "[f(1a=1)]", "[f(ñ=1)]", "[f(a b=1)]", "[f(a=1)\v]", "[f(a=1)] [g()]", "[,f()]",
    "[f(a=1),]", "[f(a=1)];", "[f()\n", "[f(a='x')]extra",
]
PY_BAD_WS = ["\u00a0", "\f", "\v", "\u2003", "\u200b"]


class PyCallWriter:
    """Writes python-call-list bodies with random (grammar-allowed) spelling choices."""

    def __init__(self, rng: random.Random, clean: bool):
        self.rng = rng
        self.clean = clean
        self.ws_p = pick(rng, [0.0, 0.0, 0.15, 0.5])
        self.sep = pick(rng, [", ", ",", ",\n", " , ", ",\t"])
        self.quote = pick(rng, ["'", '"', "mix"])
        self.consts = pick(rng, ["py", "json", "mix"])
        self.esc_unicode = chance(rng, 0.2)
        self.bad_ws = not clean and chance(rng, 0.04)

    def ws(self) -> str:
        if self.bad_ws and chance(self.rng, 0.1):
            return pick(self.rng, PY_BAD_WS)
        if self.ws_p and chance(self.rng, self.ws_p):
            return pick(self.rng, [" ", "  ", "\n", "\t", "\r\n", " \n "])
        return ""

    def string(self, s: str) -> str:
        q = self.quote if self.quote != "mix" else pick(self.rng, ["'", '"'])
        out = [q]
        for ch in s:
            o = ord(ch)
            if ch == "\\":
                out.append("\\\\")
            elif ch == q:
                out.append("\\" + q)
            elif ch in "\n\r\t\b\f":
                out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}[ch])
            elif ch == "/" and chance(self.rng, 0.3):
                out.append("\\/")
            elif o < 0x20 and chance(self.rng, 0.7):
                out.append(f"\\u{o:04x}")
            elif o > 0x7F and self.esc_unicode:
                if o > 0xFFFF:
                    v = o - 0x10000
                    hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
                    pair = f"\\u{hi:04x}\\u{lo:04X}" if chance(self.rng, 0.5) else f"\\u{hi:04X}\\u{lo:04x}"
                    out.append(pair)
                else:
                    out.append(f"\\u{o:04x}" if chance(self.rng, 0.5) else f"\\u{o:04X}")
            else:
                out.append(ch)
        out.append(q)
        return "".join(out)

    def const(self, v: Any) -> str:
        py = {None: "None", True: "True", False: "False"}[v]
        js = {None: "null", True: "true", False: "false"}[v]
        return py if self.consts == "py" else js if self.consts == "json" else pick(self.rng, [py, js])

    def value(self, v: Any) -> str:
        if isinstance(v, Raw):
            return str(v)
        if v is None or isinstance(v, bool):
            return self.const(v)
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return repr(v)  # nan/inf are not in the grammar: a natural failure
        if isinstance(v, str):
            return self.string(v)
        if isinstance(v, list):
            inner = (self.ws() + "," + self.ws()).join(self.value(x) for x in v)
            return "[" + self.ws() + inner + self.ws() + "]"
        if isinstance(v, dict):
            items = [self.string(str(k)) + self.ws() + ":" + self.ws() + self.value(x) for k, x in v.items()]
            return "{" + self.ws() + (self.ws() + "," + self.ws()).join(items) + self.ws() + "}"
        return self.string(str(v))

    def call(self, name: str, args: dict) -> str:
        parts = [self.ws() + str(k) + self.ws() + "=" + self.ws() + self.value(v) for k, v in args.items()]
        return self.ws() + name + self.ws() + "(" + self.sep.join(parts) + self.ws() + ")"

    def calls(self, calls: list[tuple[str, dict]]) -> str:
        inner = self.sep.join(self.call(n, a) for n, a in calls)
        return self.ws() + "[" + inner + self.ws() + "]" + self.ws()


def py_safe(v: Any) -> Any:
    """Map a value to one the call-list grammar accepts (clean inputs)."""
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return 1.5
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > _PY_MAX_INT:
        return 7
    if isinstance(v, list):
        return [py_safe(x) for x in v]
    if isinstance(v, dict):
        return {str(k): py_safe(x) for k, x in v.items()}
    return v


def pycall_body(rng: random.Random, meta: TemplateMeta, clean: bool) -> str:
    w = PyCallWriter(rng, clean)
    calls: list[tuple[str, dict]] = []
    for _ in range(pick(rng, [0, 1, 1, 1, 2, 2, 3])):
        t = pick_tool_name(rng, meta)
        if chance(rng, 0.12):
            t = pick(rng, ["functions." + t, t.replace("_", "-"), "a.b-c", "_x", "F9", "ns.sub." + t])
        args = tool_args(rng, meta, t)
        if clean:
            if not _PY_NAME.fullmatch(t):
                t = "f"
            args = {k: py_safe(v) for k, v in args.items() if _PY_NAME.fullmatch(k)}
        calls.append((t, args))
    r = rng.random()
    if clean:
        if r < 0.25 and calls:
            calls[-1][1][pick(rng, ["v", "x", "a.b", "c-d"])] = Raw(pick(rng, PY_GOOD_VALUES))
        elif r < 0.35:
            return pick(rng, PY_GOOD_BODIES)
        return w.calls(calls)
    if r < 0.22 and calls:
        calls[-1][1][pick(rng, ["v", "x"])] = Raw(pick(rng, PY_BAD_VALUES))
    elif r < 0.32:
        return pick(rng, PY_BAD_BODIES)
    elif r < 0.4:
        return pick(rng, PY_GOOD_BODIES)
    elif r < 0.55 and calls:
        calls[-1][1][pick(rng, ["v", "x"])] = Raw(pick(rng, PY_GOOD_VALUES))
    s = w.calls(calls)
    if chance(rng, 0.08):
        s = mangle(rng, s, meta.palette)
    return s


PYCALL_SMALL = ["[f(a=1)]", "[]", "[g()]", "f()", "[f(x='y'), g(n=2)]", "[f(a=1,)]"]

#: key-like text placed inside JSON string values (the unquoted_keys rewrite must leave it alone)
KEYLIKE_TEXT = [
    ",b:1", "{x: 1}", "a, b: c", "{k:v}", ",\n  z :", "x,y:", ',"q":1', '\\",k:', "{ a : [1] }", "é,ñ:1",
    "c:\\", "end\\", "{a:1,b:2}", ', _: ', '"', "\\n,k:",
]
#: values (raw text) that xml-inline merge_duplicates collects; many are lists themselves
XML_LIST_VALUES = [
    "[1, 2]", "[]", "[[1], 2]", '["a"]', "3", '"s"', '{"k": [1]}', "[null]", "[", "x", " [true] ",
]


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
    if c == "python-call-list":
        return pycall_body(rng, meta, clean)
    if c in SCALAR_BODIES:
        if clean:
            return pick(rng, SCALAR_GOOD[c])
        return pick(rng, SCALAR_BODIES[c]) if not bad else filler(rng, pal)
    if c == "json":
        args = fm.content_args
        wr = JsonWriter(
            rng,
            args.get("unquoted_keys", False) or chance(rng, 0.05),
            args.get("string_delims"),
            keyish=meta.keyish_json or fm.role == "json_uq",
        )
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
            if wr.keyish and chance(rng, 0.5):
                val = {k: pick(rng, ["x", "s", 1]) for k in rng.sample(ARG_NAMES, rng.randint(1, 3))}
        s = wr.w(val)
        if chance(rng, 0.3):
            s = pick(rng, ["", " ", "\n"]) + s + pick(rng, ["", " ", "\n"])
        if bad:
            s = mangle(rng, s, pal)
        return s
    if c == "xml-inline":
        pat = fm.content_args.get("tag_pattern")
        render = TAG_PATTERNS[0][1]  # (no tag_pattern: the reference fails at close anyway)
        for p, r in TAG_PATTERNS + [OPTIONAL_VALUE_TAG] + KEY_ONLY_TAGS:
            if p == pat:
                render = r
        t = pick_tool_name(rng, meta)
        args = tool_args(rng, meta, t)
        vp = fm.content_args.get("value_parser")
        vp_name = vp.get("name") if isinstance(vp, dict) else None
        listy = (
            fm.role in ("xml_lists", "tool_named_lists")
            or (vp_name == "json" and fm.content_args.get("merge_duplicates"))
        ) and chance(rng, 0.85)
        if listy:
            # duplicate keys whose values are (mostly) lists themselves, sometimes interleaved
            keys = list(args) or rng.sample(ARG_NAMES, 2)
            order = [k for k in keys for _ in range(pick(rng, [1, 1, 2, 2, 3]))]
            if chance(rng, 0.4):
                rng.shuffle(order)
            args = {}
            values = XML_LIST_VALUES[:8] if clean else XML_LIST_VALUES  # (the tail does not parse as JSON)
            pairs = [(k, pick(rng, values)) for k in order]
        else:
            pairs = list(args.items())
        parts = []
        for k, v in pairs:
            sv = v if isinstance(v, str) else json.dumps(v)
            if vp_name == "python-call-list" and chance(rng, 0.7):
                sv = pick(rng, PYCALL_SMALL)
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
        ls = ls if isinstance(ls, str) else "\n"
        ks = ks if isinstance(ks, str) else ":"
        vp = fm.content_args.get("value_parser")
        vp_name = vp.get("name") if isinstance(vp, dict) else None
        t = pick_tool_name(rng, meta)
        args = tool_args(rng, meta, t)
        lines = []
        for k, v in args.items():
            sv = v if isinstance(v, str) else json.dumps(v)
            if vp_name == "python-call-list" and chance(rng, 0.7):
                sv = pick(rng, PYCALL_SMALL)
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
            if fm.open.end and chance(rng, 0.25):
                break  # the text ends right at an end-leaning open
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
                if fm.close.end and chance(rng, 0.5):
                    # end right there (maybe after one more newline), or continue with more text
                    out.append(pick(rng, ["", "", "\n", "\n\n", " "]))
                    break
        elif r < 0.75:
            if implicit and (implicit[0].content != "text" or chance(rng, 0.7)):
                out.append(gen_body(rng, implicit[0], meta, clean))
                if implicit[0].close is not None and chance(rng, 0.3):
                    out.append(sample_of(rng, implicit[0].close))
                    if implicit[0].close.end and chance(rng, 0.5):
                        out.append(pick(rng, ["", "\n"]))
                        break
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


def gen_chunkings(rng: random.Random, text: str, lines: bool = False) -> list[list[str]]:
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
    if lines and "\n" in text:
        # for end-leaning delimiters: every feed ends right before and right after each newline
        ch.append([c for c in re.split(r"(\n)", text) if c])
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
        return Group(seed, index, bad, kind, [inp], ["invalid"])
    features = template_features(tpl, meta)
    lines = "end_leaning" in features
    inputs = []
    for _ in range(inputs_per_group):
        clean = chance(rng, 0.5)
        prefix, pending = gen_prefix(rng, meta, clean)
        text = gen_text(rng, meta, clean, pending)
        tools = gen_tools(rng, meta.tool_universe) if chance(rng, 0.4) else None
        inp = Input(prefix, text, tools, gen_chunkings(rng, text, lines), clean=clean)
        if tools is not None and chance(rng, 0.1):
            inp.tools_as = "tuple"
        elif tools is None and chance(rng, 0.03):
            inp.tools = []
        if chance(rng, 0.04):
            inp.batch = True
            inp.batch_texts = [text, gen_text(rng, meta), gen_text(rng, meta)]
        inputs.append(inp)
    return Group(seed, index, tpl, None, inputs, features)
