"""The static regex facts the generated scans rely on agree with the regex engine.

Each property compares the shortcut with what `regex`'s own (partial) search says, on
randomly built patterns and texts (hypothesis, derandomized: seeded and reproducible;
a failure prints the pattern and text).
"""

from __future__ import annotations

import sys

import pytest
import regex
from optional import needs

needs("hypothesis")

from hypothesis import given, settings
from hypothesis import strategies as st

from respc.compiler.regexinfo import gap_split, lazy_group_split, lead, leans_on_end, lookback, regex_only, word_key_head
from respc.runtime.content import _tag_matches
from respc.runtime.base import _captures
from respc.runtime.scan import REGEX_WS, ws_run_start

FLAGS = regex.DOTALL
ALPHABET = "ab<|. \n"

ATOMS = ["a", "b", "<", r"\|", r"\.", " ", r"\s", r"\w", ".", "[ab]", "[<a]", r"\n"]
QUANTS = ["", "", "", "?", "*", "+", "{2}", "*?", "+?"]


@st.composite
def sequences(draw, depth=0):
    items = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 2 and draw(st.integers(0, 5)) == 0:
            branches = draw(st.lists(sequences(depth + 1), min_size=1, max_size=3))
            kind = draw(st.sampled_from(["(?:", "(?P<g%d>" % depth, "("]))
            atom = kind + "|".join(branches) + ")"
        else:
            atom = draw(st.sampled_from(ATOMS))
        items.append(atom + draw(st.sampled_from(QUANTS)))
    return "".join(items)


@st.composite
def patterns(draw):
    branches = draw(st.lists(sequences(), min_size=1, max_size=2))
    if draw(st.booleans()):
        branches[0] = draw(st.sampled_from([r"\s*", r"\s+"])) + branches[0]
        if len(branches) > 1 and draw(st.booleans()):
            branches[1:] = [draw(st.sampled_from([r"\s*", r"\s+"])) + b for b in branches[1:]]
    if draw(st.integers(0, 3)) == 0:
        branches = [branches[0] + draw(st.sampled_from([".*?", ".*"])) + draw(st.sampled_from(["<b>", r"<\|m\|>", "ab"]))]
    return "|".join(branches)


texts = st.text(alphabet=ALPHABET, max_size=14)


def _compile(pattern):
    try:
        return regex.compile(pattern, FLAGS)
    except regex.error:
        return None


@pytest.mark.slow
@settings(max_examples=4000, deadline=None, derandomize=True)
@given(pattern=patterns(), text=texts)
def test_every_match_begins_as_lead_says(pattern, text):
    _check_lead(pattern, text)


@st.composite
def lookaround_patterns(draw):
    """Patterns with lookarounds: a lookahead first (which tells how a match begins) or
    any lookaround after the first element (which ``lead`` passes over)."""
    branches = []
    for _ in range(draw(st.integers(1, 2))):
        items = [draw(sequences(1))]
        kind = draw(st.sampled_from(["(?=", "(?!", "(?<=", "(?<!"]))
        look = kind + "|".join(draw(st.lists(sequences(1), min_size=1, max_size=2))) + ")"
        items.insert(draw(st.integers(0, 1)), look)
        if draw(st.booleans()):
            items.append(draw(sequences(1)))
        branch = "".join(items)
        if draw(st.booleans()):
            branch = draw(st.sampled_from([r"\s*", r"\s+"])) + branch
        branches.append(branch)
    return "|".join(branches)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, derandomize=True)
@given(pattern=lookaround_patterns(), text=texts)
def test_every_match_begins_as_lead_says_through_lookarounds(pattern, text):
    _check_lead(pattern, text)


def _check_lead(pattern, text):
    """Every (partial) match of ``pattern`` in ``text`` begins as ``lead(pattern)`` says."""
    info = lead(pattern)
    compiled = _compile(pattern)
    if info is None or compiled is None:
        return
    n = len(text)
    for p in range(n + 1):
        m = compiled.match(text, p, partial=True)
        if m is None or (m.partial and m.end() == p):
            continue  # no match, or the engine's empty "could still start here" at the end
        q = ws_run_start(text[::-1], 0, n - p)  # skip whitespace forwards
        q = p + ((n - p) - q) if info.ws else p
        if q < n:
            assert text[q] in info.firsts, (pattern, text, p)
            rest = text[q:]
            assert any(rest.startswith(s) or (m.partial and s.startswith(rest)) for s in info.prefixes), (
                pattern,
                text,
                p,
                info.prefixes,
            )
            # the long prefixes, through groups, too (scans skip a candidate none starts)
            if info.filters:
                assert any(rest.startswith(s) or (m.partial and s.startswith(rest)) for s in info.filters), (
                    pattern,
                    text,
                    p,
                    info.filters,
                )
        else:
            assert m.partial and info.ws, (pattern, text, p)


def _outcome_search(compiled, text, pos, eos):
    m = compiled.search(text, pos, partial=not eos)
    if m is not None and not m.partial:
        return ("match", m.span())
    if m is not None and m.end() > m.start():
        return ("hold", m.start())
    if m is not None and m.start() < len(text):
        return ("hold", m.start())
    return ("hold", len(text))


def _outcome_candidates(compiled, info, text, pos, eos):
    """The generated scan's candidate loop (emit._candidates), in plain Python."""
    firsts = sorted(info.firsts)

    def find(start):
        found = [i for i in (text.find(c, start) for c in firsts) if i >= 0]
        return min(found) if found else -1

    m = None
    i = find(pos)
    while i >= 0:
        rest = text[i:]
        if not any(rest.startswith(s) for s in info.prefixes) and (
            eos or not any(s.startswith(rest) for s in info.prefixes)
        ):
            i = find(i + 1)  # the generated filter: nothing can start here
            continue
        if info.ws:
            j = ws_run_start(text, pos, i)
            c = compiled.match(text, j, partial=not eos)
            if (c is None or c.partial) and j < i and not info.all_ws:
                d = compiled.match(text, i, partial=not eos)
                if d is not None and (c is None or not d.partial):
                    c = d
        else:
            c = compiled.match(text, i, partial=not eos)
        if c is not None:
            if not c.partial:
                m = c
                break
            if m is None:
                m = c
        i = find(i + 1)
    if m is not None and not m.partial:
        return ("match", m.span())
    if m is not None:
        return ("hold", m.start())
    if info.ws and not eos:
        return ("hold", ws_run_start(text, pos, len(text)))
    return ("hold", len(text))


@pytest.mark.slow
@settings(max_examples=1200, deadline=None, derandomize=True)
@given(pattern=patterns(), text=texts, data=st.data())
def test_candidate_loop_equals_regex_search(pattern, text, data):
    info = lead(pattern)
    compiled = _compile(pattern)
    if info is None or compiled is None:
        return
    pos = data.draw(st.integers(0, len(text)))
    for eos in (False, True):
        assert _outcome_candidates(compiled, info, text, pos, eos) == _outcome_search(compiled, text, pos, eos), (
            pattern,
            text,
            pos,
            eos,
        )


@pytest.mark.slow
@settings(max_examples=1200, deadline=None, derandomize=True)
@given(pattern=patterns(), text=texts, more=texts, data=st.data())
def test_held_gap_match_stays_held_until_its_tail_appears(pattern, text, more, data):
    split = gap_split(pattern)
    compiled = _compile(pattern)
    if split is None or compiled is None:
        return
    head, tail = split
    pos = data.draw(st.integers(0, len(text)))
    m = compiled.search(text, pos, partial=True)
    if m is None or not m.partial or m.end() == m.start():
        return
    h = m.start()
    if regex.compile(head, FLAGS).match(text, h) is None:
        return  # not memoized
    grown = text + more
    if grown.find(tail, max(len(text) - len(tail) + 1, h)) >= 0:
        return  # the tail showed up: the scan searches again
    again = compiled.search(grown, pos, partial=True)
    assert again is not None and again.partial and again.start() == h, (pattern, text, more, pos)


def test_lead_examples():
    assert lead(r"\s*<tool_call>\s*<function=(?P<name>\w+)>").firsts == {"<"}
    assert lead(r"\s*<tool_call>").ws
    assert lead(r"a.*?b|c").firsts == {"a", "c"}
    assert lead(r"(?:\[\[x\]\]|\#!)").firsts == {"[", "#"}
    for unknown in [r"\w+", r".x", r"a?b", r"(?i)ab", r"(?>a)b", r"(?<=a)b", r"(?!a)b", r"(?=a)?b", r"\s*", r"a|", "$", r"[^a]"]:
        assert lead(unknown) is None, unknown


def test_lead_reads_lookarounds():
    """Qwen3's reasoning close (``</think>`` or, before a call, nothing) and its content close
    (``</think>`` after a call's close, looked back at): matches begin with a known literal, so
    scans find them with ``str.find`` instead of searching the regex from every position
    (lead was None for any lookaround before)."""
    found = lead(r"</think>|(?=<tool_call>)")
    assert found is not None and found.prefixes == ("</think>", "<tool_call>") and not found.ws
    found = lead(r"\s*(?:</think>(?<=</tool_call>\s*</think>)|<\|im_end\|>[\s\S]*)")
    assert found is not None and found.ws and found.prefixes == ("</think>", "<|im_end|>")
    assert lead(r"\s*(?=\[TOOL_CALLS\])|\s*</s>").prefixes == ("</s>", "[TOOL_CALLS]")
    # a lookahead's own alternatives; a lookaround after the first literal ends the prefix
    assert lead(r"(?=ab|c)\w+").prefixes == ("ab", "c")
    assert lead(r"ab(?!c)d").prefixes == ("ab",)
    assert lead(r"<(?=a)a").filters == ()


def test_long_prefixes_go_through_groups():
    # gpt-oss's content open: candidates are found by <|channel|>, tried where a long one starts
    info = lead(r"<\|channel\|>(?:final|commentary)(?: ?(?:<\|constrain\|>)?[\w-]+)?<\|message\|>")
    assert info.prefixes == ("<|channel|>",)
    assert info.filters == ("<|channel|>commentary", "<|channel|>final")
    # through what follows a group, in each branch, after the whitespace
    info = lead(r"\s*(?:<\|c\|>(?:x|yz) to=f\.(?P<n>\w+)|to=f\.(?P<m>\w+))")
    assert info.filters == ("<|c|>x to=f.", "<|c|>yz to=f.", "to=f.")
    assert lead(r"<\|(?:end|call)\|>").filters == ("<|call|>", "<|end|>")
    # nothing longer known: no filters
    for none in [r"<t>", r"<(?:a|b)?x", r"<(?:a|b)*x", r"(?:<a|<b)", r"<(?=a)a", r"<(?:a|\w)"]:
        info = lead(none)
        assert info is None or info.filters == (), (none, info)
    # a group that repeats: its first time, not what follows it
    assert lead(r"<(?:a|b)+x").filters == ("<a", "<b")
    assert lead(r"<(?:ab|c){2}x").filters == ("<ab", "<c")


def test_gap_split_examples():
    pattern = r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>"
    assert gap_split(pattern) == (r"<\|channel\|>commentary to=functions\.(?P<name>\w+)", "<|message|>")
    assert gap_split(r"a.*b") == ("a", "b")
    for none in [r"a(.*?)b", r"a.*?b|c", r".*?b", r"a.*?\w", r"a.*?b+"]:
        assert gap_split(none) is None, none


def test_lookback_needs():
    assert lookback(r"<tool_call>(?P<name>\w+)") == 0
    assert lookback(r"\s*$") == 0
    assert lookback(r"^x") > 0 and lookback(r"\bword") > 0 and lookback(r"(?m)x") > 0
    assert lookback(r"[^x]y") == 0
    assert lookback(r"(?<=a)b") == -1 and lookback(r"(?<!a)b") == -1 and lookback(r"(?r)ab") == -1


def test_regex_whitespace_set_is_exact():
    pattern = regex.compile(r"\s")
    expected = {chr(c) for c in range(sys.maxunicode + 1) if pattern.match(chr(c))}
    assert set(REGEX_WS) == expected


@st.composite
def tag_patterns(draw):
    """``HEAD(?P<value>.*?)[\\s*|C?]TAIL`` with a random HEAD (which may name a ``key``)."""
    head = draw(sequences())
    if draw(st.booleans()):
        head = draw(st.sampled_from(["<", "<(?P<key>\\w+)>", "a(?P<key>[ab]+)"])) + head
    ws = draw(st.sampled_from(["", "\\s*", "\\n?", "a?", " ?", "<?"]))
    tail = draw(st.sampled_from(["<b>", "</a>", "ab", " b", "\\|", "\\n<"]))
    return head + "(?P<value>.*?)" + ws + tail


tag_texts = st.text(alphabet="ab<>/|. \n", max_size=24)


@pytest.mark.slow
@settings(max_examples=2500, deadline=None, derandomize=True)
@given(pattern=tag_patterns(), text=tag_texts)
def test_lazy_group_split_finds_the_same_matches(pattern, text):
    split = lazy_group_split(pattern)
    compiled = _compile(pattern)
    if compiled is None:
        return
    assert split is not None, pattern
    want = [(m.groupdict().get("key"), m.group("value")) for m in compiled.finditer(text)]
    got = _tag_matches(pattern, split)(text)
    assert got == _tag_matches(pattern, None)(text)
    assert got == want, (pattern, text)


def test_lazy_group_split_examples():
    assert lazy_group_split(r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>") == (
        r"<parameter=(?P<key>\w+)>\s*",
        True,
        "</parameter>",
    )
    assert lazy_group_split(r"<(?P<key>\w+)>(?P<value>.*?)</x>") == (r"<(?P<key>\w+)>", False, "</x>")
    assert lazy_group_split(r"<p=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</p>") == (
        r"<p=(?P<key>[^>\n]+)>\n?",
        False,
        "</p>",
        "\n",
    )
    for none in [
        r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",  # backreference
        r"<(?P<key>\w+)>(?P<value>.*?)\s*?</x>",  # lazy whitespace
        r"<(?P<key>\w+)>(?P<value>.*)</x>",  # greedy value
        r"(?i)<(?P<key>\w+)>(?P<value>.*?)</x>",  # inline flags
        r"<(?P<key>\w+)>(?P<value>.*?)</x>|y",  # alternatives
        r"<(?P<key>\w+)>(?P<value>.*?)</x>+",  # not a literal tail
    ]:
        assert lazy_group_split(none) is None, none


#: heads of word_key_head's shape, with their tails (the value group and the \s* between)
KEYED_TAGS = [
    (r"<parameter=(?P<key>\w+)>\s*", r"\s*</parameter>"),
    (r"<parameter=(?P<key>\w+)>", r"</parameter>"),
    (r"<(?P<key>\w+)>\s*", r"\s*</>"),
    (r"<arg (?P<key>\w+)=\s*", r";"),
    (r"a(?P<key>\w+)\.", r"\.\."),
    (r"<parameter=(?P<key>\w+)>\n?", r"\n?</parameter>"),
    # a negated key set (Qwen3-Coder's real tag), with and without an optional character
    (r"<parameter=(?P<key>[^>\n]+)>\n?", r"\n?</parameter>"),
    (r"<parameter=(?P<key>[^>]+)>", r"</parameter>"),
    (r"<(?P<key>[^>= ]+)>>\s*", r"\s*</>"),
    (r"<arg (?P<key>[^=;]+)= ?", r";"),
]
#: pieces of those tags, near misses, ASCII and other word characters (letters, digits,
#: marks, connector punctuation), and whitespace \s matches (ASCII and not)
KEYED_PIECES = st.sampled_from(
    ["<parameter=", "<parameter=", ">", "</parameter>", "<", "</>", "<arg ", "=", ";", "a", ".", "..", ">>",
     "x", "k_1", "_", "9", "é", "ß", "٣", "\u0301", "\u203f", "²", "-", "$", " ", "\n", "\x1c", "\u2028", "\u3000"]
)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, derandomize=True)
@given(tag=st.sampled_from(KEYED_TAGS), pieces=st.lists(KEYED_PIECES, max_size=30))
def test_word_key_head_finds_the_same_matches(tag, pieces):
    """xml-inline with the head found by str.find (word_key_head) gives the regex's matches."""
    head, tail = tag
    pattern = head + "(?P<value>.*?)" + tail
    split = lazy_group_split(pattern)
    key_head = word_key_head(split[0])
    assert key_head is not None, head
    text = "".join(pieces)
    want = [(m.group("key"), m.group("value")) for m in regex.compile(pattern, regex.DOTALL).finditer(text)]
    assert _tag_matches(pattern, split, key_head)(text) == want, (pattern, text)


def test_word_key_head_examples():
    assert word_key_head(r"<parameter=(?P<key>\w+)>\s*") == ("<parameter=", ">", True, "", "")
    assert word_key_head(r"<(?P<key>\w+)>") == ("<", ">", False, "", "")
    assert word_key_head(r"<arg\ (?P<key>\w+)\=") == ("<arg ", "=", False, "", "")
    # a negated set of literal characters, one of which starts CLOSE; an optional character
    assert word_key_head(r"<parameter=(?P<key>[^>\n]+)>\n?") == ("<parameter=", ">", False, "\n>", "\n")
    assert word_key_head(r"<p=(?P<key>[^>]+)>\?") == ("<p=", ">?", False, ">", "")  # an escaped ?
    assert word_key_head(r"<p=(?P<key>[^>]+)>\\?") == ("<p=", ">", False, ">", "\\")  # an optional backslash
    for none in [
        r"(?P<key>\w+)>",  # no opening literal
        r"<(?P<key>\w+)",  # no closing literal
        r"<a(?P<key>\w+)b",  # closing starts with a word character
        r"<(?P<key>\w+)>\s+",  # not \s*
        r"<(?P<key>\w+)>\\s*",  # an escaped backslash, then s*
        r"(?i)<(?P<key>\w+)>",  # inline flags
        r"<(?P<key>\w+)(?P<x>a)>",  # another group
        r"<(?P<key>[a-z]+)>",  # another key class
        r"<(?P<key>\w+?)>",  # lazy key
        r"<.(?P<key>\w+)>",  # not a literal opening
        r"<(?P<key>[^<]+)>",  # CLOSE starts with a character the key set takes
        r"<(?P<key>[^>-]+)>",  # a set with a range character
        r"<(?P<key>[^\w>]+)>",  # a set with a class in it
        r"<(?P<key>[^>]*)>",  # the key may be empty
        r"<(?P<key>[^>]+)?",  # nothing but the optional character after the key
        r"<(?P<key>[^>]+)>\n?\s*",  # both an optional character and \s*
    ]:
        assert word_key_head(none) is None, none


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, derandomize=True)
@given(pattern=patterns(), ws=st.sampled_from(["", " ", "\n ", "\t"]), data=st.data())
def test_a_proper_beginning_of_a_prefix_is_a_partial_match(pattern, ws, data):
    """What runtime.scan.quiet_cut relies on: text that is (whitespace, for a
    whitespace-led pattern, then) a proper beginning of one of lead's prefixes is
    reported as a partial match from its start."""
    info = lead(pattern)
    compiled = _compile(pattern)
    if info is None or compiled is None or info.ws_required:
        return
    prefix = data.draw(st.sampled_from(info.prefixes))
    if len(prefix) < 2:
        return
    text = (ws if info.ws else "") + prefix[: data.draw(st.integers(1, len(prefix) - 1))]
    m = compiled.match(text, 0, partial=True)
    assert m is not None and m.partial and m.start() == 0, (pattern, text, m)


@pytest.mark.parametrize(
    "pattern, text",
    [
        (r"<tool_call>\s*<function=(?P<name>\w+)>", "<tool_call> <function=get>"),
        (r"(?P<a>x)|(?P<a>y)", "y"),  # one name, two branches
        (r"(?|(?P<a>x)|(?P<b>y))", "y"),  # branch reset
        (r"(?P<b>q)?(?P<a>x)(z)(?P<c>w)?", "xz"),  # groups that do not take part, an unnamed one
        (r"(?P<a>x)+(?P<e>)", "xxx"),  # a repeated group, an empty one
        (r"to=functions\.(?P<name>[\w.]+)\s*(?P<rest>.*?)<\|message\|>", "to=functions.f <|message|>"),
    ],
)
def test_captures_are_groupdict_less_the_absent(pattern, text):
    match = regex.compile(pattern).search(text)
    want = {k: v for k, v in match.groupdict().items() if v is not None}
    got = _captures(match)
    assert got == want and list(got) == list(want)


# --- leans_on_end: a pattern it clears never changes a match before the buffer's end ---
def _random_pattern(rng, depth=0):
    atoms = ["a", "b", "ab", " ", r"\s", r"\w", "[ab]", "[^a]", ".", r"\W", "\n", "$", r"\Z", "(?=b)", "(?!a)"]
    parts = []
    for _ in range(rng.randint(1, 4)):
        if depth < 2 and rng.random() < 0.25:
            inner = "|".join(_random_pattern(rng, depth + 1) for _ in range(rng.randint(1, 3)))
            atom = f"(?:{inner})"
        else:
            atom = rng.choice(atoms)
        if atom not in ("$", r"\Z") and not atom.startswith("(?=") and not atom.startswith("(?!") and rng.random() < 0.4:
            atom = (atom if len(atom) == 1 or atom.startswith(("\\", "[", "(")) else f"(?:{atom})") + rng.choice(
                ["*", "+", "?", "*?", "+?", "{1,2}"]
            )
        parts.append(atom)
    return "".join(parts)


def test_leans_on_end_is_sound_on_random_patterns():
    """For every random pattern that leans_on_end clears, every complete match that a partial
    search finds ending before the buffer's end is the same (span and groups) on the buffer
    with \\x00 appended: the reference's extra check could never hold it back."""
    import random

    rng = random.Random(5240)
    cleared = 0
    for _ in range(3000):
        pattern = _random_pattern(rng)
        try:
            rx = regex.compile(f"(?P<g>{pattern})", regex.DOTALL)
        except regex.error:
            continue
        leans = leans_on_end(f"(?P<g>{pattern})")
        if leans:
            continue
        cleared += 1
        for _ in range(6):
            buf = "".join(rng.choice("ab \n") for _ in range(rng.randint(1, 8)))
            for pos in range(len(buf)):
                m = rx.search(buf, pos, partial=True)
                if m is None or m.partial or m.end() == len(buf):
                    continue
                again = rx.match(buf + "\x00", m.start())
                assert again is not None and again.span() == m.span() and again.groupdict() == m.groupdict(), (
                    f"pattern {pattern!r} buffer {buf!r} pos {pos}: {m} vs {again}"
                )
    assert cleared > 300


@pytest.mark.parametrize(
    "pattern,expected",
    [
        (r"\s*<tool_call>", False),
        (r"<t>(?P<b>.*?)</t>", False),
        (r"[^<\s]+", True),  # a run that may reach the end and take \x00
        (r"a$", True),
        (r"a\Z", True),
        (r"x(?=\n|$)", True),
        (r"a[^b]*\W", True),
        (r"(?:<t>){e<=1}", True),  # regex-module syntax: not understood, so assumed
    ],
)
def test_leans_on_end_examples(pattern, expected):
    assert leans_on_end(pattern) is expected


@pytest.mark.parametrize("pattern", [r"(?:<t>){e<=1}", r"\p{L}+", r"[[:alpha:]]", r"(?|(a)|(b))", r"{x}"])
def test_regex_only_syntax_is_recognised(pattern):
    assert regex_only(pattern)


def test_fuzzy_delimiter_matches_as_the_reference_does():
    import respc
    needs("transformers.utils.chat_parsing")
    from transformers.utils.chat_parsing import parse_response as ref_parse

    template = {"start_anchor": "S", "fields": {"x": {"open_pattern": "(?:<t>){e<=1}", "close": "</t>"}, "content": {}}}
    text = "hello <x>abc</t> bye"
    assert respc.parse_response(text, template, prefix="") == ref_parse(text, template, prefix="") == {
        "content": "bye",
        "x": "abc",
    }


# --- whitespace guards (regexinfo.ws_guarded) ----------------------------------------
WS_RUNS = [r"\s*", r"\s+", r"[^\S\n]*", r"[ \t]+", r" *", r"\n*"]
WS_TEXTS = st.text(alphabet="ab<|. \n\t", max_size=16)


@st.composite
def guardable(draw):
    """Alternatives that start with a whitespace run, an optional group before one (its own
    alternatives whitespace-led or not), a lookbehind, or a literal."""
    branches = []
    for _ in range(draw(st.integers(1, 3))):
        run = draw(st.sampled_from(WS_RUNS))
        kind = draw(st.integers(0, 4))
        rest = draw(sequences(1))
        if kind == 0:
            branch = run + rest
        elif kind == 1:
            inner = "|".join(draw(st.lists(st.sampled_from(["<a", r"\|b", run + "<", r"\s*\.", "a"]), min_size=1, max_size=2)))
            branch = f"(?:{inner})?{run}{rest}"
        elif kind == 2:
            branch = draw(st.sampled_from([r"(?<=\n)", r"(?<=a)", r"(?<=\s)"])) + run + rest
        elif kind == 3:
            branch = f"(?:(?:<a)?{run}b{rest})?<"
        else:
            branch = rest
        branches.append(branch)
    return "|".join(branches)


def _found(rx, text, pos, partial):
    m = rx.search(text, pos, partial=partial)
    return None if m is None else (m.span(), m.partial, m.groupdict())


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, derandomize=True)
@given(pattern=guardable(), text=WS_TEXTS, data=st.data())
def test_guarded_search_finds_what_the_pattern_finds(pattern, text, data):
    from respc.compiler.regexinfo import ws_guarded

    guarded = ws_guarded(pattern)
    compiled = _compile(pattern)
    if guarded is None or compiled is None:
        return
    rx = regex.compile(guarded, FLAGS)
    pos = data.draw(st.integers(0, len(text)))
    for partial in (False, True):
        assert _found(rx, text, pos, partial) == _found(compiled, text, pos, partial), (pattern, guarded, text, pos, partial)


@pytest.mark.parametrize(
    "pattern, guarded",
    [
        # a branch after a lookbehind that ends in a newline keeps no guard; the other has one
        (r"\s*<t>|(?<=\}\n)[ \t]*(?=\{)", r"(?:\G|(?<!\s))\s*<t>|(?<=\}\n)[ \t]*(?=\{)"),
        # an optional group before the run: the way around it runs behind the run's guard
        (r"(?:\s*<e>)?\s*->", r"(?:(?:\G|(?<!\s))\s*<e>|(?:\G|(?<!\s)))\s*->"),
        (r"(?:<s>\s*a)?[^\S\n]*to=", r"(?:<s>\s*a|(?:\G|(?<![^\S\n])))[^\S\n]*to="),
        # every alternative led by \s (or unable to start after whitespace): one guard for all
        (r"\s*a|\s*b", r"(?:\G|(?<!\s))(?:\s*a|\s*b)"),
        (r"a\s*", None),
        (r"\s*?a", None),
        (r"(?i)\s*a", None),
    ],
)
def test_ws_guarded_examples(pattern, guarded):
    from respc.compiler.regexinfo import ws_guarded

    assert ws_guarded(pattern) == guarded


@pytest.mark.parametrize(
    "pattern, bound",
    [
        # a back reference to a group that takes no whitespace takes none of a run either
        (r'<i n="(?:(?P<n>[^"\s]+?)(?:\.(?P=n))?|(?P<n>[^"]+?))">', 2),
        (r"(?P<a>\w+)x(?P=a)", 0),
        # ... one to a group that may: not known (the copy must match the run again)
        (r'<i n="(?P<n>[^"]+?)(?:\.(?P=n))?">', None),
        (r"(?P<a>\s*)x(?P=a)", None),
        # each group of the name written before it counts, not only the last
        (r"(?:(?P<a>\s)|(?P<a>\w))(?P=a)", None),
        (r"(?:(?P<a>\w)|(?P<a>\d))(?P=a)", 0),
    ],
)
def test_ws_pump_back_references(pattern, bound):
    from respc.compiler.regexinfo import ws_pump

    assert ws_pump(pattern) == bound


@pytest.mark.parametrize(
    "pattern, reads_back",
    [
        # muse-glimmer's answer open as it was: at every length the run backtracks through,
        # the negative lookbehind reads the run back to its start (1,000 spaces: 5.8 s)
        (r"(?:<s>\s*a)?[^\S\n]*(?:to=user)?(?<!<s>(?:user|tool[^<]*))<m>", True),
        (r"\s*(?<=x\s*)y", True),
        (r"(?<!a\s*)b", True),
        # a lookahead for the next character first keeps it to one place; a literal as well
        (r"(?:<s>\s*a)?[^\S\n]*(?:to=user)?(?=<m>)(?<!<s>(?:user|tool[^<]*))<m>", False),
        (r"\s*,(?<=x.*\},)", False),
        (r"x(?<=a\s*)", False),
        # a body that ends in a literal reads back one character where it fails
        (r"(?<=<t>(?:(?!</t>).)*\}[ \t]*\n)[ \t]*", False),
        # a positive lookbehind that ends the match is read once where it holds
        (r':\s*(?<=\[T\][\s\S]*)', False),
    ],
)
def test_ws_lookbehind_examples(pattern, reads_back):
    from respc.compiler.regexinfo import ws_lookbehind

    assert ws_lookbehind(pattern) is reads_back

def test_lookahead_gap_split_examples():
    # a call list's lookahead: the head, and the literal every end of the list ends with
    llama = r"(?:\A\s*|<\|python_tag\|>\s*)(?=\[\s*[A-Za-z_][\w.\-]*\s*\(.*\)\s*\]\s*(?:<\|eot_id\|>|<\|eom_id\|>|\Z))"
    assert gap_split(llama) == (r"(?:\A\s*|<\|python_tag\|>\s*)(?=\[\s*[A-Za-z_][\w.\-]*\s*\()", "_id|>")
    assert gap_split(r"x(?=a.*b)") == ("x(?=a)", "b")
    assert gap_split(r"x(?=a.*?(?:<b>|<c>))") == ("x(?=a)", ">")
    assert gap_split(r"x(?=\[.*\)(?:<a>|\Z))") == (r"x(?=\[)", "<a>")
    for refused in [
        r"x(?=a.*b)c",  # (the lookahead does not end the pattern)
        r"x\b(?=a.*b)",  # (a word boundary looks past the match)
        r"x(?=a.*(?:<a>|<b>|\Z))",  # (an end at \Z may follow anything: the gap may end in \x00)
        r"x(?=a.*.(?:<a>|\Z))",
        r"x(?=a.*(?:<a>|b))",  # (no common end)
        r"x(?=a.*[ab])",  # (no literal)
        r"x|y(?=a.*b)",
        r"(?=a.*b)",  # (nothing before the lookahead)
        r"(?i)x(?=a.*<b>)",  # (case-insensitive: the literal is not one text)
        r"x(?=a.*(?i:<b>))",
    ]:
        assert gap_split(refused) is None, refused


LOOKAHEAD_HEADS = ["x", r"\s*", r"(?:\A\s*|<\|t\|>\s*)", "<a>"]
LOOKAHEAD_TAILS = [r"\)(?:<b>|<\|m\|>)", r"\)\s*\]\s*(?:<b>|ab>|\Z)", "ab", r"\](?:<b>|\Z)"]


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, derandomize=True)
@given(
    before=st.sampled_from(LOOKAHEAD_HEADS),
    head=st.sampled_from(["", r"\[", r"\[\s*[ab]+\s*\(", "a"]),
    gap=st.sampled_from([".*", ".*?"]),
    tail=st.sampled_from(LOOKAHEAD_TAILS),
    text=st.text(alphabet="ab<|.[]() \nmt>", max_size=14),
    more=st.text(alphabet="ab<|.[]() \nmt>", max_size=8),
    data=st.data(),
)
def test_held_lookahead_gap_match_stays_held_until_its_tail_appears(before, head, gap, tail, text, more, data):
    """What the scans rely on for ``P(?=H.*T)`` (regexinfo.gap_split): once the head matched
    where a partial match is held, the text growing without the literal keeps it held there
    (partial, or complete but leaning on the end: scan.edge_moves)."""
    from respc.runtime.scan import edge_moves

    pattern = f"{before}(?={head}{gap}{tail})"
    split = gap_split(pattern)
    assert split is not None, pattern
    compiled = _compile(pattern)
    head_rx, literal = regex.compile(split[0], FLAGS), split[1]
    pos = data.draw(st.integers(0, len(text)))
    m = compiled.search(text, pos, partial=True)
    if m is None or not m.partial or head_rx.match(text, m.start()) is None:
        return
    h = m.start()
    grown = text + more
    if grown.find(literal, max(len(text) - len(literal) + 1, h)) >= 0:
        return  # the literal showed up: the scan searches again
    again = compiled.search(grown, pos, partial=True)
    assert again is not None and again.start() == h, (pattern, text, more, pos)
    assert again.partial or (again.end() == len(grown) or edge_moves(compiled, grown, again)), (pattern, text, more, pos)


def test_run_splits_through_a_leading_group():
    from respc.compiler.regexinfo import run_splits

    gpt_oss = (
        r"\s*(?:<\|channel\|>(?:commentary|analysis) to=functions\.(?P<name>[^<\s]+)|to=functions\.(?P<name>[^<\s]+)"
        r"\s*<\|channel\|>(?:commentary|analysis))(?: ?(?:<\|constrain\|>)?[\w-]+)?\s*<\|message\|>"
    )
    # the name written after to=functions. (the recipient first), held by that alternative alone
    assert (r"\s*to=functions\.", r"[^<\s]", "", "") in run_splits(gpt_oss)
    # ... and after <|channel|>commentary to=functions. (the channel first): what follows the name,
    # an optional constraint then <|message|>, cannot match without a character out of the run
    assert (r"\s*<\|channel\|>(?:commentary|analysis) to=functions\.", r"[^<\s]", "", "") in run_splits(gpt_oss)
    # a REST that may match within the run's characters alone is no split
    assert run_splits(r"(?:<a>[a-z]+|<b>)(?:<m>|<n>)+") == [("<a>", "[a-z]", "", "")]
    assert run_splits(r"(?:<a>[a-z]+|<b>)(?:x|<n>)+") == [] and run_splits(r"(?:<a>[a-z]+|<b>)(?:<n>)?") == []
    # alternatives whose prefixes are apart name one (a lookahead alternative by its body's)
    assert run_splits(r"(?:<a=[^<]+|<b)<") == [("<a=", "[^<]", "<", "")]
    assert run_splits(r"\s*(?:<\|e\|>\s*|(?=<\|m\|>))") == [(r"\s*<\|e\|>", r"\s", "", "")]
    # ... and alternatives one of whose prefixes starts another's do not: nothing through the group
    assert run_splits(r"(?:<a=[^<]+|<a)<") == []
    assert run_splits(r"\s*(?:<e>\s*|(?=<e))") == []


def test_lead_sees_through_a_leading_optional_group():
    """Kimi-K2's open, an optional section marker before its call marker: every match begins
    with whitespace and then ``<|tool_call`` (either marker), so scans can look for that literal
    instead of running the regex from every position (lead was None before)."""
    from respc.compiler.regexinfo import lead

    found = lead(r"\s*(?:<\|tool_calls?_section_begin\|>\s*)?<\|tool_call_begin\|>\s*(?P<name>[\w\-]+)")
    assert found is not None and found.ws and found.prefixes == ("<|tool_call",)
    both = lead(r"(?:a|b)?c|d")
    assert both is not None and set(both.prefixes) == {"a", "b", "c", "d"}
    assert lead(r"(?:ab)?") is None  # a branch that may match nothing has no lead
    assert lead(r"(?:ab)??c") is None  # a lazy optional group stays general


_PUMP_ATOMS = ["a", "b", "<", "x", "[a-z]", "[^<]", "\\w", ".", "[ab]", "(?=a)", "(?!b)", "(?<=a)", "(?<!<)", "\\b"]


def _pump_piece(rng) -> str:
    atom = rng.choice(_PUMP_ATOMS)
    roll = rng.random()
    if roll < 0.3 and not atom.startswith("(?") and atom != "\\b":
        return atom + rng.choice(["+", "*", "*?", "+?", "{2,}"])
    if roll < 0.45:
        return "(?:" + _pump_piece(rng) + rng.choice(["", "|" + _pump_piece(rng)]) + ")" + rng.choice(["", "?", "{2}"])
    if roll < 0.5:
        return "(?:" + atom + "b)" + rng.choice(["+", "*"])  # a repeated group of two: not known
    return atom


def test_any_pump_runs_match_alike():
    """Random patterns with a bound (regexinfo.any_pump): a run of one character ``2K + 9``
    long and one longer, between random texts, matches and searches alike from every start
    up to the run, partially or not (positions after the run counted from its end)."""
    import random

    import regex

    from respc.compiler.regexinfo import any_pump

    rng = random.Random("any-pump")
    checked = 0
    for case in range(400):
        pattern = "".join(_pump_piece(rng) for _ in range(rng.randint(1, 5)))
        k = any_pump(pattern)
        if k is None:
            continue
        rx = regex.compile(pattern, regex.DOTALL)
        before = "".join(rng.choice("ab<x ") for _ in range(rng.randint(0, 4)))
        after = "".join(rng.choice("ab<x ") for _ in range(rng.randint(0, 4)))
        c = rng.choice("abx< ")
        n = 2 * k + 9
        at = len(before)
        texts = [before + c * size + after for size in (n, n + 1)]

        def place(m, size):
            if m is None:
                return None
            # (a place in the run's first half counted from its start, in its second from its end)
            spot = lambda q: ("before", q) if q <= at + n // 2 else ("after", q - at - size)  # noqa: E731
            return bool(m.partial), spot(m.start()), spot(m.end())

        for start in range(at + 2):
            for partial in (False, True):
                for how in ("match", "search"):
                    got = [place(getattr(rx, how)(t, start, partial=partial), size) for t, size in zip(texts, (n, n + 1))]
                    assert got[0] == got[1], (case, pattern, k, texts[0], start, how, partial, got)
        checked += 1
    assert checked > 100, checked


# --- regexinfo.run_holds: a held match inside a run, read way by way --------------------
def _compiled_hold(entry):
    cls, alive, stops = entry
    return (
        regex.compile(cls + "+", FLAGS),
        regex.compile(alive, FLAGS),
        tuple(tuple((stop, regex.compile(rest, FLAGS)) for stop, rest in pairs) for pairs in stops),
    )


def test_run_holds_read_each_way():
    """The shapes run_splits does not read: a run in a group inside a group (Kimi-K2's name in
    its id), top-level alternatives and lookbehinds (granite's and mistral's opens), a
    lookahead before the run (functionary), an optional group with the run inside
    (devstral's call id), a trailing lookahead read as text (olmo3's call close); a back
    reference after the run is read as any text (muse-glimmer's doubled name)."""
    from respc.compiler.regexinfo import run_holds

    def entry(pattern, cls):
        found = {c: (alive, stops) for c, alive, stops in run_holds(pattern)}
        assert cls in found, (pattern, sorted(found))
        return found[cls]

    kimi = r"\s*(?:<\|tool_calls?_section_begin\|>\s*)?<\|tool_call_begin\|>\s*(?P<id>(?:[\w\-.]*\.)?(?P<name>[\w\-]+):\d+)\s*<\|tool_call_argument_begin\|>"
    alive, stops = entry(kimi, r"[\w\-]")
    assert regex.fullmatch(alive, "<|tool_call_begin|>functions.get_weather", FLAGS)
    assert all((":", r"\d+\s*<\|tool_call_argument_begin\|>") in pairs for pairs in stops)
    alive, _ = entry(r">>>(?!all\n)(?P<name>[A-Za-z_][\w.\-]*)\n", r"[\w.\-]")
    assert alive.endswith(r"[\w.\-]{4,}")  # (the lookahead reads 4 characters past where it is)
    alive, _ = entry(r'(?:\s*<x>\s*\[?|(?<=,))\s*\{\s*"(?P<name>[^"]+)"\s*:', '[^"]')
    assert regex.fullmatch(alive, ',{"get', FLAGS) is None and regex.fullmatch(f"(?:{alive})", ' <x>[{"get', FLAGS)
    alive, _ = entry(r"\[T\](?P<name>[^\[]+)(?:\[ID\][^\[]*)?\[A\]", r"[^\[]")
    assert regex.fullmatch(alive, "[T]get[ID]k7Q", FLAGS)
    alive, stops = entry(r"\)\s*</f>\s*|\)(?=\s*\n\s*[A-Za-z_][A-Za-z0-9_.\-]*\()", r"[A-Za-z0-9_.\-]")
    assert regex.fullmatch(alive, ")\nget_time", FLAGS) and ("(", "") in stops[-1]
    _, stops = entry(r'<i n="(?:(?P<name>[^"\s]+?)(?:\.(?P=name))?|(?P<name>[^"]+?))">', r'[^"\s]')
    assert all("(?P=" not in rest for pairs in stops for _, rest in pairs)
    # a way with no character out of the run: the class held leaves out its last one
    # (mistral's close, whose way without the id takes only \s and })
    assert [c for c, _, _ in run_holds(r'(?<=\})\s*(?:,\s*"id"\s*:\s*"[^"]*"\s*)?\}\s*(?:,|\])')] == [r"\s", r'(?:(?![\}])[^"])']
    # nothing to read: a way that takes no character at all, a back reference in the head
    assert run_holds(r"<a>[a-z]+;|[a-z]*") == []
    assert [c for c, _, _ in run_holds(r"(?P<q>[ab])(?P=q)[a-z]+;")] == []


#: (pattern, context before the held text, beginnings of held texts) for the soundness check
_HOLD_CASES = [
    (r"\s*(?:<\|s\|>\s*)?<\|c\|>\s*(?P<id>(?:[\w\-.]*\.)?(?P<name>[\w\-]+):\d+)\s*<\|a\|>", "", ["<|c|>", "<|s|><|c|>f.", "<|c|>x:1", " <|c|>a.b"]),
    (r'(?<=\})\s*(?:,\s*"id"\s*:\s*"[^"]*"\s*)?\}\s*(?:,(?=\s*\{)|\]|(?=</s>)|\Z)', "}", [', "id": "', ' , "id":"a}', "  "]),
    (r'(?:\A\s*|<\|p\|>\s*|(?<=\}\s*;)\s*)\{\s*(?:"type"\s*:\s*"f"\s*,\s*)?"name"\s*:\s*"(?P<name>[^"]+)"\s*,\s*"(?:parameters|arguments)"\s*:\s*', "x", ['<|p|>{"name": "', '<|p|>{"type": "f", "name": "a', '<|p|>{"name": "a", ']),
    (r">>>(?!all\n)(?P<name>[A-Za-z_][\w.\-]*)\n", "", [">>>", ">>>al", ">>>a.b"]),
    (r"\)\s*</f>\s*|\)(?=\s*\n\s*[A-Za-z_][A-Za-z0-9_.\-]*\()", "", [")\n", ") \n a", ")\nab(c"]),
    (r'<i n="(?:(?P<name>[^"\s]+?)(?:\.(?P=name))?|(?P<name>[^"]+?))">', "", ['<i n="', '<i n="a.', '<i n="a b']),
    (r"(?:<a>|<b>x)[a-z;]+;(?P<q>[a-z]*)>|<c>[a-z]+", "", ["<a>", "<b>x", "<a>ab;", "<c>"]),
]


def test_run_holds_are_sound():
    """Where the runtime's check of a run hold (runtime/base.py's _run_lasts) holds a text, the
    pattern matches it partially from its start, and completely nowhere, however characters of
    the run's class go on: the scan would hold all of it again (random held texts and runs,
    seeded)."""
    import random

    from respc.compiler.regexinfo import run_holds
    from respc.runtime.base import _run_lasts

    rng = random.Random("run-holds")
    pool = 'abx_.-:;"}{<>|( \n1'
    held = 0
    for pattern, ctx, beginnings in _HOLD_CASES:
        rx = regex.compile(pattern, FLAGS)
        entries = [_compiled_hold(entry) for entry in run_holds(pattern)]
        assert entries, pattern
        for entry in entries:
            chars = [c for c in pool if entry[0].fullmatch(c)]
            for _ in range(150):
                text = rng.choice(beginnings) + "".join(rng.choice(chars) for _ in range(rng.randint(1, 12)))
                buf = ctx + text
                if not _run_lasts(entry, buf, len(ctx), len(buf)):
                    continue
                held += 1
                for _ in range(6):
                    grown = buf + "".join(rng.choice(chars) for _ in range(rng.randint(0, 10)))
                    m = rx.match(grown, len(ctx), partial=True)
                    assert m is not None and m.partial, (pattern, text, grown)
                    for start in range(len(ctx), len(grown) + 1):
                        assert rx.match(grown, start) is None, (pattern, text, grown, start)
    assert held > 200, held
