"""`respc parse-batch`, run as a user would (a subprocess): JSON lines and Parquet files in,
the same rows with their messages out, errors per row, a progress bar, and resumption
after an interrupt (Ctrl-C, or the process killed) that writes the same bytes as a run
that was never interrupted."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import respc
from test_cli import assert_one_line_error
from test_cli import respc as respc_cli

# files through `respc parse-batch` child processes (the quick tier, pytest -m "not slow", leaves them out)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = json.loads((ROOT / "templates" / "samples" / "qwen3.json").read_text(encoding="utf-8"))
BROKEN_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {city: Paris}}\n</tool_call>'


def strict_template(folder: Path) -> Path:
    """Qwen3's template with tool calls that must be valid JSON (so a broken call fails)."""
    template = json.loads((ROOT / "templates" / "qwen3.json").read_text(encoding="utf-8"))
    template["fields"]["tool_calls"]["content_args"] = {}
    path = folder / "strict.json"
    path.write_text(json.dumps(template), encoding="utf-8")
    return path


def make_rows(count: int) -> list[dict]:
    """Rows as a dataset holds them: an id, the chat prompt, the output, other columns."""
    cases = SAMPLES["cases"]
    return [
        {"id": i, "prompt": cases[i % len(cases)]["prefix"], "text": cases[i % len(cases)]["output"], "score": i / 4}
        for i in range(count)
    ]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_parquet(path: Path, rows: list[dict], row_group_size: int = 700) -> Path:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def expected_messages(rows: list[dict], template) -> list:
    messages, errors = respc.parse_batch(
        [r["text"] for r in rows], template, prefix=[r["prompt"] for r in rows], errors="collect"
    )
    failed = {e.index: f"{e.error_type}: {e.message}" for e in errors}
    return [(m, failed.get(i)) for i, m in enumerate(messages)]


def test_jsonl_rows_keep_their_columns_and_order_and_get_their_messages(tmp_path):
    rows = make_rows(45)
    rows[7]["text"] = BROKEN_CALL
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    template = strict_template(tmp_path)
    out = tmp_path / "out.jsonl"
    done = respc_cli(
        "parse-batch", template, source, "-o", out, "--prefix-column", "prompt", "--errors", "collect",
        "--block-rows", "10", "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    expected = expected_messages(rows, respc.compile_template(str(template)))
    failed = sum(error is not None for _, error in expected)  # the broken call, and calls cut short
    assert done.stderr == f"respc parse-batch: 45 rows, {failed} failed -> {out}\n"
    got = read_jsonl(out)
    assert [{k: r[k] for k in ("id", "prompt", "text", "score")} for r in got] == rows
    assert [(r["message"], r["error"]) for r in got] == expected
    assert got[7]["message"] is None and got[7]["error"].startswith("ValueError: json: the region is not valid JSON")
    assert not (tmp_path / "out.jsonl.progress.json").exists()


def test_jsonl_with_one_prefix_tools_and_other_column_names(tmp_path):
    rows = [{"output": case["output"], "message": "replaced"} for case in SAMPLES["cases"]]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    (tmp_path / "tools.json").write_text(json.dumps(SAMPLES["tools"]), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = respc_cli(
        "parse-batch", "qwen3", source, "-o", out, "--text-column", "output", "--no-prefix",
        "--tools-file", tmp_path / "tools.json", "--output-column", "parsed", "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    got = read_jsonl(out)
    expected = respc.parse_batch([r["output"] for r in rows], "qwen3", prefix="", tools=SAMPLES["tools"])
    assert [r["parsed"] for r in got] == expected
    assert all(list(r) == ["output", "message", "parsed"] and "error" not in r for r in got)


def test_parquet_rows_keep_their_columns_and_get_messages_as_json_strings(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    rows = make_rows(33)
    rows[20]["text"] = BROKEN_CALL
    source = write_parquet(tmp_path / "in.parquet", rows, row_group_size=7)
    template = strict_template(tmp_path)
    out = tmp_path / "out.parquet"
    done = respc_cli(
        "parse-batch", template, source, "-o", out, "--prefix-column", "prompt", "--errors", "collect",
        "--block-rows", "10", "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    table = pq.read_table(out)
    assert table.column_names == ["id", "prompt", "text", "score", "message", "error"]
    assert pq.ParquetFile(out).metadata.num_row_groups == 4  # one per block
    got = table.to_pylist()
    assert [{k: r[k] for k in ("id", "prompt", "text", "score")} for r in got] == rows
    expected = expected_messages(rows, respc.compile_template(str(template)))
    assert [(None if r["message"] is None else json.loads(r["message"]), r["error"]) for r in got] == expected
    assert got[20]["error"].startswith("ValueError: ")


def test_errors_raise_names_the_line_and_stops(tmp_path):
    rows = [dict(row, text="Hello.<|im_end|>") for row in make_rows(12)]
    rows[9]["text"] = BROKEN_CALL
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    done = respc_cli(
        "parse-batch", strict_template(tmp_path), source, "-o", tmp_path / "out.jsonl", "--prefix-column", "prompt",
        "--no-progress",
    )
    assert_one_line_error(done, f"{source}:10: ValueError: json: the region is not valid JSON", "--errors collect")


def test_the_progress_bar_shows_rows_per_second_and_errors(tmp_path):
    rows = make_rows(30)
    rows[3]["text"] = BROKEN_CALL
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    template = strict_template(tmp_path)
    done = respc_cli(
        "parse-batch", template, source, "-o", tmp_path / "out.jsonl", "--prefix-column", "prompt",
        "--errors", "collect", "--block-rows", "10",
    )
    assert done.returncode == 0, done.stderr
    failed = sum(error is not None for _, error in expected_messages(rows, respc.compile_template(str(template))))
    assert "30/30" in done.stderr and "rows/s" in done.stderr and f"errors={failed}]" in done.stderr, done.stderr


def _default_sigint() -> None:
    # (in the child, before the exec) Ctrl-C as a shell delivers it: a process whose parent
    # ignores or blocks SIGINT inherits that, and Python then raises no KeyboardInterrupt (a
    # test worker whose SIGINT was left so let parse-batch run to the end, exit 0, in one CI
    # run; multiprocess's resource tracker and managers ignore or block it while they start)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _start(args: list, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "respc", *map(str, args)], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,
    )


def _interrupt_after_first_block(args: list, sidecar: Path, how: int, cwd: Path) -> subprocess.CompletedProcess:
    """Start parse-batch, and once its progress file records a block, stop it with ``how``."""
    process = _start(args, cwd)
    deadline = time.monotonic() + 120
    while not sidecar.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no block was written"
        time.sleep(0.002)
    assert process.poll() is None, "it finished before it could be interrupted: give it more rows"
    process.send_signal(how)
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout.decode(), stderr.decode())


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_an_interrupted_run_resumes_to_the_same_bytes(tmp_path, suffix, how):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    rows = make_rows(8000)
    rows[5]["text"] = BROKEN_CALL
    source = (write_jsonl if suffix == ".jsonl" else write_parquet)(tmp_path / f"in{suffix}", rows)
    template = strict_template(tmp_path)
    block = 50 if suffix == ".jsonl" else 200  # (a Parquet block is a part file until the end)

    def command(out: Path) -> list:
        return [
            "parse-batch", template, source, "-o", out, "--prefix-column", "prompt", "--errors", "collect",
            "--block-rows", block, "--no-progress",
        ]

    whole = tmp_path / f"whole{suffix}"
    uninterrupted = respc_cli(*command(whole))
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    out = tmp_path / f"out{suffix}"
    sidecar = tmp_path / f"out{suffix}.progress.json"
    stopped = _interrupt_after_first_block(command(out), sidecar, how, tmp_path)
    if how == signal.SIGINT:
        assert stopped.returncode == 130
        assert "rerun the same command to continue" in stopped.stderr and "Traceback" not in stopped.stderr
    else:
        assert stopped.returncode == -signal.SIGKILL
    progress = json.loads(sidecar.read_text(encoding="utf-8"))
    assert 0 < progress["done"]["rows"] < len(rows) and progress["done"]["rows"] % block == 0
    assert progress["input"] == str(source.resolve()) and progress["template_hash"].startswith("sha256:")
    resumed = respc_cli(*command(out))
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr == uninterrupted.stderr.replace(str(whole), str(out))
    assert out.read_bytes() == whole.read_bytes()
    assert not sidecar.exists() and not (tmp_path / f"out{suffix}.parts").exists()


def test_a_progress_file_of_another_command_is_an_error_and_restart_ignores_it(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", make_rows(20))
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.progress.json").write_text(
        json.dumps({"input": "elsewhere.jsonl", "done": {"rows": 10}}), encoding="utf-8"
    )
    base = ["parse-batch", "qwen3", source, "-o", out, "--prefix-column", "prompt", "--no-progress"]
    assert_one_line_error(
        respc_cli(*base), "out.jsonl.progress.json: left by an interrupted run of another command", "--restart"
    )
    done = respc_cli(*base, "--restart")
    assert done.returncode == 0, done.stderr
    assert len(read_jsonl(out)) == 20


def test_error_paths_are_one_line(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", make_rows(5))
    out = tmp_path / "out.jsonl"
    run = lambda *args: respc_cli("parse-batch", "qwen3", *args, "--no-progress")  # noqa: E731
    assert_one_line_error(run(source, "-o", out), "parse-batch needs --prefix-column C", "--no-prefix")
    assert_one_line_error(
        run(source, "-o", out, "--no-prefix", "--prefix-column", "prompt"), "not allowed with argument"
    )
    assert_one_line_error(
        run(source, "-o", out, "--no-prefix", "--text-column", "body"),
        f"{source}:1: no 'body' column (it has: 'id', 'prompt', 'text', 'score'); name the column with --text-column",
    )
    assert_one_line_error(run(source, "-o", out, "--prefix-column", "system"), f"{source}:1: no 'system' column")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a"}\n\n{"text": "b"\n', encoding="utf-8")
    assert_one_line_error(run(bad, "-o", out, "--no-prefix"), f"{bad}:3: not valid JSON", "one JSON object")
    bad.write_text('{"text": "a"}\n["b"]\n', encoding="utf-8")
    assert_one_line_error(run(bad, "-o", out, "--no-prefix"), f"{bad}:2: a row is a JSON object, got an array")
    bad.write_bytes(b'{"text": "a"}\n{"text": "\xff"}\n')
    assert_one_line_error(run(bad, "-o", out, "--no-prefix"), f"{bad}:2: not valid UTF-8")
    csv = tmp_path / "in.csv"
    csv.write_text("text\nhi\n", encoding="utf-8")
    assert_one_line_error(run(csv, "-o", out, "--no-prefix"), "unknown input format '.csv'", ".jsonl", ".parquet")
    assert_one_line_error(run(source, "-o", tmp_path / "out.parquet", "--no-prefix"), "input's format (.jsonl)")
    assert_one_line_error(run(source, "-o", source, "--no-prefix"), "would overwrite the input")
    assert_one_line_error(run(tmp_path / "missing.jsonl", "-o", out, "--no-prefix"), "missing.jsonl: cannot read")
    assert_one_line_error(run(source, "-o", out, "--no-prefix", "--block-rows", "0"), "--block-rows must be")


def test_parquet_error_paths(tmp_path):
    pytest.importorskip("pyarrow")
    source = write_parquet(tmp_path / "in.parquet", make_rows(5))
    out = tmp_path / "out.parquet"
    run = lambda *args: respc_cli("parse-batch", "qwen3", *args, "--no-progress")  # noqa: E731
    assert_one_line_error(
        run(source, "-o", out, "--no-prefix", "--text-column", "body"),
        f"{source}: no 'body' column (it has: 'id', 'prompt', 'text', 'score')",
    )
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    assert_one_line_error(run(broken, "-o", out, "--no-prefix"), f"{broken}: cannot read it as Parquet")
    no_pyarrow = (
        "import sys; sys.modules['pyarrow'] = None; from respc.cli import main; "
        f"sys.exit(main(['parse-batch', 'qwen3', {str(source)!r}, '-o', {str(out)!r}, '--no-prefix']))"
    )
    done = subprocess.run([sys.executable, "-c", no_pyarrow], capture_output=True, text=True, timeout=120)
    assert_one_line_error(done, "needs pyarrow: pip install pyarrow")


def test_collect_makes_rows_that_cannot_be_read_error_rows_and_goes_on(tmp_path):
    rows = make_rows(6)
    lines = [json.dumps(row).encode("utf-8") for row in rows]
    lines[1] = json.dumps({"id": 1, "prompt": rows[1]["prompt"]}).encode("utf-8")  # no text column
    lines[2] = b'{"id": 2, "text": "\xff"}'  # not UTF-8
    lines[3] = b'{"id": 3, "text": '  # not JSON
    lines[4] = b'["not", "an", "object"]'
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.jsonl"
    done = respc_cli(
        "parse-batch", "qwen3", source, "-o", out, "--prefix-column", "prompt", "--errors", "collect",
        "--block-rows", "4", "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"respc parse-batch: 6 rows, 4 failed -> {out}\n"
    got = read_jsonl(out)
    assert len(got) == 6
    expected = respc.parse_batch([rows[0]["text"], rows[5]["text"]], "qwen3", prefix=[rows[0]["prompt"], rows[5]["prompt"]])
    assert [got[0]["message"], got[5]["message"]] == expected and got[0]["error"] is None is got[5]["error"]
    assert got[1]["id"] == 1 and got[1]["message"] is None
    assert got[1]["error"] == "KeyError: no 'text' column (it has: 'id', 'prompt'); name the column with --text-column"
    assert got[2] == {"message": None, "error": got[2]["error"]} and got[2]["error"].startswith("UnicodeDecodeError: not valid UTF-8")
    assert got[3]["message"] is None and got[3]["error"].startswith("JSONDecodeError: not valid JSON")
    assert got[4] == {"message": None, "error": "TypeError: a row is a JSON object, got an array"}


def test_an_existing_output_column_is_an_error_unless_overwrite(tmp_path):
    rows = [dict(row, message="mine") for row in make_rows(3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    run = lambda *args: respc_cli("parse-batch", "qwen3", source, "-o", out, "--prefix-column", "prompt", "--no-progress", *args)  # noqa: E731
    assert_one_line_error(run(), f"{source}:1: the input already has a 'message' column", "--output-column", "--overwrite")
    assert_one_line_error(
        run("--output-column", "parsed", "--errors", "collect", "--error-column", "id"),
        f"{source}:1: the input already has a 'id' column", "--error-column",
    )
    done = run("--overwrite")
    assert done.returncode == 0, done.stderr
    assert [r["message"] for r in read_jsonl(out)] == respc.parse_batch(
        [r["text"] for r in rows], "qwen3", prefix=[r["prompt"] for r in rows]
    )
    done = run("--output-column", "parsed")
    assert done.returncode == 0, done.stderr
    assert [r["message"] for r in read_jsonl(out)] == ["mine"] * 3


def test_an_existing_output_column_is_an_error_unless_overwrite_parquet(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [dict(row, message="mine") for row in make_rows(3)]
    source = write_parquet(tmp_path / "in.parquet", rows)
    out = tmp_path / "out.parquet"
    run = lambda *args: respc_cli("parse-batch", "qwen3", source, "-o", out, "--prefix-column", "prompt", "--no-progress", *args)  # noqa: E731
    assert_one_line_error(run(), f"{source}: the input already has a 'message' column", "--overwrite")
    done = run("--overwrite")
    assert done.returncode == 0, done.stderr
    assert pq.read_table(out).column_names == ["id", "prompt", "text", "score", "message"]
    assert all(r["message"] != "mine" for r in pq.read_table(out).to_pylist())


def test_the_progress_total_counts_rows_not_blank_lines(tmp_path):
    rows = make_rows(8)
    source = tmp_path / "in.jsonl"
    source.write_text("\n\n".join(json.dumps(row) for row in rows) + "\n \n\t\n", encoding="utf-8")
    done = respc_cli(
        "parse-batch", "qwen3", source, "-o", tmp_path / "out.jsonl", "--prefix-column", "prompt", "--block-rows", "3",
    )
    assert done.returncode == 0, done.stderr
    assert "8/8" in done.stderr and "/17" not in done.stderr, done.stderr
