"""Batch parsing at scale: rows per second of respc.parse_batch in 1 process, in a pool of
2 processes and in Ray Data with 2 CPUs, beside the reference's loop (transformers 5.24.0
``parse_response``, one reply at a time, in 1 process).

    python bench/scale.py                 # 100,000 replies (a few minutes on 2 cores)
    python bench/scale.py --rows 10000    # quick

The replies are built deterministically from the bench samples of two bundled families
(qwen3 and gpt-oss: bench/samples/, each with its prompt and tools) and from their
templates/samples/ cases, some cut short, half of each family. Every way parses the same
rows and must give the same messages (checked; the forked pool's are counted). Each row
of the table says: rows per second; the speed-up over respc in 1 process; the scaling
efficiency (speed-up / processes); the peak RSS of the processes that parsed (the
largest of them).

The ways to use 2 processes:
- a spawned pool that is sent chunks of rows and sends the messages back (the parent
  pickles every row and unpickles every message: ``ProcessPoolExecutor.map``);
- a forked pool whose workers already hold the rows and keep the messages, as workers
  that read and write their own shard of a dataset do (HF datasets ``num_proc``);
- Ray Data: ``map_batches(ParseBatches)`` in 2 actors until the dataset is materialized
  (timed from the input dataset in the object store to the messages there, as JSON
  strings; starting the actors is included, ``ray.init`` is not).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import random
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FAMILIES = ["qwen3", "gpt-oss"]

os.environ.setdefault("RESPC_CACHE_DIR", tempfile.mkdtemp(prefix="respc-bench-cache-"))

import respc  # noqa: E402
from respc.compiler import load_template_file  # noqa: E402


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB: Linux's VmHWM, which starts anew
    with each program (ru_maxrss keeps the peak of the process that forked a spawned worker)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB elsewhere
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def family_rows(name: str, count: int, rng: random.Random) -> list[dict]:
    """``count`` rows (text, prefix) of one family: its bench reply and its samples' cases,
    a third of them cut short at a random point (a generation stopped by max_tokens)."""
    samples = json.loads((ROOT / "templates" / "samples" / f"{name}.json").read_text(encoding="utf-8"))
    cases = [(HERE / "samples" / f"{name}.prefix.txt", HERE / "samples" / f"{name}.txt")]
    replies = [(p.read_text(encoding="utf-8"), t.read_text(encoding="utf-8")) for p, t in cases]
    replies += [(case.get("prefix", ""), case["output"]) for case in samples["cases"]]
    rows = []
    for index in range(count):
        prefix, text = replies[index % len(replies)]
        if rng.random() < 1 / 3:
            text = text[: rng.randrange(len(text) // 2, len(text) + 1)]
        rows.append({"prefix": prefix, "text": text})
    return rows


def workloads(total: int) -> list[dict]:
    rng = random.Random(16)
    out = []
    for name in FAMILIES:
        tools = json.loads((HERE / "samples" / f"{name}.tools.json").read_text(encoding="utf-8"))
        out.append({"name": name, "tools": tools, "rows": family_rows(name, total // len(FAMILIES), rng)})
    return out


# --- the ways to parse: each returns (seconds, the messages in order or None, peak RSS list) ---


def parse_chunk(name: str, texts: list[str], prefixes: list[str], tools: list) -> tuple[list, float]:
    """A pool worker's job: one chunk of rows sent to it; its messages and peak RSS back."""
    messages, _ = respc.parse_batch(texts, name, prefix=prefixes, tools=tools, errors="collect")
    return messages, peak_rss_mib()


#: the workloads, set before a fork pool starts: its workers find the rows here, as workers
#: that read their own shard of a dataset do
SHARED: list[dict] = []
#: the messages a forked worker parsed, kept as its shard of the result (as respc in 1
#: process keeps them all: holding them costs memory and garbage-collection time alike)
KEPT: list = []


def parse_shared(index: int, start: int, stop: int) -> tuple[int, int]:
    """A forked worker's job: rows it already has; (rows, failed rows) back."""
    work = SHARED[index]
    rows = work["rows"][start:stop]
    messages, errors = respc.parse_batch(
        [r["text"] for r in rows], work["name"], prefix=[r["prefix"] for r in rows], tools=work["tools"],
        errors="collect",
    )
    KEPT.extend(messages)
    return len(messages), len(errors)


def run_one_process(work: list[dict]) -> tuple[float, list | None, list[float]]:
    start = time.perf_counter()
    messages = []
    for w in work:
        rows = w["rows"]
        messages += respc.parse_batch(
            [r["text"] for r in rows], w["name"], prefix=[r["prefix"] for r in rows], tools=w["tools"],
            errors="collect",
        )[0]
    return time.perf_counter() - start, messages, [peak_rss_mib()]


def run_pool(work: list[dict], chunk: int) -> tuple[float, list | None, list[float]]:
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(respc.load, FAMILIES * 4))  # start the workers (and load the parsers) before timing
        start = time.perf_counter()
        jobs = [
            pool.submit(
                parse_chunk, w["name"], [r["text"] for r in w["rows"][i : i + chunk]],
                [r["prefix"] for r in w["rows"][i : i + chunk]], w["tools"],
            )
            for w in work
            for i in range(0, len(w["rows"]), chunk)
        ]
        messages, peaks = [], []
        for job in jobs:
            part, peak = job.result()
            messages += part
            peaks.append(peak)
        return time.perf_counter() - start, messages, peaks


def run_pool_shared(work: list[dict], chunk: int) -> tuple[float, list | None, list[float]]:
    SHARED[:] = work
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        list(pool.map(respc.load, FAMILIES * 4))
        start = time.perf_counter()
        jobs = [
            pool.submit(parse_shared, index, i, i + chunk)
            for index, w in enumerate(work)
            for i in range(0, len(w["rows"]), chunk)
        ]
        done = [job.result() for job in jobs]
        seconds = time.perf_counter() - start
    assert sum(rows for rows, _ in done) == sum(len(w["rows"]) for w in work)
    return seconds, None, []  # a forked worker's RSS counts the pages it shares with the parent


class _MeasuredParse:
    """respc.ray.ParseBatches, and the worker's peak RSS in a column (to read it back)."""

    def __init__(self, **kwargs):
        import respc.ray

        self.parse = respc.ray.ParseBatches(**kwargs)

    def __call__(self, batch):
        import numpy

        batch = self.parse(batch)
        batch["peak_rss_mib"] = numpy.full(len(batch["message"]), peak_rss_mib())
        return batch


def run_ray(work: list[dict], batch_size: int) -> tuple[float, list | None, list[float]]:
    """map_batches in 2 actors until the dataset is materialized (the messages in Ray's object
    store, as before a write_parquet): the time includes starting the actors, not ray.init,
    building the input dataset or reading the messages back to check them."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.execution_options.preserve_order = True
    seconds = 0.0
    messages, peaks = [], set()
    for w in work:
        source = ray.data.from_items(w["rows"]).materialize()
        start = time.perf_counter()
        parsed = source.map_batches(
            _MeasuredParse,
            fn_constructor_kwargs={
                "template": w["name"], "prefix_column": "prefix", "tools": w["tools"], "errors": "collect",
            },
            compute=ray.data.ActorPoolStrategy(size=2),
            batch_size=batch_size,
        ).materialize()
        seconds += time.perf_counter() - start
        for batch in parsed.iter_batches(batch_size=None, batch_format="pyarrow"):
            messages += [None if m is None else json.loads(m) for m in batch.column("message").to_pylist()]
            peaks.update(batch.column("peak_rss_mib").to_pylist())
    return seconds, messages, sorted(peaks)


def run_reference(work: list[dict]) -> tuple[float, list | None, list[float]]:
    import logging

    logging.getLogger("transformers").setLevel(logging.ERROR)
    from transformers.utils.chat_parsing import parse_response as ref_parse
    from transformers.utils.chat_parsing.response_templates import load_response_template

    start = time.perf_counter()
    messages = []
    for w in work:
        template = load_response_template(load_template_file(ROOT / "templates" / f"{w['name']}.json"))
        for row in w["rows"]:
            try:
                messages.append(ref_parse(row["text"], template, prefix=row["prefix"], tools=w["tools"]))
            except Exception:  # noqa: BLE001 - a failed row, as parse_batch's collect records it
                messages.append(None)
    return time.perf_counter() - start, messages, [peak_rss_mib()]


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line, sep, *("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="replies to parse (default 100,000)")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference's loop (the slowest part)")
    parser.add_argument("--no-ray", action="store_true", help="skip Ray Data")
    args = parser.parse_args()

    work = workloads(args.rows)
    total = sum(len(w["rows"]) for w in work)
    chars = sum(len(r["text"]) for w in work for r in w["rows"])
    print(f"respc {respc.__version__}: {respc.RUNTIME_INFO}")
    families = ", ".join(w["name"] for w in work)
    print(f"{total:,} replies ({families}), {chars / total:,.0f} characters each on average\n")
    for w in work:  # compile (or load) before timing
        respc.load(w["name"])

    ways = [
        ("respc, 1 process", 1, lambda: run_one_process(work)),
        ("respc, 2-process pool, rows and messages sent", 2, lambda: run_pool(work, 2_000)),
        ("respc, 2-process pool, rows already in the workers", 2, lambda: run_pool_shared(work, 2_000)),
    ]
    if not args.no_ray:
        if importlib.util.find_spec("ray") is None:  # (found, not imported: it would weigh on the RSS above)
            print("(Ray is not installed: pip install 'ray[data]')", file=sys.stderr)
        else:
            ways.append(("respc, Ray Data (2 CPUs)", 2, lambda: run_ray(work, 2_000)))
    if not args.no_reference:
        if importlib.util.find_spec("transformers") is None:
            print("(the reference is not installed: pip install transformers==5.24.0)", file=sys.stderr)
        else:
            ways.append(("reference loop (transformers), 1 process", 1, lambda: run_reference(work)))

    results = []
    base = None
    for label, processes, run in ways:
        seconds, messages, peaks = run()
        print(f"  {label}: {seconds:.1f} s", file=sys.stderr)
        if base is None:
            base = (seconds, messages)
        elif messages is not None:
            assert messages == base[1], f"{label} gave other messages than respc in 1 process"
        speedup = base[0] / seconds
        results.append(
            [
                label, f"{total / seconds:,.0f}", f"{speedup:.2f}x", f"{speedup / processes:.0%}",
                f"{max(peaks):.0f} MiB" if peaks else "(forked: shares the parent's)",
            ]
        )
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        sys.modules["ray"].shutdown()
    print(table(["way", "rows/s", "speed-up", "efficiency", "peak RSS per process"], results))


if __name__ == "__main__":
    main()
