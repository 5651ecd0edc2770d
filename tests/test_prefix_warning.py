"""A non-empty prefix without the start anchor: respc.PrefixWarning, once per template; the
message stays what the reference gives (the prompt is read as the start of the message)."""

from __future__ import annotations

import copy
import warnings

import pytest
from transformers.utils.chat_parsing import ResponseParser as RefParser  # the behavioural reference
from transformers.utils.chat_parsing import parse_response as ref_parse

import respc
from respc.runtime import base

PROMPT = "User: what is <tool_call>?\nAssistant:"


def _fresh(name: str):
    compiled = respc.load(name)
    base._PREFIX_WARNED.discard(compiled.Parser)  # (once per template: start over)
    return compiled


def _caught(action) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [w for w in caught if issubclass(w.category, respc.PrefixWarning)]


@pytest.mark.parametrize("name", ["qwen3", "deepseek-v3.2", "gemma4"])  # start_anchor, _pattern, a list
def test_a_prefix_without_the_anchor_warns_once(name):
    compiled = _fresh(name)
    template = compiled.template
    text = "hi <tool_call>"
    got = _caught(lambda: compiled.parse(text, prefix=PROMPT))
    assert len(got) == 1, got
    assert issubclass(respc.PrefixWarning, UserWarning)
    assert "start anchor" in str(got[0].message) and "prefix" in str(got[0].message)
    # once per template: not again, whole or streamed
    assert not _caught(lambda: compiled.parse(text, prefix=PROMPT))
    assert not _caught(lambda: compiled.parser(prefix=PROMPT).finalize())
    # the message is still the reference's
    assert compiled.parse(text, prefix=PROMPT) == ref_parse(text, copy.deepcopy(template), prefix=PROMPT)


def test_streaming_warns_too():
    compiled = _fresh("qwen3")
    got = _caught(lambda: compiled.parser(prefix=PROMPT))
    assert len(got) == 1
    parser = compiled.parser(prefix=PROMPT)
    ref = RefParser(copy.deepcopy(compiled.template), PROMPT)
    assert parser.initial_events == ref.initial_events


@pytest.mark.parametrize("prefix", ["", "<|im_start|>user\nwhat is <tool_call>?<|im_end|>\n<|im_start|>assistant\n"])
def test_no_warning_with_the_anchor_or_no_prefix(prefix):
    compiled = _fresh("qwen3")
    assert not _caught(lambda: compiled.parse("hi", prefix=prefix))
    assert not _caught(lambda: compiled.parser(prefix=prefix).feed("hi"))
    assert not _caught(lambda: respc.parse_response("hi", "qwen3", prefix=prefix))
