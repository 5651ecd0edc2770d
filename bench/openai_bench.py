"""respc.openai's cost: Chat Completions deltas side by side with the plain event stream.

    python bench/openai_bench.py            # 200 rounds per workload (about 10 s in all)
    python bench/openai_bench.py --quick    # 40 rounds per workload

1. The bundled workloads (bench/samples/<name>.txt with their prompts and tools), fed in
   4-character chunks: µs per chunk for the template's plain event stream
   (``get_response_parser``), for that stream with ``spans=True`` (what DeltaParser runs:
   open events carry the captures that name calls early), and for ``DeltaParser``; the
   ratio DeltaParser / plain (target: within 1.5x).
2. Flatness: one qwen3 call whose JSON argument is a 10 KB and a 1 MB string, fed in
   4-character chunks: µs per chunk for both sizes (flat: the ratio stays near 1). The
   string has an escape every ten characters or so (about half the chunks hold one and take
   the scanner's general path); "1 MB plain" is the same size without escapes (every chunk
   on DeltaParser's fast path).

Every figure is a median over interleaved runs (plain, spans, deltas, plain, ...), and each
ratio the median of the per-round ratios, so they compare like with like on a shared machine.
A workload's stream takes about half a millisecond, so a round is short and many are run:
with a handful, one disturbed round moves the median by a tenth.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from pathlib import Path

import respc
from respc.openai import DeltaParser

HERE = Path(__file__).resolve().parent
SAMPLES = HERE / "samples"
WORKLOADS = ["qwen3", "qwen3-coder", "gpt-oss"]
perf = time.perf_counter


def chunks_of(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def run_plain(name: str, prefix: str, tools: list, chunks: list[str], spans: bool = False) -> float:
    start = perf()
    if spans:
        parser = respc.load(name).Parser(prefix, tools=tools, spans=True)
    else:
        parser = respc.get_response_parser(name, prefix=prefix, tools=tools)
    for chunk in chunks:
        parser.feed(chunk)
    parser.finalize()
    return perf() - start


def run_deltas(name: str, prefix: str, tools: list, chunks: list[str]) -> float:
    start = perf()
    parser = DeltaParser(name, prefix=prefix, tools=tools, id_seed=0)
    for chunk in chunks:
        parser.feed(chunk)
    parser.finish()
    return perf() - start


def rounds(runners: dict, repeats: int) -> dict[str, list[float]]:
    """Each runner ``repeats`` times, interleaved; the garbage collector off while timing."""
    times: dict[str, list[float]] = {key: [] for key in runners}
    for _ in range(repeats):
        for key, runner in runners.items():
            gc.collect()
            gc.disable()
            try:
                times[key].append(runner())
            finally:
                gc.enable()
    return times


def workloads(repeats: int) -> None:
    """Section 1, ``repeats`` rounds per workload."""
    print("1. Deltas vs the plain event stream, 4-character chunks (µs per chunk, median)")
    print(f"   {'workload':14} {'chunks':>7} {'plain':>8} {'spans':>8} {'deltas':>8} {'deltas/plain':>13} {'spans/plain':>12}")
    for name in WORKLOADS:
        text = (SAMPLES / f"{name}.txt").read_text(encoding="utf-8")
        prefix = (SAMPLES / f"{name}.prefix.txt").read_text(encoding="utf-8")
        tools = json.loads((SAMPLES / f"{name}.tools.json").read_text(encoding="utf-8"))
        chunks = chunks_of(text)
        runners = {
            "plain": lambda: run_plain(name, prefix, tools, chunks),
            "spans": lambda: run_plain(name, prefix, tools, chunks, spans=True),
            "deltas": lambda: run_deltas(name, prefix, tools, chunks),
        }
        runners["deltas"]()  # warm up (compiles nothing: bundled modules; fills caches)
        times = rounds(runners, repeats)
        per = {key: statistics.median(values) / len(chunks) * 1e6 for key, values in times.items()}
        ratio = statistics.median(d / p for d, p in zip(times["deltas"], times["plain"]))
        spans = statistics.median(s / p for s, p in zip(times["spans"], times["plain"]))
        print(
            f"   {name:14} {len(chunks):>7} {per['plain']:>8.2f} {per['spans']:>8.2f} {per['deltas']:>8.2f}"
            f" {ratio:>12.2f}x {spans:>11.2f}x"
        )


def flatness(repeats: int) -> None:
    """Section 2: ``repeats`` rounds at 10 KB, a third as many at 1 MB (a round there takes
    a fraction of a second)."""
    print("2. Flatness: one call, a JSON string argument of 10 KB vs 1 MB, 4-character chunks (µs per chunk)")
    escaped = "lorem ipsum dolor sit amet, \\\"quoted\\\" \\u00e9t\\u00e9 "
    plain = "lorem ipsum dolor sit amet, consectetur adipiscing elit "
    sizes = {"10 KB": (10_000, escaped), "1 MB": (1_000_000, escaped), "1 MB plain": (1_000_000, plain)}
    texts = {}
    for label, (size, phrase) in sizes.items():
        words = (phrase * (size // len(phrase) + 1))[:size]
        texts[label] = chunks_of(f'<tool_call>\n{{"name": "write", "arguments": {{"text": "{words}"}}}}\n</tool_call>')
    tools = [{"type": "function", "function": {"name": "write", "parameters": {"properties": {"text": {"type": "string"}}}}}]
    print(f"   {'argument':12} {'chunks':>8} {'plain':>8} {'deltas':>8} {'deltas/plain':>13}")
    per_size = {}
    for label, chunks in texts.items():
        runners = {
            "plain": lambda: run_plain("qwen3", "", tools, chunks),
            "deltas": lambda: run_deltas("qwen3", "", tools, chunks),
        }
        times = rounds(runners, repeats if label == "10 KB" else max(2, repeats // 3))
        per = {key: statistics.median(values) / len(chunks) * 1e6 for key, values in times.items()}
        per_size[label] = per
        ratio = statistics.median(d / p for d, p in zip(times["deltas"], times["plain"]))
        print(f"   {label:12} {len(chunks):>8} {per['plain']:>8.2f} {per['deltas']:>8.2f} {ratio:>12.2f}x")
    grow = per_size["1 MB"]["deltas"] / per_size["10 KB"]["deltas"]
    print(f"   deltas, µs per chunk at 1 MB / at 10 KB: {grow:.2f}x (flat: near 1)")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = options.parse_args()
    print(f"respc {respc.__version__}; runtime: {respc.RUNTIME_INFO}")
    workloads(40 if args.quick else 200)
    flatness(5 if args.quick else 15)


if __name__ == "__main__":
    main()
