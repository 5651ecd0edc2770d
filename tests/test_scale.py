"""Scale-out (issue 16): templates that travel between processes, and batch parsing on the
engines where generations live (process pools, HF datasets, Ray Data).

The texts are realistic: the bundled families' samples (templates/samples/), the long
bench replies (bench/samples/), and seeded variations of them (cut short, a tool call's
JSON broken). Every batch result is compared with a plain loop over respc.parse_response.
"""

from __future__ import annotations

import copy
import hashlib
import json
import multiprocessing
import os
import pickle
import random
import re
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import pytest
from optional import needs

needs("hypothesis")

pytestmark = pytest.mark.slow  # (the quick tier, pytest -m "not slow", leaves this module out)

from hypothesis import given, settings
from hypothesis import strategies as st

import respc
from respc.api import _parser_reduce_args

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ["qwen3", "gpt-oss", "command-a", "qwen3-coder"]


def _samples(name: str) -> dict:
    return json.loads((ROOT / "templates" / "samples" / f"{name}.json").read_text(encoding="utf-8"))


def _template(name: str) -> dict:
    return json.loads((ROOT / "templates" / f"{name}.json").read_text(encoding="utf-8"))


def strict_qwen3() -> dict:
    """Qwen3's template with tool calls that must be valid JSON: a template compiled at run
    time (no bundled module has it) whose content parser raises on a broken call."""
    template = _template("qwen3")
    template["fields"]["tool_calls"]["content_args"] = {}
    return template


BROKEN_CALL = (
    '<think>\nCall it.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {city: Paris}}\n</tool_call>'
)


def rows(name: str, count: int, seed: int = 0) -> list[tuple[str, str]]:
    """``count`` (prefix, output) rows of the family ``name``: its samples and bench reply,
    and seeded variations (cut short at a random point)."""
    cases = [(case.get("prefix", ""), case["output"]) for case in _samples(name)["cases"]]
    bench = ROOT / "bench" / "samples"
    if (bench / f"{name}.txt").is_file():
        cases.append(((bench / f"{name}.prefix.txt").read_text("utf-8"), (bench / f"{name}.txt").read_text("utf-8")))
    rng = random.Random(seed)
    out = []
    for index in range(count):
        prefix, output = cases[index % len(cases)]
        if index >= len(cases) and rng.random() < 0.5:
            output = output[: rng.randrange(len(output) + 1)]
        out.append((prefix, output))
    return out


def plain_loop(texts, template, prefixes, tools=None) -> list:
    """What parse_batch must give: respc.parse_response row by row, an exception's
    (type name, text) where a row fails."""
    out = []
    for prefix, text in zip(prefixes, texts):
        try:
            out.append(respc.parse_response(text, template, prefix=prefix, tools=tools))
        except Exception as exc:  # noqa: BLE001
            out.append((type(exc).__name__, str(exc)))
    return out


def batch_as_loop(texts, template, prefix, tools=None) -> list:
    """parse_batch(errors="collect") in plain_loop's terms: failed rows as (type name, text)."""
    messages, errors = respc.parse_batch(texts, template, prefix=prefix, tools=tools, errors="collect")
    for error in errors:
        assert messages[error.index] is None
        messages[error.index] = (error.error_type, error.message)
    return messages


# --- pickling and copying templates -------------------------------------------------------


def test_a_bundled_template_pickles_by_name_and_comes_back_as_itself():
    compiled = respc.load("qwen3")
    data = pickle.dumps(compiled)
    assert b"qwen3" in data and b"fields" not in data  # the name, not the template
    assert pickle.loads(data) is compiled


def test_a_template_compiled_at_run_time_pickles_and_parses_alike():
    compiled = respc.compile_template(strict_qwen3())
    again = pickle.loads(pickle.dumps(compiled))
    assert again.hash == compiled.hash
    text = '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}\n</tool_call>'
    assert again.parse(text, prefix="") == compiled.parse(text, prefix="")


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy])
def test_copies_of_a_template_are_usable(copier):
    for compiled in (respc.load("gpt-oss"), respc.compile_template(strict_qwen3())):
        copied = copier(compiled)
        assert copied.hash == compiled.hash
        assert copier({"t": compiled})["t"].parse("Hi", prefix="") == compiled.parse("Hi", prefix="")


def _repickled(compiled, old: bytes, new: bytes) -> bytes:
    data = pickle.dumps(compiled)
    assert data.count(old) == 1 and len(old) == len(new)
    return data.replace(old, new)


def test_unpickling_under_another_respc_version_says_what_to_install():
    # as pickled by another version: its version, and the hash that version gives (the
    # hash covers the version); replaced by strings as long, so the pickle stays valid
    compiled = respc.load("qwen3")
    other = re.sub(r"[0-8]", "9", respc.__version__)
    other_hash = hashlib.sha256(f"{respc.__version__} -> {other}".encode()).hexdigest().encode()
    data = _repickled(compiled, respc.__version__.encode(), other.encode())
    data = data.replace(compiled.hash.split(":")[1].encode(), other_hash)
    with pytest.raises(pickle.UnpicklingError) as raised:
        pickle.loads(data)
    message = str(raised.value)
    assert "the bundled template 'qwen3'" in message
    assert f"pickled by respc {other}" in message and f"this process runs respc {respc.__version__}" in message
    assert f"install respc {other} here too" in message


def test_unpickling_a_template_that_compiles_to_another_hash_fails():
    compiled = respc.compile_template(strict_qwen3())
    digest = compiled.hash.encode()
    data = _repickled(compiled, digest, digest[:-4] + (b"1111" if digest.endswith(b"0000") else b"0000"))
    with pytest.raises(pickle.UnpicklingError, match="compiled at run time.*so it would not parse alike"):
        pickle.loads(data)


def test_a_parser_class_names_its_template():
    bundled = respc.load("qwen3")
    assert _parser_reduce_args(bundled.Parser) is bundled
    assert _parser_reduce_args(type(bundled.parser(prefix=""))) is bundled
    runtime = respc.compile_template(strict_qwen3())
    assert _parser_reduce_args(runtime.Parser) is runtime
    from respc.generated.gpt_oss import Parser  # a generated module imported directly

    assert _parser_reduce_args(Parser).hash == respc.load("gpt-oss").hash
    with pytest.raises(TypeError, match="is not the Parser class of a respc generated module"):
        _parser_reduce_args(dict)


# --- process pools (the failing calls) --------------------------------------------


@pytest.fixture(scope="module", params=["spawn", "fork"])
def pool(request):
    if request.param not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {request.param} start method on this platform")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context(request.param)) as executor:
        yield executor


def test_process_pool_map_with_a_bundled_template(pool):
    compiled = respc.load("qwen3")
    texts = [output for _, output in rows("qwen3", 24)]
    got = list(pool.map(partial(respc.parse_response, template=compiled, prefix=""), texts, chunksize=4))
    assert got == [respc.parse_response(text, compiled, prefix="") for text in texts]


def test_process_pool_map_with_a_template_compiled_at_run_time(pool):
    compiled = respc.compile_template(strict_qwen3())
    texts = [output for _, output in rows("qwen3", 30, seed=1)] + [BROKEN_CALL]
    batches = [texts[:15], texts[15:]]
    got = pool.map(partial(respc.parse_batch, template=compiled, prefix="", errors="collect"), batches)
    for (messages, errors), batch in zip(got, batches):
        expected = plain_loop(batch, compiled, [""] * len(batch))
        assert [(e.error_type, e.message) for e in errors] == [x for x in expected if isinstance(x, tuple)]
        assert messages == [None if isinstance(x, tuple) else x for x in expected]
    assert errors, "the broken call is an error"


# --- parse_batch ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", FAMILIES)
def test_parse_batch_is_a_loop_of_parse_response(name):
    data = rows(name, 40, seed=2)
    prefixes, texts = [p for p, _ in data], [t for _, t in data]
    tools = _samples(name).get("tools")
    assert batch_as_loop(texts, name, prefixes, tools) == plain_loop(texts, name, prefixes, tools)
    assert batch_as_loop(tuple(texts), respc.load(name), "") == plain_loop(texts, name, [""] * len(texts))


def test_parse_batch_takes_columns_of_every_kind():
    data = rows("qwen3", 12, seed=3)
    prefixes, texts = [p for p, _ in data], [t for _, t in data]
    expected = respc.parse_batch(texts, "qwen3", prefix=prefixes)
    pa = pytest.importorskip("pyarrow")
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_dict({"text": texts, "prefix": prefixes})
    kinds = [
        (pa.array(texts), pa.array(prefixes)),
        (pa.chunked_array([texts[:5], texts[5:]]), pa.chunked_array([prefixes[:7], prefixes[7:]])),
        (dataset["text"], dataset["prefix"]),
        (np.array(texts), np.array(prefixes, dtype=object)),
        (pd.Series(texts), pd.Series(prefixes)),
        (iter(texts), prefixes),
    ]
    for column, prefix_column in kinds:
        assert respc.parse_batch(column, "qwen3", prefix=prefix_column) == expected, type(column)


def test_parse_batch_raise_names_the_row_and_chains_its_error():
    texts = ["Hello.<|im_end|>", BROKEN_CALL, BROKEN_CALL]
    with pytest.raises(respc.BatchError) as raised:
        respc.parse_batch(texts, strict_qwen3(), prefix="")
    assert raised.value.index == 1
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value.__cause__, ValueError)
    assert str(raised.value) == f"row 1: ValueError: {raised.value.__cause__}"
    assert "not valid JSON" in str(raised.value)


def test_parse_batch_collect_records_failed_rows_and_goes_on():
    data = rows("qwen3", 30, seed=4)
    texts = [t for _, t in data]
    texts[3] = BROKEN_CALL
    texts[17] = None  # a null in a column
    prefixes = [p for p, _ in data]
    prefixes[20] = None  # a null prefix
    messages, errors = respc.parse_batch(texts, strict_qwen3(), prefix=prefixes, errors="collect")
    expected = plain_loop(texts, strict_qwen3(), prefixes)
    failed = [i for i, x in enumerate(expected) if isinstance(x, tuple)]  # some cut rows fail too
    assert {3, 17, 20} <= set(failed) and len(failed) < len(texts) // 2
    assert [(e.index, e.error_type) for e in errors] == [(i, expected[i][0]) for i in failed]
    # (parse_response words a None text for its own arguments: a str or a list of str)
    assert [e.message for e in errors if e.index != 17] == [expected[i][1] for i in failed if i != 17]
    assert messages == [None if i in failed else x for i, x in enumerate(expected)]
    by_index = {error.index: error for error in errors}
    assert by_index[3].error_type == "ValueError" and "not valid JSON" in by_index[3].message
    assert by_index[17] == respc.RowError(17, "TypeError", "text must be a str, got NoneType")
    assert str(by_index[17]) == "row 17: TypeError: text must be a str, got NoneType"
    assert by_index[20].error_type == "ValueError" and "prefix is required" in by_index[20].message
    assert pickle.loads(pickle.dumps(errors)) == errors  # they travel back from workers


def test_parse_batch_types_tools_given_as_functions_as_the_plain_loop_does():
    def get_weather(city: str, days: int):
        """Get the weather."""

    texts = [output for _, output in rows("qwen3", 12, seed=5)]
    assert respc.parse_batch(texts, "qwen3", prefix="", tools=[get_weather]) == plain_loop(
        texts, "qwen3", [""] * len(texts), [get_weather]
    )
    assert respc.parse_batch(texts, "qwen3", prefix="", tools=(t for t in [get_weather])) == plain_loop(
        texts, "qwen3", [""] * len(texts), [get_weather]
    )


def test_parse_batch_argument_errors():
    with pytest.raises(ValueError, match="prefix is required"):
        respc.parse_batch(["a"], "qwen3")
    with pytest.raises(ValueError, match="got 2 texts but 1 prefixes"):
        respc.parse_batch(["a", "b"], "qwen3", prefix=[""])
    with pytest.raises(TypeError, match="parse one text with respc.parse_response"):
        respc.parse_batch("a text", "qwen3", prefix="")
    with pytest.raises(TypeError, match="prefix must be a list of str"):
        respc.parse_batch(["a"], "qwen3", prefix=3)
    with pytest.raises(ValueError, match='errors must be "raise" or "collect"'):
        respc.parse_batch(["a"], "qwen3", prefix="", errors="ignore")
    with pytest.raises(respc.TemplateError, match="no bundled template"):
        respc.parse_batch(["a"], "qwen-3000", prefix="")
    assert respc.parse_batch([], "qwen3", prefix="") == []
    assert respc.parse_batch([], "qwen3", prefix="", errors="collect") == ([], [])


_POOL = rows("qwen3", 30, seed=6) + [("", BROKEN_CALL), ("", "<tool_call>\n{\"name\": 1}</tool_call>")]


@settings(max_examples=40, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(_POOL) - 1), max_size=12),
    shared_prefix=st.booleans(),
    errors=st.sampled_from(["raise", "collect"]),
)
def test_parse_batch_matches_the_plain_loop_on_any_mix_of_rows(picks, shared_prefix, errors):
    template = strict_qwen3()
    texts = [_POOL[i][1] for i in picks]
    prefixes = [""] * len(picks) if shared_prefix else [_POOL[i][0] for i in picks]
    expected = plain_loop(texts, template, prefixes)
    prefix = "" if shared_prefix else prefixes
    failed = [i for i, x in enumerate(expected) if isinstance(x, tuple)]
    if errors == "collect":
        messages, row_errors = respc.parse_batch(texts, template, prefix=prefix, errors="collect")
        assert [(e.index, e.error_type, e.message) for e in row_errors] == [(i, *expected[i]) for i in failed]
        assert messages == [None if i in failed else x for i, x in enumerate(expected)]
    elif failed:
        with pytest.raises(respc.BatchError) as raised:
            respc.parse_batch(texts, template, prefix=prefix)
        assert raised.value.index == failed[0]
        assert (type(raised.value.__cause__).__name__, str(raised.value.__cause__)) == expected[failed[0]]
    else:
        assert respc.parse_batch(texts, template, prefix=prefix) == expected


# --- HF datasets ----------------------------------------------------------------------------


def test_datasets_map_with_two_processes_gives_the_plain_loops_messages():
    datasets = pytest.importorskip("datasets", reason="HF datasets is not installed (pip install respc[test])")
    data = rows("qwen3", 200, seed=7)
    data[57] = ("", BROKEN_CALL)
    compiled = respc.compile_template(strict_qwen3())  # travels to the workers pickled

    def parse(batch):
        messages, errors = respc.parse_batch(batch["text"], compiled, prefix=batch["prefix"], errors="collect")
        failed = {error.index: f"{error.error_type}: {error.message}" for error in errors}
        return {
            "message": [None if m is None else json.dumps(m) for m in messages],
            "error": [failed.get(i) for i in range(len(messages))],
            "pid": [os.getpid()] * len(messages),
        }

    dataset = datasets.Dataset.from_dict({"prefix": [p for p, _ in data], "text": [t for _, t in data]})
    parsed = dataset.map(parse, batched=True, batch_size=16, num_proc=2)
    expected = plain_loop(dataset["text"], compiled, dataset["prefix"])
    got = [json.loads(m) if m is not None else None for m in parsed["message"]]
    assert got == [None if isinstance(x, tuple) else x for x in expected]
    assert parsed["error"][57] == "ValueError: " + expected[57][1]
    assert sum(e is not None for e in parsed["error"]) == sum(isinstance(x, tuple) for x in expected)
    assert len(set(parsed["pid"]) - {os.getpid()}) == 2  # parsed in two worker processes


# --- Ray Data -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install respc[test] installs ray[data])")
    pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'ray[data]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True  # rows come back in the items' order
    try:
        yield ray
    finally:
        ray.shutdown()


def _ray_items(count: int, seed: int) -> list[dict]:
    data = rows("qwen3", count, seed=seed)
    return [{"id": i, "prefix": p, "text": t} for i, (p, t) in enumerate(data)]


@pytest.mark.xdist_group("ray")  # one Ray cluster: under pytest -n, both on one worker
def test_ray_data_pipeline_gives_the_plain_loops_messages(ray_cluster):
    import respc.ray

    items = _ray_items(120, seed=8)
    tools = _samples("qwen3")["tools"]
    dataset = ray_cluster.data.from_items(items).map_batches(
        respc.ray.ParseBatches("qwen3", prefix_column="prefix", tools=tools), batch_size=16
    )
    expected = plain_loop([i["text"] for i in items], "qwen3", [i["prefix"] for i in items], tools)
    assert respc.ray.messages(dataset) == expected
    assert [row["id"] for row in dataset.iter_rows()] == list(range(len(items)))


@pytest.mark.xdist_group("ray")  # one Ray cluster: under pytest -n, both on one worker
def test_ray_data_actors_and_batch_formats(ray_cluster):
    import respc.ray

    items = _ray_items(60, seed=9)
    items[11]["text"] = BROKEN_CALL
    template = strict_qwen3()
    expected = plain_loop([i["text"] for i in items], template, [""] * len(items))
    for batch_format in ("pandas", "pyarrow"):
        dataset = ray_cluster.data.from_items(items).map_batches(
            respc.ray.ParseBatches,
            fn_constructor_kwargs={"template": template, "prefix": "", "errors": "collect"},
            compute=ray_cluster.data.ActorPoolStrategy(size=2),  # (concurrency=2 before Ray 2.51)
            batch_size=8,
            batch_format=batch_format,
        ).materialize()
        got = {
            row["id"]: (json.loads(row["message"]) if row["message"] else None, row["error"])
            for row in dataset.iter_rows()
        }
        assert [got[i][0] for i in range(len(items))] == [None if isinstance(x, tuple) else x for x in expected]
        assert [got[i][1] for i in range(len(items))] == [
            f"{x[0]}: {x[1]}" if isinstance(x, tuple) else None for x in expected
        ]
        assert got[11][1].startswith("ValueError: json: the region is not valid JSON")


def test_ray_parse_batches_arguments():
    import respc.ray

    with pytest.raises(ValueError, match="pass prefix= .* or prefix_column=: prefix is required"):
        respc.ray.ParseBatches("qwen3")
    with pytest.raises(ValueError, match="not both"):
        respc.ray.ParseBatches("qwen3", prefix="", prefix_column="prefix")
    parse = respc.ray.ParseBatches("qwen3", prefix="", text_column="output")
    with pytest.raises(KeyError, match="no column 'output' .it has: text"):
        parse({"text": ["Hi"]})


def test_ray_json_strings_keep_what_arrow_would_lose():
    import respc.ray

    message = {
        "role": "assistant",
        "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": {"x": [1, 2.5], "y": float("nan")}}}
        ],
        "content": "caf\u00e9 \ud800",
    }
    text = respc.ray.dumps(message)
    text.encode("utf-8")  # Arrow strings are UTF-8: a lone surrogate is escaped
    back = json.loads(text)
    assert back["tool_calls"][0]["function"]["arguments"]["x"] == [1, 2.5]
    assert type(back["tool_calls"][0]["function"]["arguments"]["x"][0]) is int
    assert back["content"] == message["content"]
    assert respc.ray.dumps({"content": "caf\u00e9"}) == '{"content": "caf\u00e9"}'
