"""compiled.grammar(): the Lark grammar of what a template parses, checked with llguidance.

For every bundled family (templates/samples/*.json): the grammar accepts every sample
output (a byte vocabulary; with and without the end-of-turn token; with the sample's
prefix), rejects mutations (an unknown tool, an argument of the wrong type, a missing
required argument, broken JSON, a second call when parallel_tool_calls=False, no call when
required, a call when none), and seeded random walks through it give outputs respc parses
without a malformed region, with arguments valid for the tool's schema.
"""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path

import pytest

from tests.optional import needs

needs("llguidance")
import llguidance as llg  # noqa: E402

import respc  # noqa: E402
from respc.compiler.grammar import GrammarUnsupported  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "templates" / "samples"
FAMILIES = sorted(p.stem for p in SAMPLES.glob("*.json"))

#: Sample outputs the grammar does not accept yet (see docs/grammar.md, "What cannot be
#: expressed"): the grammar is a subset of what the parser reads. The tests check that no
#: other sample is rejected; a listed case that becomes accepted may be dropped.
#: llama3.1/llama3.2: a call after text is opened by a lookbehind ``(?<=\s)``; the grammar
#: checks each step with representative free text, which does not end in whitespace, so that
#: way in is left out (the parser reads it: text_then_call). (A lookbehind at a literal of 2+
#: characters, xlam's ``(?<=</think>)``, is written: free text ending with it.)
#: step-3.5-flash: a call without its </tool_call> runs to the end of the reply, which the
#: grammar (it closes every call) does not write (the parser reads it: call_without_tool_call_tags).
KNOWN_REJECTED: dict[str, set[str]] = {
    'llama3.1': {'text_then_call'},
    'llama3.2': {'text_then_call'},
    'step-3.5-flash': {'call_without_tool_call_tags'},
}

#: Samples whose calls break the tools' schema (an integer written as a string, "3", which
#: the parser's tool typing coerces; a required argument left out; a tool the list does not
#: hold): the grammar holds calls to the tools and their schemas, so it rejects them, as it
#: rejects the wrong-type, missing-argument and unknown-tool mutations.
SCHEMA_BREAKING: dict[tuple[str, str], str] = {
    ('apertus', 'nested_arguments'): 'a required argument left out',
    ('apriel-1.5', 'content_before_call'): 'an integer argument written as a string',
    ('apriel-1.6', 'nested_arguments'): 'a required argument left out',
    ('command-r-plus', 'model_style_action'): 'an integer argument written as a string',
    ('devstral-small', 'content_before_call'): 'an integer argument written as a string',
    ('firefunction-v2', 'nested_arguments'): 'a required argument left out',
    ('functionary', 'content_before_call'): 'an integer argument written as a string',
    ('functionary-v3.1', 'empty_arguments'): 'a required argument left out',
    ('gigachat3', 'content_before_call'): 'an integer argument written as a string',
    ('granite3.2', 'content_before_call'): 'an integer argument written as a string',
    ('granite3.3', 'content_before_call'): 'an integer argument written as a string',
    ('granite4.0', 'content_before_call'): 'an integer argument written as a string',
    ('hunyuan', 'nested_arguments'): 'a required argument left out',
    ('hunyuan-v3', 'zero_argument_call'): 'a required argument left out',
    ('internlm2', 'content_before_call'): 'an integer argument written as a string',
    ('jamba', 'content_before_call'): 'an integer argument written as a string',
    ('lfm2', 'content_around_call'): 'an integer argument written as a string',
    ('lfm2.5', 'content_after_call'): 'an integer argument written as a string',
    ('llama3.1', 'python_tag_call'): 'an integer argument written as a string',
    ('llama3.2', 'python_tag_call'): 'an integer argument written as a string',
    ('llama4', 'python_start_call'): 'an integer argument written as a string',
    ('minimax-m1', 'nested_arguments'): 'a required argument left out',
    ('mistral-nemo', 'content_before_call'): 'an integer argument written as a string',
    ('mistral-small-3.1', 'tool_call_native_spacing'): 'an integer argument written as a string',
    ('mistral-small-3.2', 'call_without_id'): 'an integer argument written as a string',
    ('phi-4-mini', 'content_before_call'): 'an integer argument written as a string',
    ('phi-4-mini', 'functools_call'): 'an integer argument written as a string',
    ('phi-4-mini', 'functools_call_with_text'): 'an integer argument written as a string',
    ('xlam', 'qwen_base_call'): 'an integer argument written as a string',
    ('command-r-plus', 'multi_turn'): 'a call of a tool not in the tools (directly-answer)',
    ('glm-4.5', 'code_argument_whitespace'): 'a call of a tool not in the tools (write_file)',
    ('glm-4.6', 'code_argument_whitespace'): 'a call of a tool not in the tools (write_file)',
    ('glm-4.7-flash', 'code_argument_whitespace'): 'a call of a tool not in the tools (write_file)',
    ('granite-20b-functioncalling', 'no_function'): 'a call of a tool not in the tools (no_function)',
}

def _known(family: str) -> set[str]:
    """The family's samples the grammar rejects (not written yet, or breaking the schema)."""
    return KNOWN_REJECTED.get(family, set()) | {case for fam, case in SCHEMA_BREAKING if fam == family}


#: Mutations a family's grammar does not reject yet, and why.
KNOWN_MUTATION_GAPS: dict[str, str] = {
}

#: Families whose grammar with special tokens fails yet, and why.
KNOWN_SPECIAL_TOKEN_GAPS = {
}

#: Samples whose grammar with special tokens rejects them yet, and why.
KNOWN_SPECIAL_TOKEN_REJECTED: dict[tuple[str, str], str] = {
}

#: Templates for which no grammar is built yet, and why.
KNOWN_UNSUPPORTED: dict[str, str] = {
}


class _Bytes:
    """A byte-level vocabulary (256 byte tokens and an end-of-sequence token) for llguidance."""

    def __init__(self) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        self.eos_token_id = 256
        self.bos_token_id = None
        self.special_token_ids = [256]

    def __call__(self, text):
        return list(text.encode() if isinstance(text, str) else text)


BYTES = llg.LLTokenizer(llg.TokenizerWrapper(_Bytes()))


def _sample(family: str) -> dict:
    return json.loads((SAMPLES / f"{family}.json").read_text())


def _matcher(grammar: str, tokenizer=BYTES) -> llg.LLMatcher:
    m = llg.LLMatcher(tokenizer, grammar, log_level=0)
    assert not m.is_error(), m.get_error()
    return m


def _run(grammar: str, text: str) -> tuple[bool, bool, str]:
    """(every byte consumed, the grammar accepts the end there, where it failed)."""
    m = _matcher(grammar)
    data = text.encode()
    for i, byte in enumerate(data):
        if not m.consume_token(byte):
            return False, False, f"rejected at byte {i}: ...{data[max(0, i - 40):i + 1].decode(errors='replace')!r}"
    return True, m.is_accepting(), ""


def _complete(case: dict) -> bool:
    """The sample is a whole reply (not cut mid-region)."""
    return "cut" not in case["name"]


def _accepted(grammar: str, text: str, complete: bool) -> tuple[bool, str]:
    consumed, accepting, where = _run(grammar, text)
    if not consumed:
        return False, where
    if complete and not accepting:
        return False, "consumed, but the grammar does not end there"
    return True, ""


def _calls(case: dict) -> list:
    return (case.get("expected") or {}).get("tool_calls") or []


def _grammar(compiled, sample, case=None, **options):
    return compiled.grammar(sample["tools"], prefix=None if case is None else case["prefix"], **options)


def _eot(sample: dict) -> str | None:
    ends = sample.get("end_tokens") or []
    return ends[0] if ends else None


@pytest.fixture(scope="module")
def built():
    return {}


def _check_samples(family: str, cases=None, counts: list | None = None) -> list[str]:
    if family in KNOWN_UNSUPPORTED:
        pytest.xfail(KNOWN_UNSUPPORTED[family])
    compiled = respc.load(family)
    sample = _sample(family)
    problems = []
    for case in sample["cases"] if cases is None else cases:
        if "prefix" not in case or case.get("expected") is None:
            continue
        grammar = _grammar(compiled, sample, case)
        texts = [case["output"]]
        eot = _eot(sample)
        if eot and _complete(case):
            texts.append(case["output"] + eot if not case["output"].endswith(eot) else case["output"][: -len(eot)])
        for text in texts:
            ok, where = _accepted(grammar, text, _complete(case))
            if counts is not None:
                counts.append((case["name"], ok))
            if not ok:
                problems.append(f"{family}/{case['name']}: {where} (output {text!r})")
    return problems


@pytest.mark.parametrize("family", FAMILIES)
def test_every_bundled_family_gets_a_grammar(family):
    if family in KNOWN_UNSUPPORTED:
        with pytest.raises(GrammarUnsupported):
            respc.load(family).grammar(_sample(family)["tools"])
        pytest.xfail(KNOWN_UNSUPPORTED[family])
    _matcher(respc.load(family).grammar(_sample(family)["tools"]))  # llguidance compiles it


@pytest.mark.slow
@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in KNOWN_UNSUPPORTED])
def test_every_tool_choice_gets_a_grammar(family):
    compiled = respc.load(family)
    sample = _sample(family)
    for choice in ("auto", "required", "none", sample["tools"][0]["function"]["name"]):
        for parallel in (True, False):
            grammar = compiled.grammar(sample["tools"], tool_choice=choice, parallel_tool_calls=parallel)
            _matcher(grammar)  # llguidance compiles it


@pytest.mark.parametrize("family", FAMILIES)
def test_quick_first_sample_accepted(family):
    """The quick tier's check: the family's first sample that holds a call is accepted."""
    sample = _sample(family)
    cases = [c for c in sample["cases"] if _calls(c) and _complete(c)][:1] or sample["cases"][:1]
    problems = [p for p in _check_samples(family, cases) if p.split(":")[0].split("/")[1] not in _known(family)]
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_samples_accepted(family):
    problems = [p for p in _check_samples(family) if p.split(":")[0].split("/")[1] not in _known(family)]
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_schema_breaking_samples_rejected():
    """A sample whose arguments break the schema is rejected, as a mutation is."""
    accepted = []
    for family, name in SCHEMA_BREAKING:
        sample = _sample(family)
        case = next(c for c in sample["cases"] if c["name"] == name)
        if _accepted(_grammar(respc.load(family), sample, case), case["output"], _complete(case))[0]:
            accepted.append(f"{family}/{name}")
    assert not accepted, accepted


# --- mutations ----------------------------------------------------------------------
def _rejected(grammar: str, text: str) -> bool:
    consumed, accepting, _ = _run(grammar, text)
    return not (consumed and accepting)


def _call_cases(family):
    sample = _sample(family)
    known = _known(family)
    good = [c for c in sample["cases"] if c.get("expected") and _complete(c) and c["name"] not in known]
    return sample, [c for c in good if _calls(c)], [c for c in good if not _calls(c)]


def _first_call_name(case):
    return _calls(case)[0]["function"]["name"]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_mutations_rejected(family):
    if family in KNOWN_UNSUPPORTED:
        pytest.xfail(KNOWN_UNSUPPORTED[family])
    if family in KNOWN_MUTATION_GAPS:
        pytest.xfail(KNOWN_MUTATION_GAPS[family])
    failures, _ = mutation_results(family)
    assert not failures, "\n".join(failures)


def mutation_results(family: str) -> tuple[list[str], int]:
    """(the mutations accepted and the right outputs rejected, how many were checked)."""
    compiled = respc.load(family)
    sample, with_calls, without = _call_cases(family)
    tools = sample["tools"]
    failures = []
    checked = [0]

    def expect_rejected(what, grammar, text):
        checked[0] += 1
        if not _rejected(grammar, text):
            failures.append(f"{family}: {what} accepted: {text!r}")

    for case in with_calls[:3]:
        text, name = case["output"], _first_call_name(case)
        grammar = _grammar(compiled, sample, case)
        at_name = text.rfind(name)  # (the call's; the reasoning before it may name the tool too)
        if at_name >= 0:
            expect_rejected("unknown tool name", grammar, text[:at_name] + "no_such_tool" + text[at_name + len(name):])
        # a missing required argument: the same tool requiring one more property
        extra = json.loads(json.dumps(tools))
        for tool in extra:
            if tool["function"]["name"] == name:
                params = tool["function"].setdefault("parameters", {"type": "object", "properties": {}})
                params.setdefault("properties", {})["must_have"] = {"type": "string"}
                params["required"] = [*params.get("required", []), "must_have"]
        expect_rejected("missing required argument", compiled.grammar(extra, prefix=case["prefix"]), text)
        # an argument of the wrong type: an integer argument's value written as a word
        args = _calls(case)[0]["function"]["arguments"]
        for key, value in (args.items() if isinstance(args, dict) else []):
            if isinstance(value, int) and not isinstance(value, bool):
                at = text.find(key, max(at_name, 0))
                m = re.compile(rf"(?<![\w.]){value}(?![\w.])").search(text, at if at >= 0 else 0)
                if m:
                    expect_rejected("wrong argument type", grammar, text[: m.start()] + "abc" + text[m.end():])
                break
        # broken JSON: a stray comma after the arguments' first brace
        if compiled.template["fields"]["tool_calls"].get("content") == "json":
            brace = text.find("{", max(at_name, 0))
            if brace >= 0:
                expect_rejected("broken JSON", grammar, text[: brace + 1] + ",," + text[brace + 1:])
        # tool_choice none: a call is not allowed
        expect_rejected("a call with tool_choice='none'", _grammar(compiled, sample, case, tool_choice="none"), text)
        # a named tool: a call of another one is not allowed
        other = next((t["function"]["name"] for t in tools if t["function"]["name"] != name), None)
        if other is not None and all(c["function"]["name"] == name for c in _calls(case)):
            expect_rejected("a call of another tool than tool_choice", _grammar(compiled, sample, case, tool_choice=other), text)
        if len(_calls(case)) > 1:
            expect_rejected("a second call with parallel_tool_calls=False",
                            _grammar(compiled, sample, case, parallel_tool_calls=False), text)
        elif not _accepted(_grammar(compiled, sample, case, parallel_tool_calls=False), text, True)[0]:
            failures.append(f"{family}: a single call rejected with parallel_tool_calls=False: {text!r}")
        if not _accepted(_grammar(compiled, sample, case, tool_choice="required"), text, True)[0]:
            failures.append(f"{family}: a call rejected with tool_choice='required': {text!r}")
    for case in without[:3]:
        expect_rejected("a reply without a call with tool_choice='required'",
                        _grammar(compiled, sample, case, tool_choice="required"), case["output"])
        if not _accepted(_grammar(compiled, sample, case, tool_choice="none"), case["output"], True)[0]:
            failures.append(f"{family}: a reply without a call rejected with tool_choice='none': {case['output']!r}")
    return failures, checked[0]


# --- random walks -------------------------------------------------------------------
_WEIGHTS = [0.2] * 257
for _b in range(32, 127):
    _WEIGHTS[_b] = 5.0
_WEIGHTS[ord("\n")] = 1.0
_WEIGHTS[256] = 3.0


def _walk(grammar: str, rng: random.Random, limit: int = 600) -> bytes | None:
    """A random output the grammar allows (None when it did not end within ``limit`` bytes)."""
    m = _matcher(grammar)
    out = bytearray()
    while len(out) < limit:
        mask = m.compute_bitmask()
        allowed = [t for t in range(257) if mask[t // 8] >> (t % 8) & 1]
        if not allowed:
            return bytes(out) if m.is_accepting() else None
        weights = [_WEIGHTS[t] * (1 + len(out) / 40 if t == 256 else 1) for t in allowed]
        token = rng.choices(allowed, weights)[0]
        if token == 256:
            if m.is_error():  # (the mask of a matcher that failed allows the end)
                raise MatcherFailed(m.get_error().split("\n")[0])
            return bytes(out)
        assert m.consume_token(token), m.get_error()
        out.append(token)
    return None


class MatcherFailed(Exception):
    """llguidance's matcher stopped on a limit of its own (its lexer's or parser's) mid-walk."""


#: (family, tools) whose walks reach a limit of llguidance's matcher, and why
KNOWN_MATCHER_LIMITS: dict[tuple[str, str], str] = {
}


def _validate(schema, value) -> str | None:
    import jsonschema

    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as error:
        return error.message
    return None


def _walks_parse(family: str, prefix: str, rounds: int = 6, seed: str = "", special: bool = False) -> None:
    failures, parsed, _ = walk_results(family, prefix, rounds, seed, special)
    assert not failures, "\n".join(failures[:10])
    assert parsed > 0, f"{family}: no random walk ended within the bound"


def walk_results(family: str, prefix: str, rounds: int = 6, seed: str = "", special: bool = False,
                 tools: list | None = None, limits: str = "") -> tuple[list, int, int]:
    """(failures, walks parsed, walks that ended within the bound) of seeded random walks through the family's grammars (every tool choice) parse: no
    malformed region, known tools, arguments valid for their schema, the call count the
    options allow, a second parse equal (``special``: over a vocabulary whose markers are
    special tokens; ``tools``: instead of the sample's; ``limits``: the key, beside the
    family, of what KNOWN_MATCHER_LIMITS excuses)."""
    compiled = respc.load(family)
    sample = _sample(family)
    tools = sample["tools"] if tools is None else tools
    schemas = {t["function"]["name"]: t["function"].get("parameters", {}) for t in tools}
    rng = random.Random(f"grammar-{family}{seed}")
    tokenizer, lltok = _special_tokenizer(_markers(family)) if special else (None, None)
    failures, parsed, ended = [], 0, 0
    for choice, parallel in (("auto", True), ("required", True), ("required", False), ("none", True)):
        grammar = compiled.grammar(tools, prefix=prefix, tool_choice=choice, parallel_tool_calls=parallel,
                                   special_tokens=tokenizer)
        for _ in range(rounds):
            try:
                if special:
                    text = _walk_tokens(grammar, lltok, tokenizer, rng)
                else:
                    data = _walk(grammar, rng)
                    text = None if data is None else data.decode("utf-8", errors="strict")
            except MatcherFailed as error:
                if (family, limits) not in KNOWN_MATCHER_LIMITS:
                    failures.append(f"{family} tool_choice={choice} parallel={parallel}: the matcher stopped: {error}")
                continue
            if text is None:
                continue
            ended += 1
            before = len(failures)
            case = f"{family} tool_choice={choice} parallel={parallel}: {text!r}"
            message, errors = compiled.parse(text, prefix=prefix, tools=tools, on_malformed="collect")
            if errors:
                failures.append(f"{case}: malformed {errors}")
                continue
            calls = message.get("tool_calls") or []
            if choice == "required" and not calls:
                failures.append(f"{case}: no call")
            if choice == "none" and calls:
                failures.append(f"{case}: a call")
            if not parallel and len(calls) > 1:
                failures.append(f"{case}: {len(calls)} calls")
            for call in calls:
                fn = call.get("function", {})
                if fn.get("name") not in schemas:
                    failures.append(f"{case}: unknown tool {fn.get('name')!r}")
                    continue
                problem = _validate(schemas[fn["name"]], fn.get("arguments"))
                if problem:
                    failures.append(f"{case}: arguments {fn.get('arguments')!r}: {problem}")
            again = compiled.parse(text, prefix=prefix, tools=tools)
            if again != message:
                failures.append(f"{case}: a second parse differs")
            parsed += len(failures) == before
    return failures, parsed, ended


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_random_walks_parse(family):
    needs("jsonschema")
    if family in KNOWN_UNSUPPORTED:
        pytest.xfail(KNOWN_UNSUPPORTED[family])
    _walks_parse(family, walk_prefix(family))


def walk_prefix(family: str) -> str:
    """The prefix a family's random walks start from: its first call sample's."""
    sample = _sample(family)
    return next((c["prefix"] for c in sample["cases"] if _calls(c)), sample["cases"][0]["prefix"])


#: Samples whose prefix leaves the grammar in another start state than the family's first
#: call's, or whose grammar changed (a zero-width call open, close alternatives cut where
#: they part, a close the prefix ends with): walks from their prefixes too.
WALK_PREFIXES = [
    ("apertus", "thinking_off"), ("hunyuan-v3", "thinking_off_tool_call"), ("llama3.1", "semicolon_parallel_calls"),
    ("llama3.2-pythonic", "bracket_text"), ("llama4", "parallel_calls"), ("olmo3", "parallel_calls"),
]


@pytest.mark.slow
@pytest.mark.parametrize("family,name", WALK_PREFIXES)
def test_random_walks_parse_from_prefix(family, name):
    needs("jsonschema")
    case = next(c for c in _sample(family)["cases"] if c["name"] == name)
    _walks_parse(family, case["prefix"], rounds=10, seed=f"-{name}")


# --- what real tool lists hold ----------------------------------------------------------
def _extended_name_tools(sample: dict, days: str = "integer") -> list:
    """The sample's tools and get_weather_x, whose name goes on from get_weather's (search and
    search_news, get_weather and get_weather_forecast: real tool lists have such pairs);
    ``days``: the type of its days (a string: arguments typed for the wrong one of the two
    break the schema)."""
    tools = copy.deepcopy(sample["tools"])
    longer = copy.deepcopy(next(t for t in tools if t["function"]["name"] == "get_weather"))
    longer["function"]["name"] = "get_weather_x"
    longer["function"]["parameters"]["properties"]["days"] = {"type": days}
    return tools + [longer]


def _extended_name_cases(family: str):
    """(name, prefix, output, called names) of each whole call sample with get_weather renamed
    get_weather_x that the parser reads as a call of get_weather_x."""
    sample = _sample(family)
    compiled = respc.load(family)
    tools = _extended_name_tools(sample)
    for case in sample["cases"]:
        if case["name"] in _known(family) or not _complete(case) or "prefix" not in case:
            continue
        if "get_weather" not in [c.get("function", {}).get("name") for c in _calls(case)]:
            continue
        output = case["output"].replace("get_weather", "get_weather_x")
        message = compiled.parse(output, prefix=case["prefix"], tools=tools)
        names = [c["function"]["name"] for c in message.get("tool_calls") or []]
        if "get_weather_x" in names:
            yield case["name"], case["prefix"], output, names


@pytest.mark.parametrize("family", FAMILIES)
def test_a_tool_name_that_goes_on_from_another(family):
    """A call of get_weather_x beside a get_weather is written: a lexeme of the open that
    ended at get_weather (llguidance ends a lazy lexeme where it first matches) left no way
    on to get_weather_x in 8 families (glm-4.x, gemma4, the Mistral formats); and without
    get_weather_x among the tools no call of it is written (glm's ``(?P<name>[^\\s<]+)``:
    the grammar wrote get_weather, then ``_x`` as text before the first argument)."""
    if family in KNOWN_UNSUPPORTED:
        pytest.xfail(KNOWN_UNSUPPORTED[family])
    if not _calls_get_weather(family):
        pytest.skip(f"{family}: its samples have no get_weather tool")
    compiled = respc.load(family)
    sample = _sample(family)
    tools = _extended_name_tools(sample)
    problems, seen = [], 0
    for name, prefix, output, names in _extended_name_cases(family):
        seen += 1
        ok, where = _accepted(compiled.grammar(tools, prefix=prefix), output, True)
        if not ok:
            problems.append(f"{family}/{name}: {where} (output {output!r})")
        if set(names) == {"get_weather_x"}:
            ok, where = _accepted(compiled.grammar(tools, prefix=prefix, tool_choice="get_weather_x"), output, True)
            if not ok:
                problems.append(f"{family}/{name} (tool_choice=get_weather_x): {where}")
        if not _rejected(compiled.grammar(sample["tools"], prefix=prefix), output):
            problems.append(f"{family}/{name}: a call of get_weather_x written without that tool")
    assert not problems, "\n".join(problems)
    assert seen, f"{family}: no call sample read as get_weather_x"


def _calls_get_weather(family: str) -> bool:
    return any(t["function"]["name"] == "get_weather" for t in _sample(family).get("tools") or [])


@pytest.mark.slow
@pytest.mark.parametrize("family", [f for f in FAMILIES if _calls_get_weather(f)])
def test_random_walks_with_a_name_that_goes_on_from_another(family):
    """Walks through grammars whose tools are get_weather and get_weather_x (``days`` an
    integer in one, a string in the other) parse to known tools with arguments valid for
    the one called."""
    needs("jsonschema")
    if family in KNOWN_UNSUPPORTED:
        pytest.xfail(KNOWN_UNSUPPORTED[family])
    failures, parsed, _ = walk_results(family, walk_prefix(family), rounds=4, seed="-extended",
                                       tools=_extended_name_tools(_sample(family), days="string"), limits="extended")
    assert not failures, "\n".join(failures[:10])
    assert parsed > 0, f"{family}: no random walk ended within the bound"


#: names of the tools added to a family's samples' for test_many_tools (two that go on from
#: another: search / search_news, get_weather / get_weather_forecast)
_MORE_TOOLS = ["search", "search_news", "lookup", "get_weather_forecast", "read_file", "write_file", "list_dir",
               "run_shell", "send_email", "calendar_add", "get_stock", "translate_text"]


def _many_tools(sample: dict, count: int) -> list:
    tools = copy.deepcopy(sample["tools"])
    for i in range(count - len(tools)):
        tool = copy.deepcopy(sample["tools"][i % len(sample["tools"])])
        tool["function"]["name"] = _MORE_TOOLS[i % len(_MORE_TOOLS)] + (str(i) if i >= len(_MORE_TOOLS) else "")
        tools.append(tool)
    return tools


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_many_tools(family):
    """With 20 tools every whole sample is accepted (auto, and required where it calls) under
    llguidance's default limits: the lazy lexeme of the text and a call's open was one per
    tool, and five families' grammars (deepseek-r1, gpt-oss from 5 tools, kimi-k2,
    kimi-k2-thinking, xlam from 6) ran its lexer out of fuel or expressions on their samples; a
    node's steps written one by one kept an Earley item each (now factored by their first
    items)."""
    if family in KNOWN_UNSUPPORTED:
        pytest.xfail(KNOWN_UNSUPPORTED[family])
    compiled = respc.load(family)
    sample = _sample(family)
    tools = _many_tools(sample, 20)
    problems = []
    for case in sample["cases"]:
        if "prefix" not in case or case.get("expected") is None or case["name"] in _known(family) or not _complete(case):
            continue
        for choice in ("auto", "required") if _calls(case) and case.get("tools", True) else ("auto",):
            ok, where = _accepted(compiled.grammar(tools, prefix=case["prefix"], tool_choice=choice), case["output"], True)
            if not ok:
                problems.append(f"{family}/{case['name']} ({choice}): {where}")
    assert not problems, "\n".join(problems)


#: a call of each family whose calls are Python literals, with values of schemas that say
#: little: an array without items (of numbers), an object without properties (keys in either
#: quote, values of any kind), a schema without a type
_PYTHON_CALL = "get_weather(city='Paris', data=[1, 2.5, 'x'], config={'a': 1, \"b\": [True, None]}, anything={'k': 'v'})"
_PYTHON_ARGS = {"city": "Paris", "data": [1, 2.5, "x"], "config": {"a": 1, "b": [True, None]}, "anything": {"k": "v"}}
_LOOSE_SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string"}, "data": {"type": "array"}, "config": {"type": "object"}, "anything": {}},
    "required": ["city"]}
_PYTHON_FAMILIES = [f for f in FAMILIES if respc.load(f).template["fields"].get("tool_calls", {}).get("content") == "python-call-list"]


@pytest.mark.parametrize("family", _PYTHON_FAMILIES)
def test_python_values_of_loose_schemas(family):
    """A Python-literal call's values where the schema says little: the grammar wrote an
    array without ``items`` as a list of strings, an object without properties as
    ``key=value`` pairs with double-quoted keys only, a schema without a type as a string
    (``data=[1, 2, 3]`` and ``config={'a': 1}``, which the parser reads, were refused)."""
    sample = _sample(family)
    case = next(c for c in sample["cases"] if _complete(c) and re.search(r"get_weather\([^()]*\)", c["output"]))
    output = re.sub(r"get_weather\([^()]*\)", lambda _m: _PYTHON_CALL, case["output"], count=1)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": _LOOSE_SCHEMA}}]
    compiled = respc.load(family)
    message = compiled.parse(output, prefix=case["prefix"], tools=tools)
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == [_PYTHON_ARGS]
    ok, where = _accepted(compiled.grammar(tools, prefix=case["prefix"]), output, True)
    assert ok, f"{family}: {where} (output {output!r})"


@pytest.mark.parametrize("family", ["devstral-small", "mistral-small-3.2", "magistral", "ministral-3-reasoning"])
def test_no_whitespace_after_a_name_that_takes_it(family):
    """``[TOOL_CALLS](?P<name>[^\\[\\{]+)`` reads whitespace as more of the name: the grammar
    wrote the JSON body's leading whitespace there (a walk wrote ``get_weather\\n{...}``, a
    call of ``get_weather\\n``)."""
    compiled = respc.load(family)
    sample = _sample(family)
    case = next(c for c in sample["cases"] if _complete(c) and "[TOOL_CALLS]get_weather" in c["output"])
    grammar = compiled.grammar(sample["tools"], prefix=case["prefix"])
    assert _accepted(grammar, case["output"], True)[0]
    spaced = case["output"].replace("[TOOL_CALLS]get_weather", "[TOOL_CALLS]get_weather\n", 1)
    names = [c["function"]["name"] for c in compiled.parse(spaced, prefix=case["prefix"], tools=sample["tools"]).get("tool_calls") or []]
    assert "get_weather\n" in names  # what the parser reads
    assert _rejected(grammar, spaced)


def test_text_after_a_held_prompt_end_makes_no_call_with_the_close():
    r"""Functionary's prompt ends with ">>>", which the parser holds: text after it is content
    unless it starts ``name\n`` (a call) or ``all\n``. A walk wrote the text "qGUEm" and
    then the end's own leading ``\s*`` as "\n": ">>>qGUEm\n", a call of an unknown tool (with
    tool_choice="none" too). Such a text, whole, is refused; what the parser reads as content
    or as the tool's call is still written."""
    compiled = respc.load("functionary")
    sample = _sample("functionary")
    prefix = walk_prefix("functionary")
    assert prefix.endswith(">>>")
    tools = sample["tools"]
    name = tools[0]["function"]["name"]
    for choice in ("auto", "none"):
        grammar = compiled.grammar(tools, prefix=prefix, tool_choice=choice)
        for bad in ("qGUEm\n \r<|eot_id|>", "hello\n<|eot_id|>", "x.y\n\n>>>all\nHi<|eot_id|>"):
            calls = compiled.parse(bad, prefix=prefix, tools=tools).get("tool_calls")
            assert calls and calls[0]["function"]["name"] not in {name}, bad  # the parser reads a call
            assert _rejected(grammar, bad), (choice, bad)
        for good in ("all\nHello there<|eot_id|>", "hello world\n<|eot_id|>", "qGUEm <|eot_id|>"):
            assert not compiled.parse(good, prefix=prefix, tools=tools).get("tool_calls"), good
            assert _accepted(grammar, good, True)[0], (choice, good)
    grammar = compiled.grammar(tools, prefix=prefix)
    assert _accepted(grammar, f'{name}\n{{"city": "Paris"}}<|eot_id|>', True)[0]


@pytest.mark.parametrize("family", ["kimi-k2", "kimi-k2-thinking"])
def test_what_a_zero_width_close_leaves_in_a_json_body_stays_json(family):
    r"""Kimi's call close may be zero-width (``(?=<|tool_call_begin|>)``): the parser's body
    then runs to the next call's open, whose leading ``\s*`` and optional section marker
    are read as the body's end. Walks wrote a form feed and ``<|tool_calls_section_begin|>``
    there: the arguments became a string. What the grammar lets follow such a body is
    JSON's whitespace."""
    compiled = respc.load(family)
    sample = _sample(family)
    case = next(c for c in sample["cases"] if c["name"] == "parallel_calls")
    grammar = compiled.grammar(sample["tools"], prefix=case["prefix"])
    unclosed = case["output"].replace("<|tool_call_end|>", "", 1)  # the first call closed by the second's open
    second = unclosed.index("<|tool_call_begin|>", unclosed.index("<|tool_call_begin|>") + 1)
    for between, ok in (("", True), (" \n", True), ("\x0c", False), ("\xa0", False),
                        ("<|tool_calls_section_begin|>", False), (" <|tool_calls_section_begin|> ", False)):
        text = unclosed[:second] + between + unclosed[second:]
        args = [c["function"]["arguments"] for c in compiled.parse(text, prefix=case["prefix"]).get("tool_calls")]
        assert isinstance(args[0], dict) is ok, (between, args)  # what the parser reads
        assert _accepted(grammar, text, True)[0] is ok, between
    cut = case["output"][: case["output"].index("<|tool_call_end|>")]
    for end, ok in (("<|im_end|>", True), (" <|im_end|>", True), ("\x0c<|im_end|>", False)):
        assert _accepted(grammar, cut + end, True)[0] is ok, end


@pytest.mark.slow
@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in KNOWN_UNSUPPORTED])
def test_special_token_text_keeps_the_matcher_going(family):
    """Free text over a vocabulary whose markers are special tokens does not stop the
    matcher: functionary's free text was two text lexemes side by side that differed in
    what they excluded (one the markers spelled in bytes too), and llguidance's lexer
    stopped at its first byte ("too many expressions constructed"). From each distinct
    prefix, with tool_choice auto and required: 60 seeded random text tokens of what the
    mask allows, the matcher never in error."""
    compiled, sample, tokenizer, lltok = _special_setup(family)
    rng = random.Random(f"special-text-{family}")
    failures = []
    for prefix in dict.fromkeys(c["prefix"] for c in sample["cases"]):
        for choice in ("auto", "required"):
            m = llg.LLMatcher(lltok, compiled.grammar(sample["tools"], prefix=prefix, tool_choice=choice,
                                                       special_tokens=tokenizer), log_level=0)
            for step in range(60):
                mask = m.compute_bitmask()
                if m.is_error():
                    failures.append(f"{family} tool_choice={choice} prefix ...{prefix[-40:]!r}: step {step}: "
                                    f"{m.get_error().splitlines()[0]}")
                    break
                allowed = [t for t in range(256) if mask[t // 8] >> (t % 8) & 1]
                if not allowed:
                    break  # (only a marker or the end may come here)
                m.consume_token(rng.choice(allowed))
    assert not failures, "\n".join(failures)


#: a tool as pydantic writes one: nested models and enums as references into ``$defs``
_REF_TOOLS = [{"type": "function", "function": {"name": "book", "parameters": {
    "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]},
              "Place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    "type": "object",
    "properties": {"where": {"$ref": "#/$defs/Place", "type": "object"}, "unit": {"$ref": "#/$defs/Unit"},
                   "n": {"type": "integer", "minimum": 1, "maximum": 9}},
    "required": ["where", "unit", "n"]}}}]


@pytest.mark.parametrize("family", FAMILIES)
def test_references_in_tool_parameters_compile(family):
    """A tool's ``$ref`` points from the root of its parameters: a call object that nests
    them (name and arguments in one JSON body) moved them, and llguidance refused the
    grammar ("Pointer '/$defs/Place' does not exist") in 19 families."""
    if family in KNOWN_UNSUPPORTED:
        pytest.xfail(KNOWN_UNSUPPORTED[family])
    compiled = respc.load(family)
    for choice in ("auto", "required", "book"):
        _matcher(compiled.grammar(_REF_TOOLS, prefix=walk_prefix(family), tool_choice=choice))
    if family not in STRUCTURAL_UNSUPPORTED:
        # a structural tag's schemas keep their references resolvable from their own root
        tag = compiled.grammar(_REF_TOOLS, prefix=walk_prefix(family), tool_choice="required", format="structural_tag")
        for schema in _json_schemas(tag):
            for ref in re.findall(r'"\$ref": "#([^"]*)"', json.dumps(schema)):
                target = schema
                for part in ref.split("/")[1:]:
                    target = target[part]  # (a KeyError names the pointer that does not resolve)


def _json_schemas(node):
    """The json_schema documents of a structural tag."""
    if isinstance(node, dict):
        if node.get("type") == "json_schema":
            yield node["json_schema"]
        for v in node.values():
            yield from _json_schemas(v)
    elif isinstance(node, list):
        for v in node:
            yield from _json_schemas(v)


@pytest.mark.parametrize("family, good, bad", [
    ("hermes3", '<tool_call>\n{"name": "book", "arguments": {"where": {"city": "Paris"}, "unit": "c", "n": 3}}\n</tool_call>',
     ['{"where": {"town": "Paris"}', '"unit": "k"', '"n": 12', '"n": 0']),
    ("qwen3-coder", "<tool_call>\n<function=book>\n<parameter=where>\n{\"city\": \"Paris\"}\n</parameter>\n"
     "<parameter=unit>\nc\n</parameter>\n<parameter=n>\n3\n</parameter>\n</function>\n</tool_call>",
     ['{\"town\"', "\nk\n", "\n12\n"]),
    ("llama3.2-pythonic", "[book(where={'city': 'Paris'}, unit='c', n=3)]", ["'town'", "unit='k'", "n=12", "n=0"]),
])
def test_references_enums_and_bounds_are_kept(family, good, bad):
    """What a ``$ref`` points to, an enum of strings in an XML value, and an integer's
    minimum and maximum in XML and Python values, constrain the arguments as JSON bodies'
    do (XML strings took any text, Python integers any digits)."""
    compiled = respc.load(family)
    prefix = walk_prefix(family)
    grammar = compiled.grammar(_REF_TOOLS, prefix=prefix, tool_choice="book")
    assert _accepted(grammar, good, False)[0], good
    calls = compiled.parse(good, prefix=prefix, tools=_REF_TOOLS)["tool_calls"]
    assert calls[0]["function"]["arguments"]["unit"] == "c"
    for wrong in bad:
        text = good.replace({"hermes3": {'{"where": {"town": "Paris"}': '{"where": {"city": "Paris"}', '"unit": "k"': '"unit": "c"',
                                         '"n": 12': '"n": 3', '"n": 0': '"n": 3'},
                             "qwen3-coder": {'{\"town\"': '{\"city\"', "\nk\n": "\nc\n", "\n12\n": "\n3\n"},
                             "llama3.2-pythonic": {"'town'": "'city'", "unit='k'": "unit='c'", "n=12": "n=3",
                                                   "n=0": "n=3"}}[family][wrong], wrong)
        assert text != good and _rejected(grammar, text), text


def test_no_lone_surrogate_escapes_in_python_strings():
    """python-call-list refuses a lone surrogate escape (a malformed region): a walk wrote
    ``'\\uDAbd'``. The grammar writes no surrogate escape (the character itself can be)."""
    compiled = respc.load("llama3.2-pythonic")
    sample = _sample("llama3.2-pythonic")
    prefix = walk_prefix("llama3.2-pythonic")
    grammar = compiled.grammar(sample["tools"], prefix=prefix, tool_choice="get_weather")
    assert _accepted(grammar, '[get_weather(city="Par\\u00eds")]', False)[0]
    assert _accepted(grammar, '[get_weather(city="Par\U0001f600")]', False)[0]
    assert _rejected(grammar, '[get_weather(city="Par\\uDAbd")]')


@pytest.mark.parametrize("family", _PYTHON_FAMILIES)
def test_python_numbers_the_parser_takes(family):
    """python-call-list refuses an integer past 2^53 - 1 and an infinite float (the region is
    malformed): the grammar wrote any number of digits, and a walk wrote
    ``ratio=537E1316446772560591487866526909``."""
    sample = _sample(family)
    case = next(c for c in sample["cases"] if _complete(c) and re.search(r"get_weather\([^()]*\)", c["output"]))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "ratio": {"type": "number"}}, "required": ["city"]}}}]
    compiled = respc.load(family)
    grammar = compiled.grammar(tools, prefix=case["prefix"])
    for call, ok in (("get_weather(city='Paris', days=3, ratio=1.5e10)", True), ("get_weather(city='Paris', days=123456789012345)", True),
                     ("get_weather(city='Paris', ratio=1e999)", False), ("get_weather(city='Paris', days=12345678901234567890)", False)):
        output = re.sub(r"get_weather\([^()]*\)", lambda _m: call, case["output"], count=1)
        _message, errors = compiled.parse(output, prefix=case["prefix"], tools=tools, on_malformed="collect")
        assert (not errors) == ok, (family, call, errors)
        assert _accepted(grammar, output, True)[0] == ok, (family, call)


@pytest.mark.parametrize("family", ["qwen3-coder", "qwen3.5", "nemotron-3-nano", "step-3.5-flash"])
def test_python_booleans_in_xml_values(family):
    """``<parameter=dry_run>True</parameter>`` (Qwen3-Coder writes Python's spelling; SGLang's
    tests record it): the tool typing reads a boolean case-blind, so the grammar writes
    ``True`` / ``False`` beside ``true`` / ``false``."""
    sample = _sample(family)
    tools = copy.deepcopy(sample["tools"])
    weather = next(t for t in tools if t["function"]["name"] == "get_weather")
    weather["function"]["parameters"]["properties"]["dry_run"] = {"type": "boolean"}
    case = next(c for c in sample["cases"] if _complete(c) and "<function=get_weather>" in c["output"])
    compiled = respc.load(family)
    grammar = compiled.grammar(tools, prefix=case["prefix"])
    for written, value in (("True", True), ("false", False), ("False", False)):
        at = case["output"].index("</function>", case["output"].index("<function=get_weather>"))
        output = case["output"][:at] + f"<parameter=dry_run>\n{written}\n</parameter>\n" + case["output"][at:]
        calls = compiled.parse(output, prefix=case["prefix"], tools=tools)["tool_calls"]
        assert next(c for c in calls if c["function"]["name"] == "get_weather")["function"]["arguments"]["dry_run"] is value
        assert _accepted(grammar, output, True)[0], (family, written)
    assert _rejected(grammar, output.replace("False", "FALSE"))


def test_gemma4_values_of_loose_schemas():
    """gemma4: null for a schema without a type, and an object key that is no name written
    between its string delimiters."""
    compiled = respc.load("gemma4")
    case = next(c for c in _sample("gemma4")["cases"] if c["name"] == "reasoning_tool_call")
    call = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,config:{<|"|>3<|"|>:<|"|>new text<|"|>},anything:null}<tool_call|>'
    output = case["output"][: case["output"].index("<|tool_call>")] + call
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": _LOOSE_SCHEMA}}]
    message = compiled.parse(output, prefix=case["prefix"], tools=tools)
    assert message["tool_calls"][0]["function"]["arguments"] == {"city": "Paris", "anything": None, "config": {"3": "new text"}}
    ok, where = _accepted(compiled.grammar(tools, prefix=case["prefix"]), output, True)
    assert ok, where


# --- API ------------------------------------------------------------------------------
def test_grammar_is_cached_and_checks_its_arguments():
    compiled = respc.load("qwen3")
    tools = _sample("qwen3")["tools"]
    assert compiled.grammar(tools) is compiled.grammar(tools)
    with pytest.raises(ValueError, match="tool_choice"):
        compiled.grammar(tools, tool_choice="no_such_tool")
    with pytest.raises(ValueError, match="format"):
        compiled.grammar(tools, format="gbnf")
    assert issubclass(respc.GrammarUnsupported, respc.TemplateError)


#: a template no grammar can be built for: a back reference that must be written, to a group
#: the grammar does not fill (one to the tool's name is written as the name)
BACK_REFERENCE = {
    "start_anchor": "<|assistant|>",
    "fields": {
        "tool_calls": {"open_pattern": r"<call (?P<name>\w+) (?P<tag>\w+)>(?P=tag)", "close": "</call>", "content": "json",
                       "repeats": True,
                       "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
        "content": {"content": "text"},
    }
}


def test_unsupported_template_names_the_path():
    compiled = respc.compile_template(BACK_REFERENCE)
    with pytest.raises(GrammarUnsupported, match=r"fields\.tool_calls\.open_pattern: .*back reference"):
        compiled.grammar(_sample("qwen3")["tools"])


def test_prefix_opened_reasoning_starts_inside_it():
    compiled = respc.load("qwen3")
    tools = _sample("qwen3")["tools"]
    inside = compiled.grammar(tools, prefix="<|im_start|>assistant\n<think>\n")
    assert _accepted(inside, "still thinking</think>\n\nThe answer.", True)[0]
    fresh = compiled.grammar(tools, prefix="<|im_start|>assistant\n")
    assert not _accepted(fresh, "still thinking</think>\n\nThe answer.", True)[0]
    assert _accepted(fresh, "<think>\nthinking</think>\n\nThe answer.", True)[0]
    off = compiled.grammar(tools, prefix="<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert _accepted(off, "The answer.", True)[0]
    assert not _accepted(off, "<think>\nmore</think>The answer.", True)[0]


# --- structural tags ----------------------------------------------------------------------
#: Families whose structural tag accepts every whole sample (xgrammar's own matcher).
STRUCTURAL_ALL_SAMPLES = {
    "command-a", "command-r-plus", "command-r7b", "deepseek-v3.1", "exaone", "gigachat3", "granite3.2",
    "granite3.3", "granite4.0", "internlm2", "jamba", "kimi-k2", "kimi-k2-thinking", "llama3.1", "llama3.2",
    "mimo", "mistral-nemo", "mistral-small-3.1", "phi-4-mini", "qwen3", "qwen3-coder", "seed-oss", "smollm3",
    "xlam",
}

#: Families with no structural tag, and why (their Lark grammar is built).
STRUCTURAL_UNSUPPORTED = {
    "gemma4": "a JSON dialect (unquoted keys, <|\"|> strings) that json_schema cannot write",
    "lfm2": "python-call-list bodies", "lfm2.5": "python-call-list bodies",
    "llama3.2-pythonic": "python-call-list bodies", "llama4": "python-call-list bodies",
}


#: samples with calls that the structural tag under tool_choice="required" does not take
#: (xgrammar's matcher; 209 of the 265 samples with calls are taken, 29 more break their
#: schema or pass arguments it does not declare, STRUCTURAL_UNDECLARED): olmo3's python
#: calls and muse-glimmer's invoke tags are bodies the tag writes in one form; a second call
#: of a JSON list after its comma, a call inside reasoning (qwen3.5, xlam after </think>),
#: hermes3's "arguments" before "name". The Lark
#: grammar takes them all (test_samples_accepted). Checked both ways: each is still rejected.
#: an argument the tool's schema does not declare: xgrammar's json_schema takes declared
#: properties only (the Lark grammar, like JSON Schema, takes others unless
#: additionalProperties is false)
STRUCTURAL_UNDECLARED = {("granite4.0", "nested_arguments"), ("phi-4-mini", "call_without_end_marker"),
                         ("llama3.1", "nested_arguments"), ("llama3.2", "nested_arguments"),
                         ("llama3.1", "call_then_text"), ("llama3.2", "call_then_text"),
                         ("functionary-v3.1", "nested_arguments"), ("granite-20b-functioncalling", "nested_arguments")}
#: calls the parser reads without their end marker (the next call's opening ends them): the
#: structural tag writes each call whole, so it does not take them
STRUCTURAL_UNCLOSED = {("kimi-k2", "parallel_missing_call_end"), ("kimi-k2-thinking", "calls_inside_think_missing_end")}
STRUCTURAL_REQUIRED_MISSES = {
    'apriel-1.6': {'parallel_calls', 'call_without_final_marker'},
    'firefunction-v2': {'parallel_calls'},
    'functionary': {'reasoning_tool_call'},
    'gigachat3': {'reasoning_tool_call'},
    'hermes3': {'arguments_first'},
    'hyperclovax-seed-think-14b': {'parallel_calls'},
    'llama3.1': {'typed_call'},
    'muse-glimmer': {'reasoning_tool_call', 'parallel_calls', 'doubled_tool_name', 'content_before_call'},
    'olmo3': {'reasoning_tool_call', 'parallel_calls', 'content_before_call', 'json_values', 'python_literal_arguments'},
    'qwen3.5': {'call_inside_thinking'},
    'xlam': {'reasoning_tool_call', 'parallel_calls', 'call_after_think'},
}


@pytest.mark.parametrize("family", FAMILIES)
def test_structural_tag(family):
    compiled = respc.load(family)
    sample = _sample(family)
    if family in STRUCTURAL_UNSUPPORTED:
        with pytest.raises(GrammarUnsupported):
            compiled.grammar(sample["tools"], format="structural_tag")
        return
    for choice in ("auto", "required", "none"):
        tag = compiled.grammar(sample["tools"], format="structural_tag", tool_choice=choice)
        assert tag["type"] == "structural_tag"
    try:
        import xgrammar as xgr
        from xgrammar.structural_tag import StructuralTag
    except Exception as error:  # noqa: BLE001 - xgrammar needs torch
        pytest.skip(f"xgrammar (it needs torch) is not importable: {error}")
    StructuralTag.model_validate(tag)
    if family not in STRUCTURAL_ALL_SAMPLES:
        return
    for case in sample["cases"]:
        if not _complete(case) or case.get("expected") is None:
            continue
        # the tag may read such a call now, and reject it
        breaking = (family, case["name"]) in SCHEMA_BREAKING or (family, case["name"]) in STRUCTURAL_UNDECLARED \
            or (family, case["name"]) in STRUCTURAL_UNCLOSED
        tag = compiled.grammar(sample["tools"], format="structural_tag", prefix=case["prefix"])
        grammar = xgr.Grammar.from_structural_tag(json.dumps(tag))
        assert breaking or xgr.testing._is_grammar_accept_string(grammar, case["output"]), f"{family}/{case['name']}: {case['output']!r}"
        if not case["expected"].get("tool_calls") or breaking or not case.get("tools", True):
            continue
        # a call required: the reply's text before its first call ("\n\n" after </think>) is
        # still allowed; the output as the model ends it (a close that is the end token, as
        # mistral's </s> and gpt-oss's <|call|>, is the tag's end)
        tag = compiled.grammar(sample["tools"], format="structural_tag", prefix=case["prefix"], tool_choice="required")
        grammar = xgr.Grammar.from_structural_tag(json.dumps(tag))
        took = any(xgr.testing._is_grammar_accept_string(grammar, case["output"] + end) for end in ["", *sample.get("end_tokens", [])])
        missed = case["name"] in STRUCTURAL_REQUIRED_MISSES.get(family, ())
        assert took != missed, f"{family}/{case['name']} required ({'listed as missed' if missed else 'rejected'}): {case['output']!r}"
        if "\n" in case["output"] or " " in case["output"]:  # no call at all: rejected
            text = case["expected"].get("content") or "Sure."
            assert not xgr.testing._is_grammar_accept_string(grammar, text), f"{family}/{case['name']} required, no call"


#: families whose calls are items of one JSON list: with parallel_tool_calls=False the tag
#: still takes a list of two (its later items are text after the tag, or items of the list
#: schema the tag writes for the whole call); the Lark grammar holds them to one
#: (test_samples_accepted's mutations). Checked both ways.
#: (command-a's and command-r's list schema holds them to one under a required call)
_BOTH = ("auto", "required")
STRUCTURAL_LIST_PARALLEL = {"command-a": ("auto",), "command-r-plus": ("auto",), "command-r7b": ("auto",),
                            "granite3.2": _BOTH, "granite3.3": _BOTH, "jamba": _BOTH, "mistral-nemo": _BOTH,
                            "mistral-small-3.1": _BOTH, "phi-4-mini": _BOTH, "xlam": _BOTH}


@pytest.mark.parametrize("family", sorted(STRUCTURAL_ALL_SAMPLES))
def test_structural_tag_one_call(family):
    """parallel_tool_calls=False: the structural tag takes a reply with one call and rejects
    the family's parallel sample, its first call written as text before the tag included
    (free text before the first call and after it holds no trigger)."""
    try:
        import xgrammar as xgr
    except Exception as error:  # noqa: BLE001 - xgrammar needs torch
        pytest.skip(f"xgrammar (it needs torch) is not importable: {error}")
    compiled, sample = respc.load(family), _sample(family)
    ends = ["", *sample.get("end_tokens", [])]
    checked, listed = 0, family not in STRUCTURAL_LIST_PARALLEL
    for case in sample["cases"]:
        calls = (case.get("expected") or {}).get("tool_calls") or []
        if not _complete(case) or not case.get("tools", True) or not calls or (family, case["name"]) in SCHEMA_BREAKING \
                or (family, case["name"]) in STRUCTURAL_UNDECLARED or (family, case["name"]) in STRUCTURAL_UNCLOSED \
                or case["name"] in STRUCTURAL_REQUIRED_MISSES.get(family, ()):
            continue
        for choice in ("auto", "required"):
            tag = compiled.grammar(sample["tools"], format="structural_tag", prefix=case["prefix"], tool_choice=choice,
                                   parallel_tool_calls=False)
            grammar = xgr.Grammar.from_structural_tag(json.dumps(tag))
            took = any(xgr.testing._is_grammar_accept_string(grammar, case["output"] + e) for e in ends)
            want = len(calls) == 1 or choice in STRUCTURAL_LIST_PARALLEL.get(family, ())
            assert took == want, f"{family}/{case['name']} {choice}, {len(calls)} calls: {case['output']!r}"
            listed = listed or (family in STRUCTURAL_LIST_PARALLEL and len(calls) > 1)
            checked += 1
    assert checked, f"{family}: no sample with calls checked"
    assert listed, f"{family}: listed in STRUCTURAL_LIST_PARALLEL without a sample of several calls"


# --- CLI and lint ---------------------------------------------------------------------------
def test_cli_grammar(tmp_path, capsys):
    from respc.cli import main

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(_sample("qwen3")["tools"]))
    assert main(["grammar", "qwen3", "--tools-file", str(tools), "--tool-choice", "required", "--no-parallel-tool-calls"]) == 0
    lark = capsys.readouterr().out
    assert lark == respc.load("qwen3").grammar(_sample("qwen3")["tools"], tool_choice="required", parallel_tool_calls=False)
    assert main(["grammar", "qwen3", "--tools-file", str(tools), "--format", "structural-tag"]) == 0
    assert json.loads(capsys.readouterr().out)["type"] == "structural_tag"
    unsupported = tmp_path / "backref.json"
    unsupported.write_text(json.dumps(BACK_REFERENCE))
    assert main(["grammar", str(unsupported), "--tools-file", str(tools)]) == 2
    assert "back reference" in capsys.readouterr().err


def test_lint_reports_templates_without_a_grammar():
    from respc.compiler.lint import lint

    assert [f.path for f in lint(BACK_REFERENCE) if "no grammar" in f.message] == ["fields.tool_calls.open_pattern"]
    assert not [f for f in lint(respc.load("olmo3").template) if "no grammar" in f.message]  # (recursion: probed)
    assert not [f for f in lint(respc.load("qwen3").template) if "no grammar" in f.message]


# --- markers that are special tokens --------------------------------------------------------
_MARKER = re.compile(r"<\|[^|<>\s\\]+\|>")


def _special_tokenizer(markers: list[str]):
    """A byte-level BPE tokenizer built here (nothing downloaded) whose markers are special
    tokens, as a real model's tokenizer has them; and llguidance's view of it."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.pre_tokenizers import ByteLevel

    vocab = {ch: i for i, ch in enumerate(sorted(ByteLevel.alphabet()))}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(m, special=True) for m in [*markers, "<|eos_for_tests|>"]])
    return tokenizer, llg.LLTokenizer(tokenizer.to_str(), eos_token=tokenizer.token_to_id("<|eos_for_tests|>"))


def _special_setup(family: str) -> tuple:
    """(compiled, sample, tokenizer, llguidance tokenizer) of a family over a vocabulary whose
    markers are special tokens (skipped for a family with no ``<|...|>`` markers)."""
    needs("tokenizers")
    markers = _markers(family)
    if not markers:
        pytest.skip(f"{family}: no <|...|> markers")
    tokenizer, lltok = _special_tokenizer(markers)
    return respc.load(family), _sample(family), tokenizer, lltok


def _markers(family: str) -> list[str]:
    template = json.dumps(respc.load(family).template)
    found = set()
    for m in _MARKER.findall(template.replace("\\\\|", "|")):
        m = m.replace("\\\\", "")
        # an optional letter (kimi's <|tool_calls?_section_begin|>): both tokens
        found |= {re.sub(r"(\w)\?", r"\1", m), re.sub(r"\w\?", "", m)} if "?" in m else {m}
    return sorted(found | {t for t in _sample(family).get("end_tokens", []) if _MARKER.fullmatch(t)})


@pytest.mark.slow
@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in KNOWN_UNSUPPORTED])
def test_special_tokens(family):
    if family in KNOWN_SPECIAL_TOKEN_GAPS:
        pytest.xfail(KNOWN_SPECIAL_TOKEN_GAPS[family])
    compiled, sample, tokenizer, lltok = _special_setup(family)
    failures = []
    for case in sample["cases"]:
        if not _complete(case) or case.get("expected") is None or case["name"] in _known(family):
            continue
        if (family, case["name"]) in KNOWN_SPECIAL_TOKEN_REJECTED:
            continue
        grammar = compiled.grammar(sample["tools"], prefix=case["prefix"], special_tokens=tokenizer)
        m = llg.LLMatcher(lltok, grammar, log_level=0)
        ids = tokenizer.encode(case["output"]).ids
        if not (m.consume_tokens(ids) and m.is_accepting()):
            failures.append(f"{family}/{case['name']}: {case['output']!r}: {m.get_error()[:200]}")
        # a marker spelled out in bytes is not the special token: the grammar does not take it
    assert not failures, "\n".join(failures)


def test_special_tokens_written_as_tokens():
    needs("tokenizers")
    tokenizer, lltok = _special_tokenizer(["<|im_end|>", "<|im_start|>", "<|endoftext|>"])
    compiled = respc.load("qwen3")
    grammar = compiled.grammar(_sample("qwen3")["tools"], special_tokens=tokenizer)
    assert "<|im_end|>" in grammar and '"<|im_end|>"' not in grammar
    m = llg.LLMatcher(lltok, grammar, log_level=0)
    assert m.consume_tokens(tokenizer.encode("The capital is Paris.<|im_end|>").ids) and m.is_accepting()
    spelled = llg.LLMatcher(lltok, grammar, log_level=0)
    ids = tokenizer.encode("The capital is Paris.").ids + [tokenizer.token_to_id(c) for c in "<|im_end|>"]
    assert not (spelled.consume_tokens(ids) and spelled.is_accepting())


#: Random walks over a vocabulary with the markers as special tokens: every family.
SPECIAL_TOKEN_WALKS = [f for f in FAMILIES if f not in KNOWN_UNSUPPORTED]


def _walk_tokens(grammar: str, lltok, tokenizer, rng: random.Random, limit: int = 400) -> str | None:
    """A random output over the special-token vocabulary (None when it did not end)."""
    m = llg.LLMatcher(lltok, grammar, log_level=0)
    assert not m.is_error(), m.get_error()
    eos = tokenizer.token_to_id("<|eos_for_tests|>")
    size = tokenizer.get_vocab_size()
    ids: list[int] = []
    while len(ids) < limit:
        mask = m.compute_bitmask()
        allowed = [t for t in range(size) if mask[t // 8] >> (t % 8) & 1]
        if not allowed:
            break
        weights = [(3.0 * (1 + len(ids) / 40)) if t == eos else 1.0 if t >= 256 else 5.0 for t in allowed]
        token = rng.choices(allowed, weights)[0]
        if token == eos:
            if m.is_error():  # (the mask of a matcher that failed allows the end)
                raise MatcherFailed(m.get_error().split("\n")[0])
            return tokenizer.decode(ids, skip_special_tokens=False)
        assert m.consume_token(token), m.get_error()
        ids.append(token)
    return tokenizer.decode(ids, skip_special_tokens=False) if m.is_accepting() and ids else None


@pytest.mark.slow
@pytest.mark.parametrize("family", SPECIAL_TOKEN_WALKS)
def test_special_token_random_walks_parse(family):
    """Whatever the special-token grammar lets a model write, respc parses: no malformed
    region, known tools, arguments valid for their schema, the call count the options allow."""
    needs("tokenizers")
    needs("jsonschema")
    sample = _sample(family)
    prefix = next((c["prefix"] for c in sample["cases"] if _calls(c)), sample["cases"][0]["prefix"])
    _walks_parse(family, prefix, rounds=4, seed="-special", special=True)


def test_calls_end_at_stop_tokens():
    """A call close that is a stop token (gpt-oss's <|call|>) cannot be a structural tag's
    text: an engine's matcher takes a stop token only where the grammar may end. The engine
    glue (respc.integrations._common.end_calls_at_stop) ends such calls with their body."""
    from respc.integrations._common import end_calls_at_stop

    sample = _sample("gpt-oss")
    tag = respc.load("gpt-oss").grammar(sample["tools"], format="structural_tag", tool_choice="required")
    assert end_calls_at_stop(json.loads(json.dumps(tag)), {"<|endoftext|>"}) == tag  # not a close: unchanged
    ended = end_calls_at_stop(tag, {"<|call|>", "<|return|>"})
    tagged = ended["format"]["elements"][-1]
    assert tagged["tags"] and all(t["end"] == "" for t in tagged["tags"]) and tagged["stop_after_first"]
    try:
        import xgrammar as xgr
    except Exception as error:  # noqa: BLE001 - xgrammar needs torch
        pytest.skip(f"xgrammar (it needs torch) is not importable: {error}")
    grammar = xgr.Grammar.from_structural_tag(json.dumps(ended))
    # a call written as the tag writes its open (channel first); the stop token <|call|> follows
    call = '<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{"city": "Paris"}'
    assert xgr.testing._is_grammar_accept_string(grammar, call)
    assert not xgr.testing._is_grammar_accept_string(grammar, call + " and more")  # the turn ends at the call
