"""respc inside SGLang against SGLang's own per-model parsers, on the same outputs.

    pip install --no-deps -r tests/requirements-sglang.txt   # SGLang's parser layer, CPU only
    python bench/engines.py            # 30 interleaved rounds
    python bench/engines.py --quick    # 5 rounds

For each family that SGLang has its own detectors for (the table ``ENGINE``), every sample
of templates/samples/<family>.json goes through SGLang's ``ReasoningParser`` and
``FunctionCallParser`` the way its chat server drives them (the reasoning parser first, its
normal text to the tool parser; tests/sglang_driver.py says where each step is in
serving_chat.py), once with SGLang's own detectors and once with respc's (``respc`` for both
parsers), in the same 4-character chunks:

* **per chunk**: µs per chunk of a whole stream (the parsers made beforehand, their end
  parse included); the target is respc's plugin at least 5x below the engine's own parser;
  beside it respc's ``DeltaParser`` alone on the same chunks (what the plugin wraps), and
  **setup**: µs to make the pair for one request (respc's reasoning detector makes its
  ``DeltaParser`` at the first chunk, so the per-chunk figure holds that, and the setup
  is what a request that does not stream costs before its ``detect_and_parse``);
* **one-shot**: µs per output of the engine's ``detect_and_parse`` (reasoning, then tool
  calls) against respc's whole parse with ``respc.openai.to_message`` (the OpenAI message
  the plugin hands SGLang) and against the plugin's own ``detect_and_parse`` pair; the
  target is respc at least 2x faster;
* **at size**: one call whose string argument is 10 KB and 1 MB (the family's sample call,
  its last argument value made long): µs per 4-character chunk once nearly all of the
  argument has been fed (the stream fed up to there in one piece, untimed): flat means the
  1 MB figure stays near the 10 KB one.

Figures are medians over interleaved rounds (engine, respc, engine, ...), the ratios medians
of the per-round ratios; times are the process's CPU time (``time.process_time``), which a
loaded machine disturbs far less than wall time.

    python bench/engines.py vllm [--quick] [--family F] [--no-sized]

runs vLLM's own parsers (0.33 or 0.34, whichever is installed) and respc's plugin side by
side instead (``main_vllm``: both through vLLM's ``ChatStreamProcessor`` as
tests/vllm_driver.py drives it, one and four tokens per delta, the non-streaming parse,
10 KB / 1 MB arguments; docs/engines.md).
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import sglang_driver as driver  # noqa: E402

#: CPU time of this process: on a shared machine (load several times its cores) wall time
#: mostly measures the other processes
perf = time.process_time

#: respc family -> (SGLang tool-call parser, SGLang reasoning parser or None)
ENGINE = {
    "qwen3": ("qwen", "qwen3"),
    "qwq": ("qwen", "qwen3"),
    "hermes3": ("hermes", None),
    "qwen3-coder": ("qwen3_coder", None),
    "qwen3.5": ("qwen3_coder", "qwen3"),
    "deepseek-r1": ("deepseekv3", "deepseek-r1"),
    "deepseek-v3.1": ("deepseekv31", "deepseek-v3"),
    "deepseek-v3.2": ("deepseekv32", "deepseek-v3"),
    "kimi-k2": ("kimi_k2", None),
    "kimi-k2-thinking": ("kimi_k2", "kimi_k2"),
    "gpt-oss": ("gpt-oss", "gpt-oss"),
    "glm-4.5": ("glm45", "glm45"),
    "glm-4.7-flash": ("glm47", "glm45"),
    "llama3.2": ("llama3", None),
    "llama4": ("pythonic", None),
    "mistral-small-3.2": ("mistral", None),
    "minimax-m2": ("minimax-m2", None),
    "mimo": ("mimo", "mimo"),
    "step-3.5-flash": ("step3p5", "step3p5"),
    "gemma4": ("gemma4", "gemma4"),
    "lfm2": ("lfm2", None),
}


class _Tok:
    """What the detectors read of a tokenizer: the response template (for respc's)."""

    def __init__(self, template: dict):
        self.response_template = template
        self.init_kwargs: dict = {}

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]


def chunks_of(text: str, size: int = 4) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _parsers(names: tuple[str, str | None], tok, prefix: str, tools):
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    tool_name, reasoning_name = names
    request = driver.request_of(prefix, tools)
    rp = None
    if reasoning_name:
        rp = ReasoningParser(reasoning_name, True, None, request, tokenizer=tok, tool_call_parser_active=True)
    fcp = FunctionCallParser(tools=driver.tools_of(tools), tool_call_parser=tool_name, tokenizer=tok, **driver._prompt(prefix))
    return rp, fcp


def run_stream(names, tok, prefix, tools, chunks) -> float:
    """Seconds for one stream through the pair (parsers made beforehand)."""
    rp, fcp = _parsers(names, tok, prefix, tools)
    last = len(chunks) - 1
    start = perf()
    for position, delta in enumerate(chunks):
        if rp is not None:
            _, delta = rp.parse_stream_chunk(delta)
            if position == last:
                _, end = rp.parse_stream_end()
                delta = (delta or "") + (end or "")
        fcp.parse_stream_chunk(delta or "")
        if position == last:
            fcp.parse_stream_end()
    return perf() - start


def run_setup(names, tok, prefix, tools) -> float:
    """Seconds to make the pair for one request (what ``run_stream`` leaves out): SGLang's
    wrappers and detectors (respc's reasoning detector makes its ``DeltaParser`` at the
    stream's first chunk, not here)."""
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    tool_name, reasoning_name = names
    request = driver.request_of(prefix, tools)  # (the server's, before the parsers)
    effective = driver.tools_of(tools)
    prompt = driver._prompt(prefix)
    start = perf()
    if reasoning_name:
        ReasoningParser(reasoning_name, True, None, request, tokenizer=tok, tool_call_parser_active=True)
    FunctionCallParser(tools=effective, tool_call_parser=tool_name, tokenizer=tok, **prompt)
    return perf() - start


def run_delta(compiled, prefix, tools, chunks) -> float:
    """Seconds for one stream through ``respc.openai.DeltaParser`` alone (made beforehand):
    the parse the plugin wraps, without SGLang's wrappers and result objects."""
    from respc.openai import DeltaParser

    parser = DeltaParser(compiled, prefix=prefix, tools=tools, on_malformed="event")
    start = perf()
    for delta in chunks:
        parser.feed(delta)
    parser.finish()
    return perf() - start


def run_whole_engine_once(names, tok, prefix, tools, text) -> float:
    """The engine's one-shot parse: the reasoning detector's ``detect_and_parse``, then
    the tool detector's on its normal text."""
    rp, fcp = _parsers(names, tok, prefix, tools)
    start = perf()
    if rp is not None:
        text = rp.detector.detect_and_parse(text).normal_text
    fcp.detector.detect_and_parse(text, fcp.tools)
    return perf() - start


def run_whole_respc(compiled, prefix, tools, text) -> float:
    from respc.openai import to_message

    start = perf()
    to_message(compiled.parse(text, prefix=prefix, tools=tools))
    return perf() - start


def run_at_size(names, tok, prefix, tools, head: str, tail_chunks: list[str]) -> float:
    """Seconds per chunk for ``tail_chunks`` after ``head`` was fed in one piece."""
    rp, fcp = _parsers(names, tok, prefix, tools)

    def step(delta):
        if rp is not None:
            _, delta = rp.parse_stream_chunk(delta)
        fcp.parse_stream_chunk(delta or "")

    step(head)
    start = perf()
    for delta in tail_chunks:
        step(delta)
    return (perf() - start) / len(tail_chunks)


def _interleave(runners: dict, repeats: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {key: [] for key in runners}
    for _ in range(repeats):
        for key, run in runners.items():
            gc.disable()
            try:
                times[key].append(run())
            finally:
                gc.enable()
    return times


def _ratio(times, slow, fast) -> float:
    return statistics.median(a / b for a, b in zip(times[slow], times[fast]) if b > 0)


def _big_case(samples: dict, size: int):
    """A sample with a call whose last ``Paris`` (an argument value) is ``size`` characters."""
    for case in samples["cases"]:
        output = case["output"]
        if case.get("cut") or "Paris" not in output or not case.get("tools", True):
            continue
        at = output.rfind("Paris")
        filler = ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]
        return case["prefix"], output[:at] + filler + output[at + 5:], at + size
    return None


def _sglang_version() -> str:
    from importlib.metadata import version

    return version("sglang")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds instead of 30")
    parser.add_argument("--family", action="append", help="only these families (repeatable)")
    args = parser.parse_args()
    repeats = 5 if args.quick else 30
    why = driver.import_sglang()
    if why is not None:
        raise SystemExit(why)
    logging.disable(logging.CRITICAL)  # the engine's parsers log every unknown tool and fault
    import respc
    import respc.runtime.base
    from respc.integrations import sglang as plugin

    plugin.register()
    families = [f for f in ENGINE if not args.family or f in args.family]
    runtime = "compiled" if respc.runtime.base.__file__.endswith(".so") else "pure Python"
    print(f"respc {respc.__version__} ({runtime} runtime), SGLang {_sglang_version()}")
    print(f"{repeats} interleaved rounds; µs medians; ratio = engine / respc (targets: per chunk >= 5x, one-shot >= 2x)")
    print()
    print(f"| family | SGLang parsers | per chunk: SGLang | respc plugin | ratio | DeltaParser alone "
          "| one-shot: SGLang detect_and_parse | respc parse+to_message | ratio | plugin detect_and_parse | ratio "
          "| setup per request: SGLang | respc plugin |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    sized = []
    for family in families:
        names = ENGINE[family]
        samples = json.loads((ROOT / "templates" / "samples" / f"{family}.json").read_text(encoding="utf-8"))
        compiled = respc.load(family)
        tok = _Tok(compiled.template)
        cases = [c for c in samples["cases"] if not c.get("cut")]
        totals = {"engine": [], "respc": [], "delta": [], "whole_engine": [], "whole_respc": [], "whole_plugin": [],
                  "setup_engine": [], "setup_respc": []}
        n_chunks = 0
        for case in cases:
            tools = samples.get("tools") if case.get("tools", True) else None
            prefix, output = case["prefix"], case["output"]
            chunks = chunks_of(output)
            n_chunks += len(chunks)
            t = copy.deepcopy(tools)
            runners = {
                "engine": lambda: run_stream(names, tok, prefix, t, chunks),
                "respc": lambda: run_stream(("respc", "respc"), tok, prefix, t, chunks),
                "delta": lambda: run_delta(compiled, prefix, t, chunks),
                "whole_engine": lambda: run_whole_engine_once(names, tok, prefix, t, output),
                "whole_respc": lambda: run_whole_respc(compiled, prefix, t, output),
                "whole_plugin": lambda: run_whole_engine_once(("respc", "respc"), tok, prefix, t, output),
                "setup_engine": lambda: run_setup(names, tok, prefix, t),
                "setup_respc": lambda: run_setup(("respc", "respc"), tok, prefix, t),
            }
            try:
                times = _interleave(runners, repeats)
            except Exception as error:  # an engine parser that raises on this sample
                print(f"<!-- {family}/{case['name']}: {type(error).__name__}: {error} -->")
                continue
            for key in totals:
                totals[key].append(times[key])
        if not totals["engine"]:
            continue
        # per round: the sum over the family's samples
        rounds = {key: [sum(case[r] for case in totals[key]) for r in range(repeats)] for key in totals}
        per_chunk = {k: statistics.median(rounds[k]) / n_chunks * 1e6 for k in ("engine", "respc", "delta")}
        whole = {
            k: statistics.median(rounds[k]) / len(totals[k]) * 1e6
            for k in ("whole_engine", "whole_respc", "whole_plugin", "setup_engine", "setup_respc")
        }
        label = names[0] + (f" + {names[1]}" if names[1] else "")
        print(f"| {family} | {label} | {per_chunk['engine']:.1f} | {per_chunk['respc']:.1f} | "
              f"{_ratio(rounds, 'engine', 'respc'):.1f}x | {per_chunk['delta']:.1f} | "
              f"{whole['whole_engine']:.1f} | {whole['whole_respc']:.1f} | "
              f"{_ratio(rounds, 'whole_engine', 'whole_respc'):.2f}x | {whole['whole_plugin']:.1f} | "
              f"{_ratio(rounds, 'whole_engine', 'whole_plugin'):.2f}x | {whole['setup_engine']:.1f} | "
              f"{whole['setup_respc']:.1f} |", flush=True)
        if family in ("qwen3", "kimi-k2", "gpt-oss", "qwen3-coder", "deepseek-v3.1"):
            sized.append((family, names, samples, tok))
    print()
    print("| family | argument | per chunk: SGLang | respc plugin | ratio |")
    print("|---|---|---|---|---|")
    for family, names, samples, tok in sized:
        for size, label in ((10_000, "10 KB"), (1_000_000, "1 MB")):
            found = _big_case(samples, size)
            if found is None:
                continue
            prefix, output, end = found
            big = size > 100_000  # SGLang's own parsers take up to seconds per chunk there
            head, tail = output[: end - 200], chunks_of(output[end - 200: end - (180 if big else 120)])
            tools = samples.get("tools")
            reps = 3 if big else repeats
            runners = {
                "engine": lambda: run_at_size(names, tok, prefix, tools, head, tail),
                "respc": lambda: run_at_size(("respc", "respc"), tok, prefix, tools, head, tail),
            }
            times = _interleave(runners, reps)
            print(f"| {family} | {label} | {statistics.median(times['engine']) * 1e6:.1f} | "
                  f"{statistics.median(times['respc']) * 1e6:.2f} | {_ratio(times, 'engine', 'respc'):.0f}x |", flush=True)





# --- vLLM: its own parsers and respc's plugin, through its server's own stream path ------------
#: respc family -> (vLLM tool parser, vLLM reasoning parser or None), as vLLM's docs pair them
VLLM = {
    "qwen3": ("hermes", "qwen3"),
    "qwq": ("hermes", "deepseek_r1"),
    "hermes3": ("hermes", None),
    "smollm3": ("hermes", None),
    "qwen3-coder": ("qwen3_xml", None),
    "qwen3.5": ("qwen3_coder", "qwen3"),
    "nemotron-3-nano": ("qwen3_coder", "nemotron_v3"),
    "deepseek-r1": ("deepseek_v3", "deepseek_r1"),
    "deepseek-v3.1": ("deepseek_v31", "deepseek_v3"),
    "deepseek-v3.2": ("deepseek_v32", "deepseek_v3"),
    "kimi-k2": ("kimi_k2", None),
    "kimi-k2-thinking": ("kimi_k2", "kimi_k2"),
    "kimi-k3": ("kimi_k3", "kimi_k3"),
    "gpt-oss": ("openai", "openai_gptoss"),
    "glm-4.5": ("glm45", "glm45"),
    "glm-4.6": ("glm45", "glm45"),
    "glm-4.7-flash": ("glm47", "glm45"),
    "llama3.1": ("llama3_json", None),
    "llama3.2": ("llama3_json", None),
    "llama3.2-pythonic": ("pythonic", None),
    "llama4": ("llama4_pythonic", None),
    "mistral-nemo": ("mistral", None),
    "mistral-small-3.1": ("mistral", None),
    "mistral-small-3.2": ("mistral", None),
    "devstral-small": ("mistral", None),
    "magistral": ("mistral", "mistral"),
    "minimax-m2": ("minimax_m2", "minimax_m2"),
    "mimo": ("mimo", "mimo"),
    "step-3.5-flash": ("step3p5", "step3p5"),
    "gemma4": ("gemma4", "gemma4"),
    "lfm2": ("lfm2", None),
    "lfm2.5": ("lfm2", None),
    "seed-oss": ("seed_oss", "seed_oss"),
    "olmo3": ("olmo3", "olmo3"),
    "ernie-4.5": ("ernie45", "ernie45"),
    "granite3.2": ("granite", "granite"),
    "granite3.3": ("granite", "granite"),
    "granite4.0": ("granite4", None),
    "granite-20b-functioncalling": ("granite-20b-fc", None),
    "internlm2": ("internlm", None),
    "jamba": ("jamba", None),
    "xlam": ("xlam", None),
    "phi-4-mini": ("phi4_mini_json", None),
    "apertus": ("apertus", None),
    "gigachat3": ("gigachat3", None),
    "hunyuan": ("hunyuan_a13b", "hunyuan_a13b"),
    "hunyuan-v3": ("hy_v3", "hy_v3"),
    "muse-glimmer": ("muse_glimmer", "muse_glimmer"),
    "command-a": ("cohere_command3", "cohere_command3"),
}

#: the families measured at 10 KB / 1 MB arguments
VLLM_SIZED = ("qwen3", "qwen3-coder", "deepseek-v3.1", "kimi-k2", "glm-4.5", "llama3.2", "mistral-small-3.2", "minimax-m2")


def _vllm_parser_cls(names, tok, family):
    from vllm.parser import ParserManager

    tool, reasoning = names
    return ParserManager.get_parser(
        tool_parser_name=tool,
        reasoning_parser_name=reasoning,
        enable_auto_tools=True,
        model_name=family,
        is_harmony=tool == "openai",
        tokenizer=tok,
    )


def run_vllm_stream(vd, tok, parser_cls, request, prompt_ids, steps) -> float:
    """Seconds for one choice's stream through ``ChatStreamProcessor.step`` (the parser
    made beforehand, as the server makes it before the first output)."""
    stream = vd.new_stream(tok, parser_cls, request)
    start = perf()
    vd.run_steps(stream, request, prompt_ids, steps)
    return perf() - start


def run_vllm_whole(vd, tok, parser_cls, request, prompt_ids, text, output_ids) -> float:
    """Seconds for the non-streaming response's parse (``set_prompt_token_ids`` + ``parse``)."""
    parser = vd.new_parser(tok, parser_cls, request)
    start = perf()
    vd.parse_whole(parser, request, prompt_ids, text, output_ids)
    return perf() - start


def run_vllm_at_size(vd, tok, parser_cls, request, prompt_ids, head, tail) -> float:
    """Seconds per step for ``tail`` after ``head`` went through in one step (untimed)."""
    stream = vd.new_stream(tok, parser_cls, request)
    vd.run_steps(stream, request, prompt_ids, [head])
    start = perf()
    vd.run_steps(stream, request, prompt_ids, tail)
    return (perf() - start) / len(tail)


def _vllm_expected(family, case, tools) -> dict:
    import respc
    from respc.openai import to_message

    message = to_message(respc.parse_response(case["output"], family, prefix=case["prefix"], tools=tools))
    calls = (message.get("tool_calls") or []) if tools else []
    return {
        "content": message.get("content") or None,
        "reasoning": message.get("reasoning_content") or None,
        "tool_calls": [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls],
    }


def main_vllm(argv: list[str]) -> None:
    """``python bench/engines.py vllm [--quick] [--family F]``: vLLM's own parsers against
    respc's plugin, both through vLLM's ``ChatStreamProcessor`` (0.33 or 0.34; the section doc)."""
    parser = argparse.ArgumentParser(prog="engines.py vllm", description="vLLM's own parsers against respc's plugin")
    parser.add_argument("--quick", action="store_true", help="5 rounds instead of 30")
    parser.add_argument("--family", action="append", help="only these families (repeatable)")
    parser.add_argument("--no-sized", action="store_true", help="skip the 10 KB / 1 MB rows")
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else 30
    logging.disable(logging.CRITICAL)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    from importlib.metadata import version

    import local_tokenizer
    import vllm_driver as vd

    import respc
    import respc.runtime.base
    from respc.integrations import vllm as plugin

    plugin.register()
    runtime = "compiled" if respc.runtime.base.__file__.endswith(".so") else "pure Python"
    print(f"respc {respc.__version__} ({runtime} runtime), vLLM {version('vllm')}")
    print(f"{repeats} interleaved rounds; µs of CPU time, medians; ratio = vLLM / respc (target: per chunk >= 5x)")
    print("right: streams (1 and 4 tokens per delta) and whole parses whose message is respc's own (without tools in the "
          "request, a call shown as content: tests/vllm_driver.py shown_problem), of 3 per sample")
    print()
    print("| family | vLLM parsers | right: vLLM | respc | per chunk (1 token): vLLM | respc | ratio "
          "| per chunk (4 tokens): vLLM | respc | ratio | one-shot parse: vLLM | respc | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    families = [f for f in VLLM if not args.family or f in args.family]
    sized = []
    for family in families:
        names = VLLM[family]
        data = local_tokenizer.samples(family)
        tok = local_tokenizer.tokenizer_for(family)
        tok.response_template = respc.load(family).template
        try:
            ours = _vllm_parser_cls(("respc", "respc"), tok, family)
            theirs = _vllm_parser_cls(names, tok, family)
        except Exception as error:
            print(f"<!-- {family}: vLLM's {names} cannot be made here: {type(error).__name__}: {str(error)[:200]} -->")
            continue
        keys = ("engine1", "respc1", "engine4", "respc4", "whole_engine", "whole_respc")
        totals: dict[str, list] = {k: [] for k in keys}
        chunks = {1: 0, 4: 0}
        right = {"engine": 0, "respc": 0}
        checked = 0
        faults = []
        for case in data["cases"]:
            if case.get("cut"):
                continue
            tools = data.get("tools") if case.get("tools", True) else None
            request = vd.request_of(copy.deepcopy(tools), stream=True)
            prompt_ids = tok.encode(case["prefix"], add_special_tokens=False)
            stop_text = vd.stop_token(data, case, tools)
            output_ids = tok.encode(case["output"] + stop_text, add_special_tokens=False)
            has_stop = bool(stop_text) or any(case["output"].endswith(e) for e in data.get("end_tokens") or [])
            steps = {n: vd.steps_of(tok, output_ids, has_stop, n) for n in (1, 4)}
            text = tok.decode(output_ids[:-1] if has_stop else output_ids, skip_special_tokens=False)
            want = _vllm_expected(family, case, tools)
            # without tools (tool_choice "none") a call the model writes anyway is content
            shown = not tools and bool(respc.parse_response(case["output"], family, prefix=case["prefix"]).get("tool_calls"))
            for who, cls in (("engine", theirs), ("respc", ours)):
                for got in (lambda: vd.stream(tok, cls, request, prompt_ids, output_ids, has_stop, 1),
                            lambda: vd.stream(tok, cls, request, prompt_ids, output_ids, has_stop, 4),
                            lambda: vd.whole(tok, cls, request, prompt_ids, output_ids, has_stop)):
                    try:
                        message = got()
                        right[who] += vd.shown_problem(message, family, case, stop_text) is None if shown else message == want
                    except Exception as error:
                        if who == "engine":
                            faults.append(f"{case['name']}: {type(error).__name__}")
            checked += 3
            runners = {
                "engine1": lambda: run_vllm_stream(vd, tok, theirs, request, prompt_ids, steps[1]),
                "respc1": lambda: run_vllm_stream(vd, tok, ours, request, prompt_ids, steps[1]),
                "engine4": lambda: run_vllm_stream(vd, tok, theirs, request, prompt_ids, steps[4]),
                "respc4": lambda: run_vllm_stream(vd, tok, ours, request, prompt_ids, steps[4]),
                "whole_engine": lambda: run_vllm_whole(vd, tok, theirs, request, prompt_ids, text, output_ids),
                "whole_respc": lambda: run_vllm_whole(vd, tok, ours, request, prompt_ids, text, output_ids),
            }
            try:
                times = _interleave(runners, repeats)
            except Exception as error:  # an engine parser that raises on this sample
                print(f"<!-- {family}/{case['name']}: {type(error).__name__}: {str(error)[:200]} -->")
                continue
            for key in keys:
                totals[key].append(times[key])
            chunks[1] += len(steps[1])
            chunks[4] += len(steps[4])
        if not totals["engine1"]:
            continue
        if faults:
            print(f"<!-- {family}: vLLM's parsers raised on {', '.join(sorted(set(faults)))} -->")
        rounds = {k: [sum(case[r] for case in totals[k]) for r in range(repeats)] for k in keys}
        med = {k: statistics.median(v) * 1e6 for k, v in rounds.items()}
        label = names[0] + (f" + {names[1]}" if names[1] else "")
        print(f"| {family} | {label} | {right['engine']}/{checked} | {right['respc']}/{checked} "
              f"| {med['engine1'] / chunks[1]:.1f} | {med['respc1'] / chunks[1]:.1f} | {_ratio(rounds, 'engine1', 'respc1'):.1f}x "
              f"| {med['engine4'] / chunks[4]:.1f} | {med['respc4'] / chunks[4]:.1f} | {_ratio(rounds, 'engine4', 'respc4'):.1f}x "
              f"| {med['whole_engine'] / len(totals['whole_engine']):.1f} | {med['whole_respc'] / len(totals['whole_respc']):.1f} "
              f"| {_ratio(rounds, 'whole_engine', 'whole_respc'):.2f}x |", flush=True)
        if family in VLLM_SIZED:
            sized.append((family, names, data, tok, theirs, ours))
    if args.no_sized:
        return
    print()
    print("| family | argument | tokens per delta | per chunk: vLLM | respc | ratio |")
    print("|---|---|---|---|---|---|")
    for family, names, data, tok, theirs, ours in sized:
        for size, label in ((10_000, "10 KB"), (1_000_000, "1 MB")):
            found = _big_case(data, size)
            if found is None:
                continue
            prefix, output, end = found
            big = size > 100_000  # vLLM's own parsers take up to tens of ms per chunk there
            request = vd.request_of(copy.deepcopy(data.get("tools")), stream=True)
            prompt_ids = tok.encode(prefix, add_special_tokens=False)
            head_text = output[: end - 200]
            head = (head_text, tok.encode(head_text, add_special_tokens=False), None)
            tail_ids = tok.encode(output[end - 200: end - (180 if big else 120)], add_special_tokens=False)
            for per in (1, 4):
                tail = [step[:2] + (None,) for step in vd.steps_of(tok, tail_ids, False, per)]
                runners = {
                    "engine": lambda: run_vllm_at_size(vd, tok, theirs, request, prompt_ids, head, tail),
                    "respc": lambda: run_vllm_at_size(vd, tok, ours, request, prompt_ids, head, tail),
                }
                times = _interleave(runners, 3 if big else repeats)
                print(f"| {family} | {label} | {per} | {statistics.median(times['engine']) * 1e6:.1f} | "
                      f"{statistics.median(times['respc']) * 1e6:.2f} | {_ratio(times, 'engine', 'respc'):.0f}x |", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["vllm"]:
        main_vllm(sys.argv[2:])
    else:
        main()
