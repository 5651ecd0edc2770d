"""Comparison helpers shared by the parity test modules (imported as ``compare``: the
tests folder is put on ``sys.path`` by conftest.py)."""

from __future__ import annotations

import math


def assert_same(got, want, where="$"):
    """Deep equality that also compares types (so True != 1 and 2 != 2.0) and treats NaN == NaN."""
    assert type(got) is type(want), f"{where}: {type(got).__name__} {got!r} != {type(want).__name__} {want!r}"
    if isinstance(want, dict):
        assert set(got) == set(want), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for k in want:
            assert_same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), f"{where}: len {len(got)} != {len(want)}\n{got!r}\n{want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), f"{where}: {got!r} != nan"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def run_stream(make_parser, chunks):
    parser = make_parser()
    initial = list(parser.initial_events)
    fed = [parser.feed(chunk) for chunk in chunks]
    message, final = parser.finalize()
    return {"initial": initial, "fed": fed, "final": final, "message": message}
