"""A model's raw token stream becoming OpenAI ``chat.completion.chunk`` objects.

Run it from a checkout or a fresh install (``python examples/openai_stream.py``): it reads
a Qwen3 reply (``qwen3_output.txt``, beside this file, with the prompt that preceded it),
cuts it into token-like pieces as a server would receive them from the model, and prints
one ``chat.completion.chunk`` JSON line per delta, as a Chat Completions server streams
them (``data: `` framing left out).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from respc.openai import DeltaParser

HERE = Path(__file__).resolve().parent

#: the request's tools: they type the arguments ("days" is an integer)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer"},
                },
                "required": ["city"],
            },
        },
    }
]

#: roughly how a tokenizer cuts text: special tokens, words with their leading space,
#: runs of punctuation, single line breaks
TOKENS = re.compile(r"<\|[^|]*\|>|</?\w+>| ?\w+| ?[^\w\s]+|\s")


def tokens(text: str) -> list[str]:
    return TOKENS.findall(text)


def chunk(delta: dict, finish_reason: str | None = None) -> dict:
    return {
        "id": "chatcmpl-respc-example",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "Qwen/Qwen3-8B",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def main() -> None:
    prompt = (HERE / "qwen3_prefix.txt").read_text(encoding="utf-8")
    output = (HERE / "qwen3_output.txt").read_text(encoding="utf-8")
    pieces = tokens(output)
    assert "".join(pieces) == output, "the token pattern must cover the whole output"
    parser = DeltaParser("qwen3", prefix=prompt, tools=TOOLS, id_seed=0)
    for piece in pieces:
        for delta in parser.feed(piece):
            print(json.dumps(chunk(delta), ensure_ascii=False))
    deltas, finish_reason = parser.finish()
    if not deltas:
        deltas = [{}]  # the finish reason rides on an empty delta, as OpenAI sends it
    for k, delta in enumerate(deltas):
        print(json.dumps(chunk(delta, finish_reason if k == len(deltas) - 1 else None), ensure_ascii=False))


if __name__ == "__main__":
    main()
