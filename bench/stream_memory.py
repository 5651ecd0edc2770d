"""Memory of a long stream: a 100 MiB qwen3 output through a parser, events discarded.

    python bench/stream_memory.py                 # about 2 minutes
    python bench/stream_memory.py --size 20 --small-size 4 --ref-size 2 --ref-small-size 0.5

The output is ``<think>`` + half the size of reasoning + ``</think>`` + half of content,
fed in 4 KiB chunks and in 16-character chunks, cut from a 1 MiB block as it is fed (the
whole output never exists at once, so it takes no memory of its own; the times include
the cutting). A parser must
keep the open region's body: it becomes the message's value when the region closes. So the
least a parser can hold is about the larger body, and at the end the message itself (both
bodies, the output's size); "bounded" means nothing more grows with the output than that.

Each run is a fresh process, measured twice: once untraced (time, and how far the peak
resident size rises above the size before the run), then under tracemalloc (peak of Python's
allocations while feeding, and over the whole run including finalize; tracemalloc slows
allocation, so its run is not timed). Ratios are to the output's size. The reference
(transformers' ResponseParser) re-slices its input on every chunk, so its time grows with
the square of the output's size: it runs on smaller outputs (``--ref-size`` in 4 KiB chunks,
``--ref-small-size`` in 16-character chunks), and respc runs on the same beside it.

The first line says which respc runtime runs, compiled or the Python sources (a script's own
folder comes first on sys.path, not the current directory, so this is the installed respc).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve()
MIB = 1 << 20
BLOCK = MIB  # the text is cut from one block of this many characters, over and over


def _block() -> str:
    """1 MiB of seeded word salad, with no character that starts a qwen3 delimiter ('<')."""
    rng = random.Random(14)
    words = "the model thinks about a plan then writes an answer with some numbers 42 and 3.14 , . ; :".split()
    text = " ".join(rng.choice(words) for _ in range(BLOCK // 3))
    return (text * 2)[:BLOCK]


def _chunks(block: str, size: int, chunk: int):
    """``size`` characters of text in chunks of ``chunk`` (a divisor of BLOCK)."""
    for offset in range(0, size, chunk):
        start = offset % BLOCK
        yield block[start : start + min(chunk, size - offset)]


def _make(impl: str):
    """A function that makes a new qwen3 parser of ``impl`` (respc or the reference)."""
    import respc

    compiled = respc.load("qwen3")
    if impl == "respc":
        return lambda: compiled.parser(prefix="")
    from transformers.utils.chat_parsing import ResponseParser as RefParser

    template = json.loads(json.dumps(compiled.template))  # the same template, its own copy
    return lambda: RefParser(template, "")


def _stream(make, block: str, half: int, chunk: int, traced: bool) -> dict:
    """Feed the output through a new parser, discarding events; what it took."""
    parser = make()
    feed = parser.feed
    feed("<think>")
    for piece in _chunks(block, half, chunk):
        feed(piece)
    feed("</think>")
    for piece in _chunks(block, half, chunk):
        feed(piece)
    fed = tracemalloc.get_traced_memory()[1] if traced else 0
    message, _ = parser.finalize()
    assert len(message["reasoning_content"]) == half and len(message["content"]) == half, "wrong message"
    return {"feed_peak": fed, "message": message}


def _rss() -> tuple[int, int]:
    """(resident bytes now, peak resident bytes): from /proc on Linux, whose peak can be reset
    to now (see _reset_peak_rss); elsewhere ru_maxrss, the peak over the process's life."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
        return peak, peak
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


def _reset_peak_rss() -> None:
    """Linux: start the peak resident size anew from the current one (else it stays the peak
    the imports reached, which a small run never passes)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def measure(impl: str, size: int, chunk: int) -> dict:
    """One run (in this process): time and peak RSS growth untraced, then tracemalloc peaks."""
    make = _make(impl)
    block = _block()
    half = size // 2
    output = 2 * half + len("<think></think>")
    gc.collect()
    _reset_peak_rss()
    rss_before = _rss()[0]
    start = time.perf_counter()
    result = _stream(make, block, half, chunk, traced=False)
    seconds = time.perf_counter() - start
    rss_growth = _rss()[1] - rss_before
    del result
    gc.collect()
    tracemalloc.start()
    result = _stream(make, block, half, chunk, traced=True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "impl": impl,
        "output": output,
        "chunk": chunk,
        "seconds": seconds,
        "rss_growth": rss_growth,
        "feed_peak": result["feed_peak"],
        "peak": peak,
    }


def _run_child(impl: str, size: int, chunk: int) -> dict:
    done = subprocess.run(
        [sys.executable, str(HERE), "--child", impl, str(size), str(chunk)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        sys.exit(f"{impl} {size} {chunk}: failed\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=float, default=100, help="MiB of output streamed in 4 KiB chunks (default 100)")
    ap.add_argument("--small-size", type=float, default=100, help="MiB streamed in 16-character chunks (default 100)")
    ap.add_argument(
        "--ref-size", type=float, default=4, help="MiB the reference streams in 4 KiB chunks (default 4; 0: skip)"
    )
    ap.add_argument("--ref-small-size", type=float, default=1, help="... in 16-character chunks (default 1; 0: skip)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        impl, size, chunk = args.child
        print(json.dumps(measure(impl, int(size), int(chunk))))
        return

    import respc

    try:
        from transformers import __version__ as reference_version
    except ImportError:
        reference_version = None
    print(f"respc {respc.__version__}: {respc.RUNTIME_INFO}")
    print(f"reference: transformers {reference_version or 'not installed'}; Python {sys.version.split()[0]}")
    runs = [("respc", args.size, 4096), ("respc", args.small_size, 16)]
    for mib, chunk in ((args.ref_size, 4096), (args.ref_small_size, 16)):
        if reference_version and mib:
            runs += [("reference", mib, chunk), ("respc", mib, chunk)]
    rows = []
    for impl, mib, chunk in runs:
        row = _run_child(impl, int(mib * MIB), chunk)
        rows.append(row)
        print(".", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    def mb(n: float) -> str:
        return f"{n / MIB:.1f}" if n >= 10 * MIB else f"{n / MIB:.2f}"

    header = (
        "parser",
        "output MiB",
        "chunk",
        "time s",
        "MiB/s",
        "feed peak MiB",
        "peak MiB",
        "peak/output",
        "RSS peak +MiB",
        "RSS/output",
    )
    table = [header]
    for r in rows:
        out = r["output"]
        table.append(
            (
                r["impl"],
                mb(out),
                f"{r['chunk']} B",
                f"{r['seconds']:.2f}",
                f"{out / MIB / r['seconds']:.1f}",
                mb(r["feed_peak"]),
                mb(r["peak"]),
                f"{r['peak'] / out:.2f}",
                mb(r["rss_growth"]),
                f"{r['rss_growth'] / out:.2f}",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for index, row in enumerate(table):
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths)))
        if index == 0:
            print("  ".join("-" * width for width in widths))
    print(
        "feed peak: tracemalloc's peak while feeding (the open region's body, the closed reasoning value);\n"
        "peak: over the whole run, finalize and its message (both bodies) included; RSS peak +: how far\n"
        "the process's peak resident size rose above its size before the run (untraced run)"
    )


if __name__ == "__main__":
    main()
