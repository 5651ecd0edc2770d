"""Text after the end of turn: a delimiter that runs to the end of the text (``HEAD[\\s\\S]*``,
the bundled templates' end-of-turn closes) is held to finalize without rescanning what
follows (a *tail hold*, runtime/base.py), with exactly the reference's events.

Linearity is shown by counting the characters the parser scans (every scan goes through
``_commit``), not by timing; bench/bench.py --only tail prints the times beside the reference.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent / "differential"
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import harness  # noqa: E402
from transformers.utils import chat_parsing  # noqa: E402  (the behavioural reference)

import respc  # noqa: E402
from respc.compiler.regexinfo import tail_split, tail_splits  # noqa: E402

#: (template, text up to the end of turn, text after it: repeated to make a long tail)
CASES = [
    ("qwen3", "The answer is 42.<|im_end|>", "<pad>"),
    ("qwen3", "Hi\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>", "\n<|im_start|>user\nx<|im_end|>"),
    ("qwen3", "<think>\nhm\n</think>\n\nok \n<|endoftext|>", "<|endoftext|>"),
    ("glm-4.5", "\n<think>a</think>\nok<|user|>", "\nthanks <tool_call>"),
    ("llama3.2", "[f(a=1)]<|eot_id|>", "<|eot_id|>\n"),
    ("mistral-small-3.1", '[TOOL_CALLS] [{"name": "f", "arguments": {}, "id": "abcdefghi"}]</s>', "<pad></s>"),
    # the tail in one alternative: after the alternatives tried first (regexinfo.tail_splits)
    ("deepseek-v3.1", "ok\n<｜end▁of▁sentence｜>", "<｜tool▁calls▁end｜>"),
    ("magistral", '[TOOL_CALLS]f[ARGS]{"a": 1}\n</s>', "[TOOL_CALLS]"),
    ("llama3.1", '{"name": "f", "parameters": {"a": 1}}<|eom_id|>', "<|eot_id|>"),
    ("functionary", '>>>f\n{"a": 1}<|eot_id|>', ">>>g\n{}"),
    ("phi-4-mini", "hi<|end|>", "<|/tool_call|>"),
    # L\s*(?:A[\s\S]*|\Z): the tail in the first alternative, \Z after it (regexinfo.tail_splits)
    ("gigachat3", '<|function_call|>{"name": "f", "arguments": {"a": 1}}<|message_sep|>', '\n\nfunction call<|role_sep|>\n{"name": "g", "arguments": {}}'),
    # a head with a negative lookahead: gigachat3's content close, <\|message_sep\|>(?!\s*function call)
    ("gigachat3", "ok<|message_sep|>\n\nuser", "<|role_sep|>\nMerci\n\nuser"),
    ("gigachat3", "ok<|message_sep|>\n\nfunction ca", "\n\nfunction ca"),
]


def _counting(compiled):
    """A parser class of ``compiled`` that counts the characters each scan is given."""

    class Counting(compiled.Parser):
        __slots__ = ()
        scanned = [0]

        def _commit(self, events, text, eos):
            Counting.scanned[0] += len(text)
            return super()._commit(events, text, eos)

    return Counting


@pytest.mark.parametrize("name, head, after", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_long_tail_is_scanned_in_linear_work(name, head, after):
    compiled = respc.load(name)
    parser_class = _counting(compiled)
    for length in (4_000, 32_000):
        text = head + after * (length // len(after))
        parser_class.scanned[0] = 0
        parser = parser_class(prefix="")
        for i in range(0, len(text), 4):
            parser.feed(text[i : i + 4])
        message, _ = parser.finalize()
        assert message == compiled.parse(head, prefix="")
        # every character is scanned a bounded number of times (rescanning the held tail at
        # each 4-character feed would scan it length / 8 times on average)
        assert parser_class.scanned[0] <= 4 * len(text) + 400, (name, length, parser_class.scanned[0])


def _chunks(rng: random.Random, text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        k = rng.choice([1, 2, 4, 7, 16, 64])
        out.append(text[i : i + k])
        i += k
    return out


@pytest.mark.parametrize("name, head, after", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_tail_holds_match_the_reference(name, head, after):
    compiled = respc.load(name)
    template = compiled.template
    rng = random.Random(f"tail-holds-{name}-{head}")
    for case in range(6):
        text = head + after * rng.randint(0, 40) + rng.choice(["", "\n", "x", after[:2]])
        chunks = _chunks(rng, text)
        ref = harness.run_stream(lambda: chat_parsing.ResponseParser(template, prefix=""), chunks, 60)
        got = harness.run_stream(lambda: compiled.parser(prefix=""), chunks, 60)
        diff = harness.compare(ref, got, False)
        assert diff is None, f"{name} case {case}: {diff}; chunks={chunks!r}"


@pytest.mark.parametrize(
    "pattern, head",
    [
        ("\\s*(?:<\\|im_end\\|>|<\\|endoftext\\|>)[\\s\\S]*", "\\s*(?:<\\|im_end\\|>|<\\|endoftext\\|>)"),
        ("</s>.*", "</s>"),  # DOTALL: . is every character
        ("</s>(?s:.*)", "</s>"),
        ("</s>[\\S\\s]*+", "</s>"),
        ("</s>(?:[\\w\\W]*)", "</s>"),
        ("</s>[\\s\\S]*?", None),  # lazy: at the end of a pattern it matches nothing
        ("</s>[^x]*", None),
        ("</s>\\.*", None),
        ("a|</s>[\\s\\S]*", None),  # the tail is only one alternative's
        ("</s>(?P<rest>[\\s\\S]*)", None),  # a capture
        ("(?P<n>x)</s>[\\s\\S]*", None),
        ("</s>(?=y)[\\s\\S]*", None),  # the head looks past its match
        ("</s>(?!y)[\\s\\S]*", "</s>(?!y)"),  # ... only through a negative lookahead (see tail_splits)
        ("</s>(?!y(?=z))[\\s\\S]*", None),
        ("x\\Z[\\s\\S]*", None),
        ("\\s*[\\s\\S]*", None),  # a head that matches nothing
        ("\\}\\s*(?:(?:<\\|eot_id\\|>)[\\s\\S]*|\\Z)", None),
    ],
)
def test_tail_split(pattern, head):
    assert tail_split(pattern) == head


@pytest.mark.parametrize(
    "pattern, splits",
    [
        ("\\s*</s>[\\s\\S]*", [("\\s*</s>", ())]),
        ("\\s*(?=x)|\\s*</s>[\\s\\S]*", [("\\s*</s>", ("\\s*(?=x)",))]),  # a top-level alternative
        ("\\s*(?:<a>|<b>[\\s\\S]*)", [("\\s*<b>", ("\\s*<a>",))]),  # \\s*(?:A|B): the run is taken whole
        ("\\s*(?:<a>|\\s<b>[\\s\\S]*)", []),  # ... unless an alternative may start with whitespace
        ("\\s*(?:(?=x)|<b>[\\s\\S]*)", []),  # (a lookahead's first character is not known)
        ("x(?:<a>|<b>[\\s\\S]*)", []),
        ("\\s*(?:<a>|<b>)", []),
        # a literal before the run (gigachat3's call close), and \Z as an alternative
        ("\\}\\s*(?:(?:<m>|</s>)[\\s\\S]*|\\Z)", [("\\}\\s*(?:<m>|</s>)", ())]),
        ("\\}\\s*(?:<a>|<b>[\\s\\S]*)", [("\\}\\s*<b>", ("\\}\\s*<a>",))]),
        ("a+\\s*(?:<b>[\\s\\S]*|\\Z)", []),  # (what comes before the run is not one literal)
        ("\\}\\s*(?:\\Z|\\s<b>[\\s\\S]*)", []),
        # a negative lookahead in the head: the head with it made positive must not match
        ("\\s*(?:<m>(?!\\s*f c)|</s>)[\\s\\S]*", [("\\s*(?:<m>(?!\\s*f c)|</s>)", ("\\s*(?:<m>(?=\\s*f c)|</s>)",))]),
    ],
)
def test_tail_splits(pattern, splits):
    assert tail_splits(pattern) == splits
