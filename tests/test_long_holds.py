"""Long holds stay exact: a delimiter held over a long run of text (a whitespace run, a tool
name or header being written) is set aside without rescanning (a *lasting hold*, see
runtime/base.py), and every event still equals the reference's, feed by feed.

Seeded: each case prints its template, text and chunking on failure. Linearity itself is
shown by the bench (bench/bench.py --only holds), not timed here.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent / "differential"
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from optional import needs

needs("transformers.utils.chat_parsing")

pytestmark = pytest.mark.slow  # (the quick tier, pytest -m "not slow", leaves this module out)

import harness  # noqa: E402
from transformers.utils import chat_parsing  # noqa: E402  (the behavioural reference)

import respc  # noqa: E402

#: (template, head written before the run, characters the run is made of, endings); the
#: gpt-oss name after "to=functions." is in one of two alternatives of its header, held by
#: that alternative alone (regexinfo.run_splits through its first group)
UNCOVERED: set[tuple[str, str]] = set()
CASES = [
    ("qwen3-coder", "<tool_call>\n<function=", "get_weather_x", [">\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>", "\nrest", "<x", "", ">"]),
    ("qwen3-coder", "Hi <tool_call>\n", " \n\t", ["<function=f>\n</function>\n</tool_call>", "text", ""]),
    ("gpt-oss", "<|channel|>commentary to=functions.get_weather <|constrain|>json", " \n", ['<|message|>{"a": 1}<|call|>', "x<|message|>{}<|call|>", ""]),
    ("gpt-oss", "<|channel|>analysis<|message|>hm<|end|><|start|>assistant to=functions.f", "abc", ["<|channel|>commentary json<|message|>{}<|call|>", " x", ""]),
    # the name in the channel-first header, followed by an optional constraint (regexinfo.run_splits:
    # a REST that cannot match without a character out of the run, <|message|>'s <)
    ("gpt-oss", "<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>commentary to=functions.", "get_w1.", [" <|constrain|>json<|message|>{}<|call|>", "<|message|>{}<|call|>", "json<|message|>{}<|call|>", " x", "<x", ""]),
    ("qwen3", "Hello", " \t\n", ["<|im_end|>", "more text", ""]),
    ("deepseek-v3.2", 'x<｜DSML｜function_calls>\n<｜DSML｜invoke name="', "get_w", ['">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>', '"', ""]),
    ("minimax-m2", '<minimax:tool_call>\n<invoke name="', "abc_", ['">\n</invoke>\n</minimax:tool_call>', "\n", ""]),
    # a call list being written, its open's lookahead over the whole list still pending
    # (regexinfo.gap_split: held until the literal every end of the list ends with)
    ("lfm2", '<|tool_call_start|>[get_weather(city="', "Pa ris,)]", ['")]<|tool_call_end|>ok', '")]<|im_end|>', '")]', "", '")] <|tool_call_end|>']),
    # lfm2's call close \s*(?:<\|tool_call_end\|>\s*|(?=<\|im_end\|>)) followed by mixed whitespace:
    # its match grows with the run (regexinfo.run_splits through its group)
    ("lfm2", "<|tool_call_start|>[f(a=1)]<|tool_call_end|>", " \n\t", ["ok", "<|im_end|>", "", "<|tool_call_start|>[g()]<|tool_call_end|>"]),
    ("llama3.2-pythonic", "[f(a='", "x y)]", ["')]<|eot_id|>", "')]<|eom_id|>x", "')]", "<|eot_id|>", ""]),
    ("llama4", '<|python_start|>[f(a="', "x y)]|", ['")]<|python_end|>', '")]<|eot|>', '")]', "<|eom|>", ""]),
]


def _chunks(rng: random.Random, text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        k = rng.choice([1, 2, 4, 4, 7, 16, 64])
        out.append(text[i : i + k])
        i += k
    return out


def _holds_lastingly(compiled, chunks: list[str], runs_only: bool = False) -> bool:
    """True when some feed of ``chunks`` set the held text aside (a lasting hold; with
    ``runs_only``, one of a run of a character class). A parser that raises (as the
    reference does, compared by the caller) counts what it did until then."""
    parser = compiled.parser(prefix="")
    try:
        for chunk in chunks:
            parser.feed(chunk)
            if parser._stable is not None and not (runs_only and type(parser._stable) is str):
                return True
    except ValueError:
        pass
    return False


@pytest.mark.parametrize("name, head, run, endings", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_long_holds_match_the_reference(name, head, run, endings):
    compiled = respc.load(name)
    template = compiled.template
    rng = random.Random(f"long-holds-{name}-{head}")
    held_lasting = 0
    for case in range(12):
        length = rng.choice([300, 700, 1500, 3000])
        body = head + "".join(rng.choice(run) for _ in range(length))
        text = body + rng.choice(endings)
        chunks = _chunks(rng, text)
        ref = harness.run_stream(lambda: chat_parsing.ResponseParser(template, prefix=""), chunks, 60)
        got = harness.run_stream(lambda: compiled.parser(prefix=""), chunks, 60)
        diff = harness.compare(ref, got, False)
        assert diff is None, f"{name} case {case}: {diff}; chunks={chunks!r}"
        # the mechanism under test engaged while the run was written (not only after it)
        held_lasting += _holds_lastingly(compiled, _chunks(rng, body))
    if (name, head) not in UNCOVERED:
        assert held_lasting, f"{name}: no lasting hold engaged (the long run was rescanned at every chunk)"


#: pieces of random delimiters HEAD C+ F REST (regexinfo.run_splits' shape, and near misses)
_HEADS = {  # pattern -> text that matches it
    "<f=": "<f=",
    "<tool_call>\\s*<function=": "<tool_call>\n<function=",
    "\\s*<a>": " <a>",
    "x": "x",
    "(?:<a>|<bb>)": "<bb>",
    "<a>\\s*(?:k|kk)?": "<a> kk",
}
_CLASSES = ["[^>]", "[^>\\n]", "[a-z]", "\\s", "[^<\\s]", ".", "\\w", '[^"]']
_STOPS = [">", "<", '"', "!", "\\n"]
_RESTS = ["", ">", "x", "\\s*</f>", "(?:y|z)", "b?c"]
_ALPHABET = ["<f=", "<a>", "<bb>", "<tool_call>", "<function=", "a", "b", "k", " ", "\n", ">", "<", '"', "!", "x", "y", "z", "c", "</f>", "</x>", "é"]


def test_random_run_delimiters_match_the_reference():
    """Random templates whose open or close is ``HEAD C+ F REST`` (or close to it), on texts
    that write the head and then a long run, in random chunks: every event equals the
    reference's, and lasting holds do engage."""
    rng = random.Random("long-holds-random")
    engaged = 0
    for case in range(150):
        head = rng.choice(list(_HEADS))
        group = rng.choice(["{}", "(?P<name>{})", "(?:{})"])
        pattern = head + group.format(rng.choice(_CLASSES) + rng.choice("+*")) + rng.choice(_STOPS) + rng.choice(_RESTS)
        if rng.random() < 0.5:
            fields = {"content": {"content": "text"}, "x": {"open_pattern": pattern, "close": "</x>", "content": "text"}}
        else:
            fields = {"content": {"close_pattern": pattern, "content": "text"}}
        template = {"start_anchor": "<S>", "fields": fields}
        try:
            compiled = respc.compile_template(template)
        except respc.TemplateError:
            continue  # named groups without a transform: the reference refuses it as well
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 3)))
        text += (_HEADS[head] if rng.random() < 0.8 else "") + rng.choice("ab \né") * rng.randint(260, 1200)
        text += "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 5)))
        chunks = _chunks(rng, text)
        ref = harness.run_stream(lambda: chat_parsing.ResponseParser(template, prefix=""), chunks, 60)
        got = harness.run_stream(lambda: compiled.parser(prefix=""), chunks, 60)
        diff = harness.compare(ref, got, False)
        assert diff is None, f"case {case}: pattern {pattern!r}: {diff}; chunks={chunks!r}"
        engaged += _holds_lastingly(compiled, chunks, runs_only=True)
    assert engaged >= 10, f"only {engaged} of 150 cases held a run lastingly"


#: alternatives of a leading group (regexinfo.run_splits through it): (pattern text, text
#: that matches it); the run is in one of them, the others start with a character of their own
_OWN = [("<f=", "<f="), ("to=f\\.", "to=f."), ("<a>x", "<a>x")]
_OTHERS = ["<c>", "y", "<b>k", "t"]
_AFTER = ["\\s*<m>", "<m>", ">", "(?:y|z)", "\\s*<\\|x\\|>", "\\s*(?:<m>|<n>)x", "(?: ?(?:<c>)?[\\w-]+)?\\s*<m>", "(?:x|<n>)+"]


def test_random_runs_in_an_alternative_match_the_reference():
    """Random templates whose open is ``W(?:A1|A2)R`` with a run of one class in one
    alternative (gpt-oss's tool header, in either order), on texts that write that
    alternative's head and then a long run, in random chunks: every event equals the
    reference's, and lasting holds engage (where the alternatives start apart)."""
    rng = random.Random("long-holds-alternatives")
    engaged = 0
    for case in range(100):
        own, own_text = rng.choice(_OWN)
        run_class = rng.choice(_CLASSES)
        alternatives = [own + "(?:" + run_class + "+)" + rng.choice(["", "\\s*<c>", ">"]), rng.choice(_OTHERS)]
        rng.shuffle(alternatives)
        pattern = rng.choice(["\\s*", ""]) + "(?:" + "|".join(alternatives) + ")" + rng.choice(_AFTER)
        template = {
            "start_anchor": "<S>",
            "fields": {"content": {"content": "text"}, "x": {"open_pattern": pattern, "close": "</x>", "content": "text"}},
        }
        compiled = respc.compile_template(template)
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 3))) + rng.choice(["", " ", "\n "])
        text += own_text + rng.choice("ab \né") * rng.randint(260, 1200)
        text += "".join(rng.choice(_ALPHABET + ["<m>", "<|x|>", "<n>x"]) for _ in range(rng.randint(0, 5)))
        chunks = _chunks(rng, text)
        ref = harness.run_stream(lambda: chat_parsing.ResponseParser(template, prefix=""), chunks, 60)
        got = harness.run_stream(lambda: compiled.parser(prefix=""), chunks, 60)
        diff = harness.compare(ref, got, False)
        assert diff is None, f"case {case}: pattern {pattern!r}: {diff}; chunks={chunks!r}"
        engaged += _holds_run(compiled, chunks, run_class)
    assert engaged >= 10, f"only {engaged} of 100 cases held the alternative's run lastingly"


def _holds_run(compiled, chunks: list[str], run_class: str) -> bool:
    """True when some feed of ``chunks`` set the held text aside as a run of ``run_class``."""
    parser = compiled.parser(prefix="")
    try:
        for chunk in chunks:
            parser.feed(chunk)
            stable = parser._stable
            if stable is not None and getattr(stable, "pattern", None) == run_class + "+":
                return True
    except ValueError:
        pass
    return False


#: pieces of random opens P(?=H.*T) that wait for a whole call list (regexinfo.gap_split)
_LOOK_P = ["x", "\\s*", "<t>\\s*", "(?:\\A\\s*|<t>\\s*)"]
_LOOK_H = ["\\[", "\\[\\s*[a-z]+\\s*\\(", "a"]
_LOOK_T = ["\\)\\s*\\]\\s*(?:<e>|<m>|\\Z)", "\\)(?:<e>|\\Z)", "b>", "\\](?:<e>|<xe>)"]
_LOOK_ALPHABET = ["[", "(", ")", "]", "<e>", "<m>", "<xe>", "<t>", "a", "b", "b>", " ", "\n", "f", "x", "<"]


def test_random_lookahead_gaps_match_the_reference():
    """Random templates whose open waits for a whole call list, ``P(?=H.*T)``, on texts that
    write its head and then a long body, in random chunks: every event equals the
    reference's, and the held match lasts (no rescan) while the body is written."""
    rng = random.Random("long-holds-lookahead")
    engaged = 0
    for case in range(120):
        head = rng.choice(_LOOK_H)
        pattern = rng.choice(_LOOK_P) + "(?=" + head + rng.choice([".*", ".*?"]) + rng.choice(_LOOK_T) + ")"
        close = rng.choice(["\\s*(?:<e>|<m>)[\\s\\S]*", "</x>", "\\s*(?:<e>\\s*|(?=<m>))"])
        template = {
            "start_anchor": "<S>",
            "fields": {"content": {"content": "text"}, "x": {"open_pattern": pattern, "close_pattern": close, "content": "text"}},
        }
        compiled = respc.compile_template(template)
        lead_in = rng.choice(["", " ", "<t>", "x", "ab "])
        opening = {"\\[": "[", "\\[\\s*[a-z]+\\s*\\(": "[ fa(", "a": "a"}[head]
        body = lead_in + opening + "".join(rng.choice("ab ()x\n[é") for _ in range(rng.randint(260, 900)))
        text = body + "".join(rng.choice(_LOOK_ALPHABET) for _ in range(rng.randint(0, 6)))
        chunks = _chunks(rng, text)
        ref = harness.run_stream(lambda: chat_parsing.ResponseParser(template, prefix=""), chunks, 60)
        got = harness.run_stream(lambda: compiled.parser(prefix=""), chunks, 60)
        diff = harness.compare(ref, got, False)
        assert diff is None, f"case {case}: pattern {pattern!r}, close {close!r}: {diff}; chunks={chunks!r}"
        engaged += _holds_gap(compiled, _chunks(rng, body))
    assert engaged >= 40, f"only {engaged} of 120 cases held the call list lastingly"


def _holds_gap(compiled, chunks: list[str]) -> bool:
    """True when some feed of ``chunks`` set the held text aside until a literal (a gap memo)."""
    parser = compiled.parser(prefix="")
    try:
        for chunk in chunks:
            parser.feed(chunk)
            if type(parser._stable) is str and parser._stable:
                return True
    except ValueError:
        pass
    return False


@pytest.mark.parametrize("family", ["qwen3"])
def test_an_unbounded_context_is_not_copied_at_every_quiet_chunk(family):
    """A template with an unbounded look-behind context (CONTEXT < 0: qwen3's content close)
    keeps all consumed input as context. While a long argument streams, no chunk commits
    anything: the context's pieces are kept and joined when a scan reads them, so the joined
    context does not grow chunk by chunk (it did: a copy of the whole output per chunk, 114 µs
    per chunk at a 1 MB argument), and the message is the same as a whole parse."""
    compiled = respc.load(family)
    parser_class = type(compiled.parser(prefix=""))
    if parser_class.CONTEXT >= 0:
        pytest.skip(f"{family}'s context is bounded ({parser_class.CONTEXT})")
    text = '<tool_call>\n{"name": "f", "arguments": {"a": "' + "x" * 4_000 + '"}}\n</tool_call>'
    parser = compiled.parser(prefix="")
    parser.initial_events
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    sizes = []
    for k, chunk in enumerate(chunks):
        parser.feed(chunk)
        if k in (len(chunks) // 3, 2 * len(chunks) // 3):
            sizes.append(len(parser._ctx))
    assert sizes[0] == sizes[1], f"{family}: the joined context grew from {sizes[0]} to {sizes[1]} characters while nothing committed"
    message, _ = parser.finalize()
    assert message == respc.parse_response(text, family, prefix="")


#: a long argument per family whose argument chunks go through a scan (its tool_calls state
#: has no quiet test, or the chunks hold its close's first character)
SCANNED_ARGUMENTS = {
    "firefunction-v2": ' functools[{"name": "f", "arguments": {"a": "' + "x y " * 1_000 + '"}}]',
    "qwen3.5": "<tool_call>\n<function=f>\n<parameter=a>\n" + "<b>x</b> " * 500 + "\n</parameter>\n</function>\n</tool_call>",
}


@pytest.mark.parametrize("family", sorted(SCANNED_ARGUMENTS))
def test_a_scanned_argument_reads_a_bounded_context(monkeypatch, family):
    """A template with an unbounded look-behind context (CONTEXT < 0) whose argument chunks
    are scanned: the scan of the tool_calls state reads only the end of the consumed text its
    close looks back on (scan.State.reach: firefunction-v2's ``(?<=\\}\\s*\\})``, qwen3.5's
    ``</tool_call>\\s*`` none), not all of it joined at every chunk (it did: the context a
    scan read grew with the argument, 71 µs per chunk at an 800 KB argument against 10 µs at
    50 KB), and the message is the same as a whole parse."""
    if respc.RUNTIME_INFO.startswith("compiled"):
        pytest.skip("wraps a state's scan, which the compiled runtime's State keeps read-only")
    compiled = respc.load(family)
    parser_class = compiled.Parser
    assert parser_class.CONTEXT < 0, f"{family}'s context is bounded ({parser_class.CONTEXT}): pick another family"
    calls = next(i for i, f in enumerate(parser_class.FIELDS) if f.name == "tool_calls")
    read: list[int] = []
    record = parser_class.STATES[calls]

    def counted(self, buf, pos, eos, scan=record.scan):
        read.append(pos)  # the context handed to the scan: buf[:pos] at a commit's first scan
        return scan(self, buf, pos, eos)

    monkeypatch.setattr(record, "scan", counted)
    text = SCANNED_ARGUMENTS[family]
    parser = compiled.parser(prefix="")
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    for chunk in chunks:
        parser.feed(chunk)
    message, _ = parser.finalize()
    assert len(read) > len(chunks) // 2, f"{family}: the argument's chunks were not scanned ({len(read)} scans)"
    assert max(read) < 256, f"{family}: a scan of the argument read {max(read)} characters of context"
    assert message == respc.parse_response(text, family, prefix="")
