"""Threads: one CompiledTemplate serves many threads at once (each with its own parsers),
and a template new to the process may be compiled by many threads at once.

The outputs are the bundled families' samples (templates/samples/), streamed in seeded
random chunks; every thread's events and messages must be the ones a single thread gets.
The interpreter is made to switch threads every few microseconds (instead of every 5 ms),
so the threads' feeds really interleave.
"""

from __future__ import annotations

import copy
import json
import random
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from compare import assert_same, run_stream

import respc

ROOT = Path(__file__).resolve().parent.parent
THREADS = 8
JOBS_PER_THREAD = 24


def _samples(name: str) -> dict:
    return json.loads((ROOT / "templates" / "samples" / f"{name}.json").read_text(encoding="utf-8"))


def _template(name: str) -> dict:
    return json.loads((ROOT / "templates" / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture
def interleaved():
    """Switch threads every 10 µs while the test runs."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def _runtime_compiled(name: str) -> respc.CompiledTemplate:
    """The bundled template ``name`` as a template compiled at run time: ``"version": 1``
    changes its hash, not its meaning, so it is not the bundled module."""
    compiled = respc.compile_template({"version": 1, **_template(name)})
    assert not compiled.module.__name__.startswith("respc.generated."), compiled.module.__name__
    return compiled


def _chunks(text: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(text):
        size = rng.choice((1, 1, 2, 3, 4, 5, 8, 13, 32))
        out.append(text[i : i + size])
        i += size
    return out


def _jobs(families: dict, rng: random.Random) -> list[tuple]:
    """Seeded work for one thread: (family, case, chunks) picked at random."""
    jobs = []
    for _ in range(JOBS_PER_THREAD):
        family = rng.choice(sorted(families))
        case = rng.choice(families[family][1]["cases"])
        jobs.append((family, case, _chunks(case["output"], rng)))
    return jobs


def _run(families: dict, job: tuple) -> tuple:
    """One job: the whole output parsed at once, and streamed in the job's chunks."""
    family, case, chunks = job
    compiled, samples = families[family]
    tools = samples["tools"] if case.get("tools", True) else None
    whole = compiled.parse(case["output"], prefix=case["prefix"], tools=tools)
    streamed = run_stream(lambda: compiled.parser(prefix=case["prefix"], tools=tools), chunks)
    return whole, streamed


def test_one_compiled_template_shared_by_threads(interleaved):
    """Bundled (generated, compiled with the runtime in a compiled install) and run-time
    compiled templates, each shared by 8 threads that stream different outputs at once."""
    families = {
        "qwen3": (respc.load("qwen3"), _samples("qwen3")),
        "gpt-oss": (respc.load("gpt-oss"), _samples("gpt-oss")),
        "qwen3-coder (compiled at run time)": (_runtime_compiled("qwen3-coder"), _samples("qwen3-coder")),
    }
    work = [_jobs(families, random.Random(f"threads:{worker}")) for worker in range(THREADS)]
    alone = [[_run(families, job) for job in jobs] for jobs in work]
    for jobs, results in zip(work, alone):  # the single-threaded runs give the samples' messages
        for (_, case, _), (whole, streamed) in zip(jobs, results):
            assert_same(whole, case["expected"])
            assert_same(streamed["message"], case["expected"])

    start = threading.Barrier(THREADS, timeout=120)

    def worker(jobs: list[tuple]) -> list[tuple]:
        start.wait()
        return [_run(families, job) for job in jobs]

    with ThreadPoolExecutor(THREADS) as pool:
        together = list(pool.map(worker, work))
    for index, (got, want) in enumerate(zip(together, alone)):
        assert_same(got, want, f"thread {index}")


@pytest.mark.parametrize("shared_dict", [True, False], ids=["one-dict", "equal-dicts"])
def test_threads_compile_a_new_template_at_once(interleaved, shared_dict, tmp_path, monkeypatch):
    """8 threads compile the same template, new to the process and to the disk cache, at
    the same moment (the same dict object, or each its own equal copy): each gets the one
    compiled template, and it parses every sample as a single thread does."""
    monkeypatch.setenv("RESPC_CACHE_DIR", str(tmp_path))
    template = _template("qwen3")
    # a default no other test uses makes the template new to this process
    template["defaults"]["metadata"] = {"test": f"threads compile at once ({'one' if shared_dict else 'equal'} dict)"}
    samples = _samples("qwen3")
    rng = random.Random(f"compile:{shared_dict}")
    chunkings = [_chunks(case["output"], rng) for case in samples["cases"]]
    start = threading.Barrier(THREADS, timeout=120)

    def worker(own: dict) -> tuple:
        start.wait()
        compiled = respc.compile_template(own)
        messages = [compiled.parse(c["output"], prefix=c["prefix"], tools=samples["tools"]) for c in samples["cases"]]
        streams = [
            run_stream(lambda: compiled.parser(prefix=case["prefix"], tools=samples["tools"]), chunks)
            for case, chunks in zip(samples["cases"], chunkings)
        ]
        return compiled, messages, streams

    dicts = [template if shared_dict else copy.deepcopy(template) for _ in range(THREADS)]
    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(worker, dicts))

    first = results[0][0]
    assert all(compiled is first for compiled, _, _ in results)  # compiled once, shared
    assert first.hash == respc.compiler.template_hash(template)
    assert len(list(tmp_path.glob("*.py"))) == 1  # one module written to the disk cache
    for _, messages, streams in results:
        for case, message, stream in zip(samples["cases"], messages, streams):
            expected = {**case["expected"], "metadata": template["defaults"]["metadata"]}
            assert_same(message, expected)
            assert_same(stream["message"], expected)
    alone = [
        run_stream(lambda: first.parser(prefix=case["prefix"], tools=samples["tools"]), chunks)
        for case, chunks in zip(samples["cases"], chunkings)
    ]
    for _, _, streams in results:
        assert_same(streams, alone)
