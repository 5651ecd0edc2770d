"""An unbounded look-behind context is cut, per state, to what its delimiters read back
(compiler/regexinfo.reach, runtime/base.py's _context_tail): a search from the end of the
consumed text finds the same match in the tail as in all of it.
"""

from __future__ import annotations

import random

import pytest
import regex

from respc.compiler.regexinfo import reach, skips_ahead
from respc.runtime import base as _base

FLAGS = regex.DOTALL


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("</tool_call>\\s*", (0, False)),
        ('(?<=\\}\\s*\\})(?:(?=\\s*,\\s*\\{\\s*"name")|\\s*\\])', (2, True)),
        ("\\s*(?:</think>(?<=</tool_call>\\s*</think>)|<\\|im_end\\|>[\\s\\S]*)", (20, True)),
        ("(?<=\\})\\s*\\}", (1, False)),
        ("\\b(?<=a)x", (16, False)),  # \b: the short context kept for anchors
        ("\\s*,(?<=functools\\s*\\[(?:(?!<\\|eot_id\\|>).)*\\},)", None),  # any text back to functools
        ("(?<=\\A\\s*)x", None),  # \A would see the tail's start as the text's
        ("(?<!<\\|start\\|>(?:user|tool[^<]*))x", None),
        ("(?<=[^\\S\\n]*x)y", (1, True)),
    ],
)
def test_reach(pattern, expected):
    assert reach(pattern) == expected


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("</think>|(?=<tool_call>)", True),
        ("\\A/think\\n", True),
        ("(?:\\A\\s*|<\\|python_tag\\|>\\s*)(?=\\[)", True),
        ("\\}\\s*(?:<\\|action_end\\|>|\\Z)", True),
        ("(?<=\\})\\s*\\}", False),  # a lookbehind first: tried at every start
        ("(?:\\G|(?<!\\s))(?:\\s*<\\|im_end\\|>)", False),
        ("(?:(?:<answer>\\s*)?<tool_calls>)", False),  # the group may be skipped
        ("[ab]x", False),
        ("(?i)abc", False),
    ],
)
def test_skips_ahead(pattern, expected):
    assert skips_ahead(pattern) is expected


_PIECES = ["}", "}}", " ", "   ", "\n", ",", "x", "ab", "</tool_call>", "</think>", '{"name"', "]", "functools["]
_PATTERNS = [
    '(?<=\\}\\s*\\})(?:(?=\\s*,\\s*\\{\\s*"name")|\\s*\\])',
    "\\s*(?:</think>(?<=</tool_call>\\s*</think>)|<\\|im_end\\|>[\\s\\S]*)",
    "(?<=\\})\\s*\\}\\s*(?:,(?=\\s*\\{)|\\]|\\Z)",
    "(?<![^\\S\\n])x|(?<=ab\\s*)\\s*,",
]


def test_a_search_from_the_context_end_finds_the_same_match_in_the_tail():
    """For patterns of bounded reach, on random consumed texts cut into random pieces: the
    tail _context_tail gives, then the new text, searched (partially, as streamed, and not)
    from the new text's start, gives the match the whole context gives."""
    rng = random.Random("context-reach")
    for pattern in _PATTERNS:
        need = reach(pattern)
        assert need is not None, pattern
        rx = regex.compile(pattern, FLAGS)
        for case in range(400):
            consumed = [("".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 4)))) for _ in range(rng.randint(0, 6))]
            ctx, pieces = (consumed[0], consumed[1:]) if consumed else ("", [])
            whole = "".join(consumed)
            tail = _base._context_tail(ctx, list(pieces), need)
            assert whole.endswith(tail), (pattern, consumed, tail)
            text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 5)))
            for partial in (False, True):
                want = rx.search(whole + text, len(whole), partial=partial)
                got = rx.search(tail + text, len(tail), partial=partial)
                shift = len(whole) - len(tail)
                shown = f"{pattern} case {case}: {consumed!r} + {text!r}, tail {tail!r}, partial={partial}"
                if want is None:
                    assert got is None, shown
                else:
                    assert got is not None, shown
                    assert (got.start() + shift, got.end() + shift, got.partial) == (want.start(), want.end(), want.partial), shown


def test_pieces_stay_few():
    """The context's pieces merge as they come: past _MERGE_PARTS of them, to a logarithm
    of the context's length."""
    pieces: list[str] = []
    for _ in range(100_000):
        _base._add_piece(pieces, "abcd")
        assert len(pieces) <= _base._MERGE_PARTS + 20
    assert "".join(pieces) == "abcd" * 100_000
