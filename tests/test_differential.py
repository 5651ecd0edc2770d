"""Seeded, randomized differential test: respc against the reference (transformers' chat_parsing).

Every case is one (template, model output, prefix, tools, chunking) comparison of the streamed events
(``initial_events``, each ``feed``, ``finalize``), the final message and the raised error classes.
Invalid templates must be rejected by both (respc with ``TemplateError``).

Knobs (environment variables):

- ``RESPC_DIFF_CASES``  minimum number of cases (default 60000; 0 skips the test)
- ``RESPC_DIFF_SEED``   generator seed (default 20260)
- ``RESPC_DIFF_INPUTS`` inputs generated per template (default 8)

A failure prints reproducible cases; replay one with
``python tests/differential/run.py --seed SEED --group GROUP -v`` (add ``--minimize`` to shrink it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent / "differential"
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from optional import needs

needs("transformers.utils.chat_parsing")

pytestmark = pytest.mark.slow  # (the quick tier, pytest -m "not slow", leaves this module out)
import respc  # noqa: E402

import harness  # noqa: E402

CASES = int(os.environ.get("RESPC_DIFF_CASES", "60000"))
SEED = int(os.environ.get("RESPC_DIFF_SEED", "20260"))
INPUTS = int(os.environ.get("RESPC_DIFF_INPUTS", "8"))


@pytest.mark.skipif(CASES <= 0, reason="RESPC_DIFF_CASES=0")
@pytest.mark.filterwarnings("ignore::respc.TemplateWarning")  # loose templates are generated on purpose
def test_differential_against_reference(monkeypatch, capsys):
    # compile in memory only: do not fill the user's disk cache with hundreds of random templates
    monkeypatch.setenv("RESPC_CACHE_DIR", "")
    stats = harness.run(SEED, CASES, respc_mod=respc, inputs_per_group=INPUTS)
    summary = stats.summary()
    with capsys.disabled():
        print("\n" + summary)
    assert stats.cases >= CASES
    if stats.mismatches:
        shown = "\n".join(
            harness.format_failure(rec) if "reference" in rec else repr(rec) for rec in stats.failures[:5]
        )
        pytest.fail(
            f"{stats.mismatches} differential mismatch(es)\n{summary}\n\nfirst failures:\n{shown}",
            pytrace=False,
        )
