"""Small tokenizers built here (nothing is downloaded), for the engine integration tests.

``tokenizer_for(family)``: a ``PreTrainedTokenizerFast`` whose vocabulary is every character of
the family's samples (one token each) plus every marker the samples write (``<|im_end|>``,
``<think>``, ``[TOOL_CALLS]``, ``<｜tool▁call▁begin｜>``...) and the family's end tokens as
special tokens, single tokens each, as a real model's tokenizer has them. Decoding a list of
ids gives their texts joined, so detokenizing token by token gives back the text exactly.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "templates" / "samples"

#: what a marker looks like in the bundled formats: <|...|>, <...> tags (with / | : = . ▁ -),
#: [UPPER_CASE], fullwidth-bar markers, <｜...｜>
_MARKER = re.compile(
    r"<\|[^|<>\s]{1,40}\|>|<｜[^<>]{1,40}｜>|</?[A-Za-z_][\w:.|▁-]{0,40}>|\[[A-Z][A-Z_]{1,30}\]|<\|[^<>\s]{1,40}>"
)


def families() -> list[str]:
    return sorted(p.stem for p in SAMPLES.glob("*.json"))


def samples(family: str) -> dict:
    return json.loads((SAMPLES / f"{family}.json").read_text(encoding="utf-8"))


def _texts(data: dict) -> list[str]:
    out = [data.get("next_turn") or ""]
    for case in data["cases"]:
        out += [case.get("prefix") or "", case.get("output") or ""]
    return out


def markers(family: str) -> list[str]:
    data = samples(family)
    found = set(data.get("end_tokens") or [])
    for text in _texts(data):
        found.update(_MARKER.findall(text))
    return sorted(found, key=lambda m: (-len(m), m))


@functools.lru_cache(maxsize=None)
def tokenizer_for(family: str, extra: str = ""):
    """The family's tokenizer (see the module doc); ``extra``: more text whose characters it knows."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    data = samples(family)
    chars = sorted(set("".join(_texts(data)) + extra + "".join(markers(family))))
    vocab = {"[UNK]": 0}
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    fast.add_special_tokens({"additional_special_tokens": markers(family)})
    ends = data.get("end_tokens") or []
    if ends:
        fast.eos_token = ends[0]
    return fast
