"""JSON decoding (respc.runtime.decode): exactly json.loads's values and errors.

Objects and arrays go through orjson where it gives json's value; these tests hold the
decoder to json on valid, broken and adversarial documents, including the places where
orjson and json differ (integers beyond 64 bits, NaN, lone surrogates, deep nesting).
"""

import json
import random
import struct

import pytest
from optional import needs

needs("hypothesis")

from hypothesis import given, settings
from hypothesis import strategies as st

from respc.runtime import decode
from respc.runtime.decode import MISS, json_or_miss, loads


def outcome(fn, text):
    """What ``fn(text)`` gives: ("ok", the value's exact JSON) or ("error", type, message)."""
    try:
        value = fn(text)
    except (ValueError, RecursionError) as exc:
        return ("error", type(exc).__name__, str(exc))
    if value is MISS:
        return ("miss",)
    # json.dumps tells 1 from 1.0 and keeps key order; repr would too, but not for nan
    return ("ok", json.dumps(value), type(value).__name__)


def loads_expected(text):
    """json.loads's outcome, but TooDeep (a ValueError) where it raises RecursionError: JSON
    nested deeper than json decodes is a malformed region, not an error that escapes."""
    want = outcome(json.loads, text)
    return ("error", "TooDeep", decode._TOO_DEEP) if want[:2] == ("error", "RecursionError") else want


def json_or_miss_expected(text):
    """loads's outcome, with MISS where json.loads raises JSONDecodeError (other errors stay)."""
    want = loads_expected(text)
    return ("miss",) if want[:2] == ("error", "JSONDecodeError") else want


def check(text):
    assert outcome(loads, text) == loads_expected(text), f"loads({text!r})"
    assert outcome(json_or_miss, text) == json_or_miss_expected(text), f"json_or_miss({text!r})"


# Where orjson and json part ways: every one must come out as json's.
EDGES = [
    # integers beyond 64 bits (orjson: floats), alone and nested, at the edges of the range
    "[18446744073709551615]",
    "[18446744073709551616]",
    "[-9223372036854775808]",
    "[-9223372036854775809]",
    '{"id": 123456789012345678901234567890}',
    '{"a": [1, {"b": [-99999999999999999999]}], "c": 2.5}',
    "[1e19, -1e19, 9.3e18, 1.8446744073709552e19]",  # float literals that large: json decides
    "[1e400, -1e400]",
    "[NaN]",
    '{"x": Infinity, "y": -Infinity}',
    '["\\ud800"]',
    '{"k": "\\udc00\\ud800"}',
    '["\\ud83d\\ude00", "é", "\\u00e9"]',
    '{"a": 1, "a": 2, "b": 3}',
    '{"a": 1, "b": 2, "a": 3}',
    "[1, 2,]",
    "[01]",
    "[1.]",
    "[.5]",
    '["\x00"]',
    '["\t"]',
    '["\\x"]',
    "\ufeff[1]",
    " \t\n\r[1] \r\n",
    "\x0c[1]",
    "[1]\x0c",
    "[1] [2]",
    "[1] x",
    "[-0, -0.0, 0e0, 1E5, 1e-400]",
    "[0.1, 0.30000000000000004, 2.2250738585072011e-308, 4.9e-324, 2.4703282292062328e-324]",
    "[9007199254740993, 9007199254740993.0, 1.00000000000000011102230246251565404236316680908203125]",
    "[" + "1" * 40 + ".5]",
    # scalars: numbers (ints straight from digits), words, dates and other near-numbers
    "0", "00", "025", "25", "-0", "-", "+1", "1e5", "1.5e", " 7", "7 ", "\n7\t", "-Infinity", "-Inf", "Infinity",
    "123456789012345678", "1234567890123456789", "12345678901234567890", "\u0661\u0662", "1\u0662",
    "2025-11-03T00:00:00Z", "2025-11-03", "3.0.1", "1_000", "0x1F", "true", "true ", " false", "null", "nul",
    "True", "None", "NaN", '"s"', '"s" ', "'s'",
    "{}",
    "[]",
    "{",
    "[",
    '{"a" 1}',
    "[" * 600 + "]" * 600,
    "[" * 1100 + "]" * 1100,  # json: RecursionError, orjson: too deep; TooDeep (a ValueError)
    "[" * 5000 + "]" * 5000,
    '{"big": ' + "9" * 5000 + "}",  # json: int() digit limit (ValueError)
]


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_edges_are_json(text):
    check(text)


def test_without_orjson_json_decides(monkeypatch):
    """Without orjson installed, decoding is json's alone (and still the same)."""
    monkeypatch.setattr(decode, "_fast_loads", None)
    for text in EDGES[:20] + ['{"a": [1, 2.5, "x"]}', "[1] x", "not json"]:
        check(text)


def test_str_subclass_and_non_str():
    class Text(str):
        pass

    assert loads(Text('{"a": [1]}')) == {"a": [1]}
    assert loads(b'{"a": 1}') == json.loads(b'{"a": 1}')  # what json.loads takes, loads takes
    with pytest.raises(TypeError):
        loads(None)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def _json_like_texts(draw):
    """Valid JSON with random whitespace around it, or broken and non-JSON text."""
    text = json.dumps(draw(_json_values))
    pad = st.sampled_from(["", " ", "\n", "\t ", "\r\n", "\x0b", "\ufeff", "\xa0"])
    text = draw(pad) + text + draw(pad)
    mutation = draw(st.integers(0, 4))
    if mutation == 1 and text:
        cut = draw(st.integers(0, len(text)))
        text = text[:cut]
    elif mutation == 2:
        text += draw(st.sampled_from(["x", "}", " 1", "Z", ",", "]"]))
    elif mutation == 3:
        text = draw(st.text(alphabet='{}[]",:0123456789.-eE tfnrulasNIinfy\n', max_size=16))
    return text


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, derandomize=True)
@given(text=_json_like_texts())
def test_hypothesis_documents_are_json(text):
    check(text)


# A seeded fuzzer for what hypothesis rarely builds: documents of real tool-call shape
# with one to three random edits (inserted, deleted or replaced characters).
_ATOMS = [
    "0", "-0", "1", "-12", "3.5", "1e5", "2E-3", "true", "false", "null", '"a"', '"\\u00e9"', '"\\n"',
    '"x\\"y"', '""', "123456789012345678901", "-18446744073709551617", "NaN", '"\\ud83d\\ude00"', '"é"', '"\\/"',
]
_KEYS = ['"a"', '"k"', '"\\u00e9"', '""']
_EDIT_CHARS = ' \t\n\r{}[],:"\\01eE.-+tfnaxu\x00\x1f\u2028\ufeff'


def _document(rng, depth=0):
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice(_ATOMS)
    if roll < 0.7:
        items = (rng.choice(_KEYS) + ":" + _document(rng, depth + 1) for _ in range(rng.randint(0, 4)))
        return "{" + ",".join(items) + "}"
    return "[" + ",".join(_document(rng, depth + 1) for _ in range(rng.randint(0, 4))) + "]"


def _edit(rng, text):
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(chars))
        roll = rng.random()
        if roll < 0.4 or not chars:
            chars.insert(at, rng.choice(_EDIT_CHARS))
        elif roll < 0.7:
            del chars[min(at, len(chars) - 1)]
        else:
            chars[min(at, len(chars) - 1)] = rng.choice(_EDIT_CHARS)
    return "".join(chars)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fuzzed_documents_are_json(seed):
    rng = random.Random(seed)
    for case in range(4000):
        text = "{" + '"arguments":' + _document(rng) + "}" if rng.random() < 0.3 else _document(rng)
        if rng.random() < 0.7:
            text = _edit(rng, text)
        if rng.random() < 0.2:
            text = rng.choice([" ", "\n", "\t"]) + text + rng.choice(["", " ", "\r\n"])
        try:
            check(text)
        except AssertionError:
            raise AssertionError(f"seed {seed}, case {case}: {text!r}") from None


def _float_literal(rng):
    """A decimal literal: a double's repr, one near the halfway point between two
    doubles (the hard case for correct rounding), or random digits and exponent."""
    roll = rng.random()
    if roll < 0.6:
        while True:
            x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
            if x == x and abs(x) != float("inf") and x != 0:
                break
        if roll < 0.3:
            return repr(x)
        mantissa, exponent = f"{abs(x):.25e}".split("e")
        tail = rng.choice(["5", "50000000001", "49999999999", "5000000000000000000000000001"])
        return ("-" if x < 0 else "") + mantissa[: rng.randint(15, 27)] + tail + "e" + exponent
    literal = str(rng.randint(0, 10 ** rng.randint(0, 25)))
    literal += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
    if rng.random() < 0.6:
        literal += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 330))
    return rng.choice(["", "-"]) + literal


def test_floats_round_as_json_does():
    """Numbers in arrays (orjson's path) come out bit for bit as json's (float())."""
    rng = random.Random(11)
    for case in range(300):
        literals = [_float_literal(rng) for _ in range(100)]
        text = "[" + ", ".join(literals) + "]"
        got, want = loads(text), json.loads(text)
        if [repr(v) for v in got] != [repr(v) for v in want]:
            bad = next(lit for lit, a, b in zip(literals, got, want) if repr(a) != repr(b))
            raise AssertionError(f"case {case}: {bad} gives {loads('[' + bad + ']')} and json {json.loads('[' + bad + ']')}")
