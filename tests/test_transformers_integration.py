"""respc.integrations.transformers: a tokenizer's parse_response / get_response_parser on respc.

Against transformers' own methods (5.24, the reference) on the same tokenizer: text and token
ids (lists, numpy arrays, torch tensors where torch is installed), single sequences and
batches, prefix as text or ids, a schema= override, tools. The tokenizers are built here
(tests/local_tokenizer.py); nothing is downloaded. Then respc.from_pretrained on a local folder.
"""

from __future__ import annotations

import json
import sys

import pytest
from optional import needs

needs("transformers.utils.chat_parsing")

import numpy as np
from local_tokenizer import families, samples, tokenizer_for

import respc
from respc.integrations import transformers as integration

QUICK = ("qwen3", "gpt-oss", "hermes3", "deepseek-v3.1")


def _fresh(family: str):
    """A new tokenizer of the family (tokenizer_for caches one: copy it) with its template."""
    import copy

    tok = copy.deepcopy(tokenizer_for(family))
    tok.response_template = respc.load(family).template
    return tok


def _reference(family: str):
    tok = _fresh(family)
    return tok, type(tok).parse_response.__get__(tok), type(tok).get_response_parser.__get__(tok)


def _cases(family):
    data = samples(family)
    return [(c, data["tools"] if c.get("tools", True) else None) for c in data["cases"] if not c.get("cut")]


def _check_family(family: str) -> int:
    tok, ref_parse, _ = _reference(family)
    integration.install(tok)
    checked = 0
    for case, tools in _cases(family):
        want = ref_parse(case["output"], prefix=case["prefix"], tools=tools)
        assert tok.parse_response(case["output"], prefix=case["prefix"], tools=tools) == want, case["name"]
        ids = tok.encode(case["output"], add_special_tokens=False)
        prefix_ids = tok.encode(case["prefix"], add_special_tokens=False)
        assert tok.parse_response(ids, prefix=prefix_ids, tools=tools) == ref_parse(ids, prefix=prefix_ids, tools=tools)
        assert tok.parse_response(np.array(ids), prefix=np.array(prefix_ids), tools=tools) == want
        batch = tok.parse_response([case["output"], case["output"]], prefix=case["prefix"], tools=tools)
        assert batch == [want, want]
        checked += 1
    return checked


@pytest.mark.parametrize("family", QUICK)
def test_quick_families_match_transformers(family):
    assert _check_family(family) > 0


@pytest.mark.slow
def test_every_family_matches_transformers():
    failures = []
    total = 0
    for family in families():
        if family in QUICK:
            continue
        try:
            total += _check_family(family)
        except AssertionError as error:  # report every family, not only the first
            failures.append(f"{family}: {error}")
    assert not failures, failures
    assert total > 100


def test_token_id_batches_and_per_item_prefixes():
    tok, ref_parse, _ = _reference("qwen3")
    integration.install(tok)
    (a, tools), (b, _) = _cases("qwen3")[:2]
    ids = [tok.encode(a["output"], add_special_tokens=False), tok.encode(b["output"], add_special_tokens=False)]
    width = max(map(len, ids))
    # a 2D array needs equal rows: pad with a marker the template ignores after the turn
    pad = tok.convert_tokens_to_ids("<|im_end|>")
    grid = np.array([row + [pad] * (width - len(row)) for row in ids])
    prefixes = [a["prefix"], b["prefix"]]
    assert tok.parse_response(grid, prefix=prefixes, tools=tools) == ref_parse(grid, prefix=prefixes, tools=tools)
    assert tok.parse_response(ids, prefix=prefixes, tools=tools) == ref_parse(ids, prefix=prefixes, tools=tools)
    with pytest.raises(ValueError, match="prefix"):
        tok.parse_response(ids, prefix=[a["prefix"]] * 3)
    with pytest.raises(ValueError, match="prefix"):
        tok.parse_response(a["output"])
    assert tok.parse_response(a["output"], prefix=[]) == ref_parse(a["output"], prefix=[])


def test_tensors():
    torch = pytest.importorskip("torch", reason="torch is optional: tensors are checked where it is installed")
    tok, ref_parse, _ = _reference("qwen3")
    integration.install(tok)
    case, tools = _cases("qwen3")[0]
    ids = torch.tensor(tok.encode(case["output"], add_special_tokens=False))
    prefix = torch.tensor(tok.encode(case["prefix"], add_special_tokens=False))
    assert tok.parse_response(ids, prefix=prefix, tools=tools) == ref_parse(ids, prefix=prefix, tools=tools)
    assert tok.parse_response(ids.unsqueeze(0), prefix=prefix, tools=tools) == [ref_parse(ids, prefix=prefix, tools=tools)]


def test_schema_override_and_streaming():
    tok, ref_parse, ref_stream = _reference("qwen3")
    integration.install(tok)
    case, tools = _cases("gpt-oss")[0]
    gpt = respc.load("gpt-oss").template
    gtok = tokenizer_for("gpt-oss")
    # the qwen3 tokenizer parses a gpt-oss output with schema= (text: its vocabulary lacks gpt-oss's markers)
    assert tok.parse_response(case["output"], gpt, prefix=case["prefix"], tools=tools) == ref_parse(
        case["output"], gpt, prefix=case["prefix"], tools=tools
    )
    qcase, qtools = _cases("qwen3")[0]
    prefix_ids = tok.encode(qcase["prefix"], add_special_tokens=False)
    mine, theirs = tok.get_response_parser(prefix=prefix_ids, tools=qtools), ref_stream(prefix=prefix_ids, tools=qtools)
    events, want = [], []
    for k in range(0, len(qcase["output"]), 5):
        events += mine.feed(qcase["output"][k : k + 5])
        want += theirs.feed(qcase["output"][k : k + 5])
    assert mine.finalize() == theirs.finalize()
    assert isinstance(tok.get_response_parser(gpt, prefix="").feed("<|channel|>final<|message|>hi"), list)
    del gtok


def test_bundled_family_by_name_and_uninstall():
    tok = tokenizer_for("qwen3", extra="name")
    tok.response_template = None
    with pytest.raises(AttributeError, match="response_template"):
        integration.install(tok).parse_response("hi", prefix="")
    integration.install(tok, "qwen3")
    case, tools = _cases("qwen3")[0]
    assert tok.parse_response(case["output"], prefix=case["prefix"], tools=tools) == respc.parse_response(
        case["output"], "qwen3", prefix=case["prefix"], tools=tools
    )
    integration.uninstall(tok)
    with pytest.raises(AttributeError, match="response_template"):
        tok.parse_response("hi", prefix="")  # transformers' own again
    with pytest.raises(respc.TemplateError):
        integration.install(tok, "no-such-family")


def test_from_pretrained_reads_the_local_config(tmp_path):
    template = respc.load("qwen3").template
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 8, "response_template": template}))
    before = set(sys.modules)
    compiled = integration.from_pretrained(tmp_path)
    assert compiled.hash == respc.load("qwen3").hash
    assert not any(m.split(".")[0] == "transformers" for m in set(sys.modules) - before)
    (tmp_path / "t.json").write_text(json.dumps(template))
    assert integration.from_pretrained(tmp_path / "t.json").hash == compiled.hash
    if hasattr(respc, "from_pretrained"):
        assert respc.from_pretrained(tmp_path).hash == compiled.hash
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 8}))
    with pytest.raises(ValueError, match="response_template"):
        integration.from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="tokenizer_config.json"):
        integration.from_pretrained(tmp_path / "nothing")


def test_thinking_field_stays_as_transformers_names_it():
    """Under transformers a field named ``thinking`` is the message's ``thinking``, as the reference gives it."""
    template = json.loads(json.dumps(respc.load("qwen3").template))
    template["fields"] = {("thinking" if k == "reasoning_content" else k): v for k, v in template["fields"].items()}
    tok, ref_parse, _ = _reference("qwen3")
    tok.response_template = template
    integration.install(tok)
    case, tools = _cases("qwen3")[0]
    got = tok.parse_response(case["output"], prefix=case["prefix"], tools=tools)
    assert got == ref_parse(case["output"], prefix=case["prefix"], tools=tools)
    assert got["thinking"]
