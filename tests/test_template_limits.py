"""A hostile template cannot exhaust memory or CPU at compile time: validation refuses a
template past the documented size limits (a TemplateError naming the path and the limit),
and what the compiler builds grows linearly with the template (no set of every beginning
of a long literal). Long literals (past ``scan.SHORT_BEGINNINGS``) still parse exactly as
the reference parses them, streamed in any chunks. Sizes are asserted, never seconds."""

from __future__ import annotations

import random
import sys
import tracemalloc
from pathlib import Path

import pytest

import respc
from respc.compiler import compile_source, validate_template
from respc.compiler.validate import MAX_DELIMITER_CHARS, MAX_FIELDS, MAX_LITERALS, MAX_TEMPLATE_CHARS
from respc.runtime.scan import SHORT_BEGINNINGS

_HERE = Path(__file__).resolve().parent / "differential"
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import harness  # noqa: E402
from transformers.utils import chat_parsing  # noqa: E402  (the behavioural reference)


def _template(**field) -> dict:
    return {"start_anchor": "<A>", "fields": {"content": {"content": "text"}, "x": {"close": "</x>", **field}}}


LONG = "<" + "ab" * (MAX_DELIMITER_CHARS // 2 - 1) + ">"  # as long as a delimiter may be


@pytest.mark.parametrize(
    "template, path, limit",
    [
        (_template(open=LONG + "x"), "fields.x.open", "MAX_DELIMITER_CHARS"),
        (_template(open=["<x>", LONG + "x"]), "fields.x.open[1]", "MAX_DELIMITER_CHARS"),
        (_template(open_pattern="a" * (MAX_DELIMITER_CHARS + 1)), "fields.x.open_pattern", "MAX_DELIMITER_CHARS"),
        ({**_template(open="<x>"), "start_anchor": "a" * (MAX_DELIMITER_CHARS + 1)}, "start_anchor", "MAX_DELIMITER_CHARS"),
        (
            _template(open="<x>", content="xml-inline", content_args={"tag_pattern": "(?P<key>a)" * MAX_DELIMITER_CHARS}),
            "fields.x.content_args.tag_pattern",
            "MAX_DELIMITER_CHARS",
        ),
        (_template(open=[f"<{i}>" for i in range(MAX_LITERALS + 1)]), "fields.x.open", "MAX_LITERALS"),
        (
            {"start_anchor": "<A>", "fields": {f"f{i}": {"open": f"<{i}>"} for i in range(MAX_FIELDS + 1)}},
            "fields",
            "MAX_FIELDS",
        ),
        ({**_template(open="<x>"), "defaults": {"d": "x" * MAX_TEMPLATE_CHARS}}, "template", "MAX_TEMPLATE_CHARS"),
    ],
    ids=["open", "open-list", "open_pattern", "start_anchor", "tag_pattern", "literals", "fields", "template"],
)
def test_templates_past_the_limits_are_refused_at_their_path(template, path, limit):
    with pytest.raises(respc.TemplateError) as caught:
        validate_template(template)
    assert caught.value.path == path
    assert limit in str(caught.value) and "limit" in str(caught.value)


def test_templates_at_the_limits_are_accepted():
    validate_template(_template(open=LONG, close=[LONG[:-1] + "]"] * 1 + [f"</{i}>" for i in range(MAX_LITERALS - 1)]))
    validate_template({"start_anchor": "<A>", "fields": {f"f{i}": {"open": f"<{i}>"} for i in range(MAX_FIELDS)}})


def _held_entries(source: str) -> int:
    """How many strings the module's beginning sets hold (the _HELD_ / _BEGINNINGS_ frozensets)."""
    module: dict = {}
    exec(compile(source, "<limits>", "exec"), module)
    return sum(len(v) for k, v in module.items() if isinstance(v, frozenset) and k.startswith(("_HELD_", "_BEGINNINGS_")))


def test_a_long_literal_compiles_to_code_of_its_own_size():
    """A delimiter as long as the limit allows: the generated module and the compile's memory
    grow with the template, not with the square of the delimiter (every beginning of a
    4,096-character literal is 8 million characters)."""
    template = _template(open=LONG, close=[LONG[:-1] + "]", "</x>"])
    size = len(str(template))
    tracemalloc.start()
    try:
        _, source = compile_source(template, format=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(source) < 60_000 + 10 * size, len(source)
    assert _held_entries(source) <= 3 * SHORT_BEGINNINGS + 8
    assert peak < 50_000_000 + 200 * size, peak


def test_many_fields_and_alternatives_compile_to_code_linear_in_their_number():
    """The generated module grows linearly with the fields (each field's scan and its watch
    in the free state) and with a pattern's alternatives."""

    def fields(n: int) -> int:
        return len(compile_source({"start_anchor": "<A>", "fields": {f"f{i}": {"open": f"<f{i}>", "close": f"</f{i}>"} for i in range(n)}}, format=False)[1])

    small, large = fields(MAX_FIELDS // 4), fields(MAX_FIELDS)
    assert large < 5 * small, (small, large)

    def alternatives(n: int) -> int:
        return len(compile_source(_template(open_pattern="|".join(f"<t{i}>" for i in range(n))), format=False)[1])

    small, large = alternatives(100), alternatives(600)
    assert large < 7 * small, (small, large)


def _chunks(rng: random.Random, text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        k = rng.choice([1, 1, 3, 8, 50, 200])
        out.append(text[i : i + k])
        i += k
    return out


def test_long_literals_stream_exactly_like_the_reference():
    """Literals past SHORT_BEGINNINGS (their long beginnings asked with startswith): every
    event equals the reference's, in random chunks that end inside a literal's long
    beginnings, near misses and all."""
    rng = random.Random("long-literals")
    head = "<" + "".join(rng.choice("ab") for _ in range(150))
    templates = [
        _template(open=head + ">", close="</x>"),
        _template(open=[head + ">", head + "]", "<y>"], close=["</x>", head[:100] + "/>"]),
        {"start_anchor": "<A>", "fields": {"content": {"content": "text", "close": head + "!"},
                                           "x": {"open": head + ">", "close": "</x>"}}},
    ]
    pieces = [head, head[:70], head[:140], head[:-1], ">", "]", "!", "</x>", "<y>", "text ", head[:100] + "/>", "<"]
    for number, template in enumerate(templates):
        compiled = respc.compile_template(template)
        assert "_scan.long_beginning" in compiled.source or "_LONG" in compiled.source
        for case in range(25):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))
            chunks = _chunks(rng, text)
            ref = harness.run_stream(lambda: chat_parsing.ResponseParser(template, prefix=""), chunks, 60)
            got = harness.run_stream(lambda: compiled.parser(prefix=""), chunks, 60)
            diff = harness.compare(ref, got, False)
            assert diff is None, f"template {number} case {case}: {diff}; chunks={chunks!r}"
