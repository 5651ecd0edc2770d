"""The ``respc`` command line.

    respc compile TEMPLATE [-o FILE] [--no-format] [--strict]  print or write the generated module
    respc parse TEMPLATE [FILE|-] (--prefix-file F | --no-prefix) [--tools-file F] [--stream] [--chunk-size N]
    respc parse-batch TEMPLATE INPUT.jsonl|.parquet -o OUT (--prefix-column C | --prefix-file F | --no-prefix)
                                                          parse a column of outputs; resumable (docs/scale.md)
    respc build [--check] [--templates DIR] [--out DIR]   regenerate generated/ from templates/
    respc list                                            the bundled templates
    respc lint TEMPLATE                                   what makes the template fragile (exit 1: findings)
    respc grammar TEMPLATE --tools-file F [--format lark|structural-tag] [--tool-choice X]
                  [--no-parallel-tool-calls] [--prefix-file P] [--special-tokens-file S]
                                                          the grammar of its replies (docs/grammar.md)
    respc diff OLD NEW [--samples DIR]                    review a template change (exit 1: behaviour changes)
    respc detect PATH                                     the bundled family a chat template writes (exit 1: none)
    respc infer PATH [-o OUT.json] [--report]             a response template inferred from a chat template

TEMPLATE is a JSON file (a template, or a tokenizer_config.json holding one) or the name of
a bundled template (``respc list``; ``-``, ``.`` and ``_`` alike): a string that names an
existing file, ends in ``.json`` or holds a path separator is a path.

Exit status: 0 done; 1 for what a command reports (lint findings, diff's changed messages,
stale modules for build --check); 2 for an error. Every error a user can cause (bad
arguments, an unreadable or non-UTF-8 file, an invalid template, tools or model output)
prints one line ``respc: error: WHAT: PROBLEM`` on stderr, never a traceback. A template's
warnings print as ``respc: warning: PATH: ...`` lines on stderr.

Files and stdin are read as bytes and decoded as strict UTF-8 (the error names the file and
the byte), with no newline translation: ``\\r\\n`` reaches the parser as the model wrote it.

What parse (and diff) print is always valid JSON: NaN and the infinities, which JSON has no
numbers for, are written as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``;
values nest to any depth; non-ASCII text is written as it is, unless stdout's encoding
cannot write it (a lone surrogate from a ``"\\ud800"`` escape never can), in which case that
JSON value is written with ``\\uXXXX`` escapes (ensure_ascii), which decode to the same text.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from json.encoder import encode_basestring, encode_basestring_ascii
from pathlib import Path
from typing import Any, NoReturn

from . import COMPILED_RUNTIME
from ._version import __version__

EXIT_USAGE = 2
EXIT_STALE = 1
#: parse-batch stopped by Ctrl-C (128 + SIGINT, as shells report it); a rerun continues it
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """A problem with what the user asked for: reported as one line."""


def _error(message: object) -> int:
    """Report an error as the one line ``respc: error: MESSAGE`` on stderr (line breaks in
    the message, a file name's say, written as ``\\n``); the exit status for errors."""
    print("respc: error: " + "\\n".join(str(message).splitlines()), file=sys.stderr)
    return EXIT_USAGE


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, with usage errors reported like every other error (one line, status 2)
    rather than after the usage text."""

    def error(self, message: str) -> NoReturn:
        sys.exit(_error(f"{message} (see {self.prog} --help)"))


def _template_arg(spec: str) -> str | Path:
    """The TEMPLATE argument as the library takes it. The command line's rule adds one case
    to the library's: a name of an existing file is that file (``respc parse qwen3 ...``
    in a folder holding a file ``qwen3`` reads it), since a shell user names files bare."""
    return Path(spec) if os.path.isfile(spec) else spec


def _template_dict(spec: str) -> dict:
    """The template ``spec`` names (a path or a bundled name), as a dict."""
    from .api import CompiledTemplate, resolve_template

    template = resolve_template(_template_arg(spec))
    return template.template if isinstance(template, CompiledTemplate) else template


def _source_name(spec: str | None) -> str:
    """How errors name the file ``spec`` (``-`` or None: stdin)."""
    return "<stdin>" if spec is None or spec == "-" else spec


def _read_text(spec: str | None, what: str) -> str:
    """The text of the file ``spec`` (``-`` or None: stdin): its bytes decoded as strict
    UTF-8, with no newline translation, so a file and the same bytes on stdin read alike."""
    if spec is None or spec == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(spec).read_bytes()
        except OSError as exc:
            raise UserError(f"{spec}: cannot read the {what} ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{_source_name(spec)}: not valid UTF-8 at byte {exc.start} ({exc.reason}); "
            f"the {what} must be UTF-8 text"
        ) from None


#: what the type of a value json.loads returns is called in errors
_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _one_stdin(*inputs: tuple[str, str | None]) -> None:
    """Stop when two inputs would read stdin ("-"): the second would read nothing."""
    readers = [what for what, spec in inputs if spec == "-"]
    if len(readers) > 1:
        raise UserError(f"{' and '.join(readers)} both read stdin ('-'); give all but one of them as a file")


def _read_tools(spec: str) -> list[dict]:
    """The tools of the tools file ``spec``: a JSON array of tool objects, as a request has."""
    name = _source_name(spec)
    try:
        tools = json.loads(_read_text(spec, "tools file"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{name}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise UserError(f"{name}: nested too deeply to read as JSON") from None
    if not isinstance(tools, list):
        raise UserError(
            f'{name}: a tools file holds a JSON array of tools ([{{"type": "function", "function": '
            f"{{...}}}}, ...]), got {_JSON_TYPES[type(tools)]}"
        )
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise UserError(f"{name}: tools[{index}]: a tool is a JSON object, got {_JSON_TYPES[type(tool)]}")
    return tools


#: NaN and the infinities (``float.__repr__``), which JSON has no numbers for, are written
#: as these strings: the names Python's json and JavaScript give them
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
#: with an indent, what nests deeper than this is written on one line: indenting every level
#: makes the text grow with the square of the depth (gigabytes for 100,000 levels)
_INDENT_DEPTH = 100


def _dumps(value: Any, indent: int | None, ascii: bool) -> str:
    """``json.dumps(value, indent=indent, ensure_ascii=ascii, default=repr)``, except that
    NaN and the infinities are written as strings (``_NON_FINITE``) and that values nest to
    any depth: the walk keeps its own stack instead of recursing (json.dumps stops at the
    recursion limit, and tool arguments nest about as deep as that), and indents only the
    first ``_INDENT_DEPTH`` levels, so the text stays proportional to the value.
    """
    string = encode_basestring_ascii if ascii else encode_basestring
    out: list[str] = []
    # what is left to write, last first: (value, depth) pairs, and text (a separator, a key,
    # a closing bracket) to copy as it is
    todo: list[Any] = [(value, 0)]
    while todo:
        item = todo.pop()
        if type(item) is str:
            out.append(item)
            continue
        value, depth = item
        if isinstance(value, str):
            out.append(string(value))
        elif value is None or value is True or value is False:
            out.append("null" if value is None else "true" if value else "false")
        elif isinstance(value, int):
            out.append(int.__repr__(value))
        elif isinstance(value, float):
            text = float.__repr__(value)
            out.append(string(_NON_FINITE[text]) if text in _NON_FINITE else text)
        elif isinstance(value, (list, tuple, dict)):
            is_dict = isinstance(value, dict)
            entries = list(value.items()) if is_dict else value
            if not entries:
                out.append("{}" if is_dict else "[]")
                continue
            if indent is None or depth >= _INDENT_DEPTH:
                separator, inner, outer = ", ", "", ""
            else:
                separator, inner, outer = ",", "\n" + " " * (indent * (depth + 1)), "\n" + " " * (indent * depth)
            out.append("{" if is_dict else "[")
            todo.append(outer + ("}" if is_dict else "]"))
            for index in range(len(entries) - 1, -1, -1):
                lead = (separator if index else "") + inner
                if is_dict:
                    key, child = entries[index]
                    # parsed messages have str keys only; anything else is shown as its repr
                    lead += string(key if isinstance(key, str) else repr(key)) + ": "
                else:
                    child = entries[index]
                todo.append((child, depth + 1))
                todo.append(lead)
        else:
            out.append(string(repr(value)))  # not a JSON value: shown as its repr
    return "".join(out)


def _json_text(value: Any, indent: int | None = None) -> str:
    """``value`` as JSON text that stdout can write (see the module docstring).

    Non-ASCII text stays readable where stdout can encode it; where it cannot (a lone
    surrogate, which no encoding writes, or a non-UTF-8 terminal) the value is written
    with ``\\uXXXX`` escapes instead, which is the same JSON value, rather than failing or
    writing bytes that are not valid UTF-8 (stdout's ``surrogateescape`` in a C locale).
    """
    text = _dumps(value, indent, ascii=False)
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except UnicodeEncodeError:
        return _dumps(value, indent, ascii=True)
    return text


def cmd_compile(args: argparse.Namespace) -> int:
    from .compiler import compile_source

    _, source = compile_source(_template_dict(args.template), format=not args.no_format, strict=args.strict)
    if args.output:
        Path(args.output).write_text(source, encoding="utf-8")
    else:
        sys.stdout.write(source)
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    from .compiler.lint import lint

    findings = lint(_template_dict(args.template))
    for finding in findings:
        print(finding)
    if findings:
        print(f"respc lint: {len(findings)} finding(s) in {args.template}", file=sys.stderr)
        return EXIT_STALE
    print(f"respc lint: {args.template}: no findings", file=sys.stderr)
    return 0


def cmd_grammar(args: argparse.Namespace) -> int:
    from .api import compile_template

    _one_stdin(("--tools-file", args.tools_file), ("--prefix-file", args.prefix_file),
               ("--special-tokens-file", args.special_tokens_file))
    compiled = compile_template(_template_arg(args.template))
    tools = _read_tools(args.tools_file)
    prefix = _read_text(args.prefix_file, "prefix") if args.prefix_file is not None else None
    special = None
    if args.special_tokens_file is not None:
        name = _source_name(args.special_tokens_file)
        try:
            special = json.loads(_read_text(args.special_tokens_file, "special tokens file"))
        except json.JSONDecodeError as exc:
            raise UserError(f"{name}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
        if not isinstance(special, list) or not all(isinstance(t, str) for t in special):
            raise UserError(f"{name}: a special tokens file is a JSON list of strings")
    try:
        grammar = compiled.grammar(
            tools,
            format=args.format.replace("-", "_"),
            tool_choice=args.tool_choice,
            parallel_tool_calls=not args.no_parallel_tool_calls,
            prefix=prefix,
            special_tokens=special,
        )
    except (ValueError, TypeError) as exc:  # GrammarUnsupported is a TemplateError (a ValueError)
        raise UserError(str(exc)) from None
    sys.stdout.write(grammar if isinstance(grammar, str) else _json_text(grammar, 2) + "\n")
    return 0


def _samples_for(spec: str) -> list[Path]:
    """The bundled samples file of the family ``spec`` names (a bundled name, or a template
    file named like one), if there is one."""
    from .api import _ident, bundled_templates

    folder = Path(str(resources.files("respc.templates"))) / "samples"
    stem = Path(spec).name.removesuffix(".json")
    names = {_ident(n): n for n in bundled_templates()}
    name = names.get(_ident(stem))
    if name is None:
        return []
    path = folder / f"{name}.json"
    return [path] if path.is_file() else []


def _sample_cases(paths: list[Path]) -> list[tuple[str, str, str, Any]]:
    """(label, prefix, output, tools) of every case of the samples files (and of every
    samples file in the folders) given."""
    cases = []
    for path in paths:
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        for file in files:
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UserError(f"{file}: cannot read the samples ({exc})") from None
            if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
                raise UserError(f"{file}: a samples file is a JSON object with a 'cases' list")
            for case in data["cases"]:
                tools = data.get("tools") if case.get("tools", True) else None
                cases.append((f"{file.stem}:{case.get('name', '?')}", case.get("prefix", ""), case["output"], tools))
    return cases


def _outcome(compiled: Any, prefix: str, output: str, tools: Any) -> Any:
    try:
        return compiled.parse(output, prefix=prefix, tools=tools)
    except Exception as exc:  # noqa: BLE001 - a changed error is a changed behaviour
        return {"error": type(exc).__name__, "message": str(exc)}


def cmd_diff(args: argparse.Namespace) -> int:
    import difflib

    from .api import compile_template

    old, new = compile_template(_template_arg(args.old)), compile_template(_template_arg(args.new))
    changed_code = old.hash != new.hash
    if changed_code:
        sys.stdout.writelines(
            difflib.unified_diff(
                old.source.splitlines(keepends=True),
                new.source.splitlines(keepends=True),
                fromfile=f"{args.old} (generated)",
                tofile=f"{args.new} (generated)",
            )
        )
    paths = _samples_for(args.old) or _samples_for(args.new)
    paths += [Path(p) for p in args.samples]
    cases = _sample_cases(paths)
    changed = 0
    for label, prefix, output, tools in cases:
        before = _outcome(old, prefix, output, tools)
        after = _outcome(new, prefix, output, tools)
        if before != after:
            changed += 1
            print(f"changed: {label}")
            print(f"  before: {_json_text(before)}")
            print(f"  after:  {_json_text(after)}")
    where = ", ".join(str(p) for p in paths) or "no samples (pass --samples DIR)"
    print(
        f"respc diff: generated code {'differs' if changed_code else 'is the same'}; {changed} of "
        f"{len(cases)} sample message(s) change ({where})",
        file=sys.stderr,
    )
    return EXIT_STALE if changed else 0


#: why parse takes --prefix-file or --no-prefix (the API's prefix=, see runtime/base.py PREFIX_REQUIRED)
PREFIX_REQUIRED = (
    "parse needs --prefix-file F (the chat prompt that preceded the generation) or --no-prefix: chat "
    "templates often pre-write part of the assistant message (an opening <think>, a prefill) that the "
    "parser must see; pass --no-prefix when the output holds the complete message"
)


def cmd_parse(args: argparse.Namespace) -> int:
    from .api import compile_template
    from .runtime.tools import ToolSchemaError

    if args.prefix_file is None and not args.no_prefix:
        raise UserError(PREFIX_REQUIRED)
    _one_stdin(("the model output", args.input), ("--prefix-file", None if args.no_prefix else args.prefix_file),
               ("--tools-file", args.tools_file))
    compiled = compile_template(_template_arg(args.template))  # a path or a bundled name
    text = _read_text(args.input, "model output")
    prefix = "" if args.no_prefix else _read_text(args.prefix_file, "prefix")
    tools = _read_tools(args.tools_file) if args.tools_file is not None else None
    try:
        if not args.stream:
            print(_json_text(compiled.parse(text, prefix=prefix, tools=tools), indent=2))
            return 0
        if args.chunk_size < 1:
            raise UserError("--chunk-size must be at least 1")
        parser = compiled.parser(prefix=prefix, tools=tools)

        def emit(events: list[dict]) -> None:
            for event in events:
                print(_json_text(event))

        emit(parser.initial_events)
        step = args.chunk_size
        for start in range(0, len(text), step):
            emit(parser.feed(text[start : start + step]))
        message, final_events = parser.finalize()
        emit(final_events)
        print(_json_text({"type": "message", "message": message}))
    except ToolSchemaError as exc:  # a tool's schema the arguments cannot be typed by
        raise UserError(f"{_source_name(args.tools_file)}: {exc}") from None
    return 0


# --- parse-batch --------------------------------------------------------------------------

#: rows per block: parse-batch reads, parses and writes a block at a time (memory stays
#: bounded), and a rerun after an interrupt continues after the last block written
BLOCK_ROWS = 10_000

BATCH_PREFIX_REQUIRED = (
    "parse-batch needs --prefix-column C (each row's chat prompt), --prefix-file F (one prompt for every row) "
    "or --no-prefix: chat templates often pre-write part of the assistant message (an opening <think>, a "
    "prefill) that the parser must see; pass --no-prefix when the outputs hold the complete messages"
)


def _json_line(value: Any) -> str:
    """``value`` as one line of strict JSON that UTF-8 can encode, as ``_json_text`` writes
    it (NaN and the infinities as strings, any depth, ``\\uXXXX`` escapes for a lone
    surrogate), through ``json.dumps`` where that gives the same: nearly always, and faster."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (ValueError, RecursionError):
        text = _dumps(value, None, ascii=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (from a "\\ud800" escape) has no UTF-8
            text = _dumps(value, None, ascii=True)
    return text


class _Bar:
    """The progress bar on stderr (tqdm): rows done, rows per second and rows failed."""

    def __init__(self, enabled: bool, label: str):
        self.enabled = enabled
        self.label = label
        self.tqdm: Any = None

    def start(self, total: int, done: int, errors: int) -> None:
        if self.enabled:
            from tqdm import tqdm

            self.tqdm = tqdm(
                desc=self.label, total=total, initial=done, unit=" rows", postfix={"errors": errors},
                file=sys.stderr, dynamic_ncols=True,
            )

    def update(self, done: int, errors: int) -> None:
        if self.tqdm is not None:
            self.tqdm.set_postfix(errors=errors, refresh=False)
            self.tqdm.update(done - self.tqdm.n)

    def close(self) -> None:
        if self.tqdm is not None:
            self.tqdm.close()


class _Sidecar:
    """``OUT.progress.json``: what run wrote OUT (the input file as it was, the template's
    hash, every setting that shapes the output) and how far it got, rewritten (atomically)
    after each block. A rerun of the same command continues from there; one that differs
    is an error rather than a mix of two runs' rows."""

    def __init__(self, out: Path, identity: dict):
        self.path = out.with_name(out.name + ".progress.json")
        self.identity = identity

    def load(self) -> dict | None:
        """The progress of an interrupted run of this same command, or None (no sidecar)."""
        try:
            saved = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise UserError(
                f"{self.path}: cannot read the progress file ({exc}); pass --restart to start over"
            ) from None
        if not isinstance(saved, dict) or not isinstance(saved.get("done"), dict):
            raise UserError(f"{self.path}: not a parse-batch progress file; pass --restart to start over")
        changed = [key for key, value in self.identity.items() if saved.get(key) != value]
        if changed:
            raise UserError(
                f"{self.path}: left by an interrupted run of another command ({', '.join(changed)} differ); "
                "rerun that command to finish it, or pass --restart to start over"
            )
        return saved["done"]

    def save(self, done: dict) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps({**self.identity, "done": done}, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class _BatchJob:
    """What parse-batch does to each block of rows, whatever the file format: parse the
    texts, and give each row its message (and, collecting errors, its error)."""

    def __init__(self, args: argparse.Namespace, compiled: Any, prefix: str | None, tools: list | None):
        self.args = args
        self.compiled = compiled
        self.prefix = prefix  # None: each row's prefix is in --prefix-column
        self.tools = tools
        self.collect = args.errors == "collect"

    def parse(self, texts: list, prefixes: list | None, where: Callable[[int], str]) -> tuple[list, list]:
        """``(messages, errors)`` of a block: an error is ``"Type: message"`` or None (with
        --errors raise, the first failure is a UserError naming ``where(index)``)."""
        from .batch import BatchError, parse_batch

        prefix = self.prefix if prefixes is None else prefixes
        if not self.collect:
            try:
                messages = parse_batch(texts, self.compiled, prefix=prefix, tools=self.tools)
            except BatchError as exc:
                cause = exc.__cause__
                raise UserError(
                    f"{where(exc.index)}: {type(cause).__name__}: {cause}; "
                    "pass --errors collect to record the rows that fail and go on"
                ) from None
            return messages, [None] * len(messages)
        messages, failed = parse_batch(texts, self.compiled, prefix=prefix, tools=self.tools, errors="collect")
        errors: list[str | None] = [None] * len(messages)
        for row_error in failed:
            errors[row_error.index] = f"{row_error.error_type}: {row_error.message}"
        return messages, errors


def _missing_column(where: str, column: str, has: Iterable[str], option: str) -> UserError:
    return UserError(f"{where}: {_no_column(column, has, option)}")


def _no_column(column: str, has: Iterable[str], option: str) -> str:
    shown = ", ".join(repr(name) for name in has) or "none"
    return f"no {column!r} column (it has: {shown}); name the column with {option}"


def _taken_column(where: str, column: str, option: str) -> UserError:
    """An input that already has a column parse-batch would write (it is never replaced
    unnoticed)."""
    return UserError(
        f"{where}: the input already has a {column!r} column, which {option} would replace; name another "
        f"column with {option}, or pass --overwrite to replace it"
    )


class _BadLine:
    """A line of a .jsonl input that is no row (not UTF-8, not JSON, not an object), kept
    with --errors collect: the output gets a row holding only the message (null) and this
    error, in its place."""

    __slots__ = ("error",)

    def __init__(self, error: str):
        self.error = error


def _jsonl_rows(
    path: Path, offset: int, line: int, block_rows: int, collect: bool = False
) -> Iterator[tuple[list[dict | _BadLine], list[int], int]]:
    """Blocks of ``(rows, their line numbers, the input offset after them)`` of a JSON
    lines file, from byte ``offset`` (after ``line`` lines). Blank lines are no rows. A line
    that is not a row is a UserError naming it, or with ``collect`` a :class:`_BadLine`."""
    with path.open("rb") as file:
        file.seek(offset)
        rows: list[dict | _BadLine] = []
        lines: list[int] = []
        for raw in file:
            offset += len(raw)
            line += 1
            if not raw.strip():
                continue
            row: Any = None
            try:
                row = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                problem = "UnicodeDecodeError", f"not valid UTF-8 at byte {exc.start} of the line ({exc.reason})"
            except json.JSONDecodeError as exc:
                problem = "JSONDecodeError", (
                    f"not valid JSON ({exc.msg}, column {exc.colno}); each line of a .jsonl file is one JSON object"
                )
            except RecursionError:
                problem = "RecursionError", "nested too deeply to read as JSON"
            else:
                problem = None if isinstance(row, dict) else ("TypeError", f"a row is a JSON object, got {_JSON_TYPES[type(row)]}")
            if problem is not None:
                if not collect:
                    raise UserError(f"{path}:{line}: {problem[1]}")
                row = _BadLine(f"{problem[0]}: {problem[1]}")
            rows.append(row)
            lines.append(line)
            if len(rows) == block_rows:
                yield rows, lines, offset
                rows, lines = [], []
        if rows:
            yield rows, lines, offset


def _count_rows(path: Path) -> int:
    """How many rows ``path`` has: its lines that are not blank (a last one without a
    newline counts), which are the rows parse-batch parses."""
    count = 0
    with path.open("rb") as file:
        for raw in file:
            if not raw.isspace():
                count += 1
    return count


def _run_jsonl(job: _BatchJob, path: Path, out: Path, sidecar: _Sidecar, done: dict | None, bar: _Bar) -> dict:
    """parse-batch on a .jsonl file: each row gets the message as a JSON value under
    --output-column; OUT grows by a block at a time, cut back to the last block recorded
    when a run resumes. The progress bar counts rows (blank lines are none). With --errors
    collect, a row without the text (or prefix) column and a line that is no row are
    error rows like a row that fails to parse."""
    args = job.args
    done = done or {"rows": 0, "errors": 0, "lines": 0, "input_offset": 0, "output_size": 0}
    bar.start(_count_rows(path) if bar.enabled else 0, done["rows"], done["errors"])
    taken = [(args.output_column, "--output-column")]
    if job.collect:
        taken.append((args.error_column, "--error-column"))
    mode = "r+b" if done["output_size"] else "wb"
    try:
        file = out.open(mode)
    except FileNotFoundError:
        raise UserError(f"{out}: missing, though {sidecar.path} says rows were written; pass --restart") from None
    with file:
        file.truncate(done["output_size"])
        file.seek(done["output_size"])
        blocks = _jsonl_rows(path, done["input_offset"], done["lines"], args.block_rows, job.collect)
        for rows, lines, offset in blocks:
            texts = []
            prefixes = [] if args.prefix_column is not None else None
            parsed: list[int] = []  # the index in the block of each row parsed
            errors: list[str | None] = [None] * len(rows)
            for index, (row, line) in enumerate(zip(rows, lines)):
                if isinstance(row, _BadLine):
                    errors[index] = row.error
                    continue
                if not args.overwrite:
                    for column, option in taken:
                        if column in row:
                            raise _taken_column(f"{path}:{line}", column, option)
                missing = [
                    (column, option)
                    for column, option in ((args.text_column, "--text-column"), (args.prefix_column, "--prefix-column"))
                    if column is not None and column not in row
                ]
                if missing:
                    if not job.collect:
                        raise _missing_column(f"{path}:{line}", missing[0][0], row, missing[0][1])
                    errors[index] = f"KeyError: {_no_column(missing[0][0], row, missing[0][1])}"
                    continue
                parsed.append(index)
                texts.append(row[args.text_column])
                if prefixes is not None:
                    prefixes.append(row[args.prefix_column])
            messages: list = [None] * len(rows)
            if parsed:
                found, found_errors = job.parse(texts, prefixes, lambda i: f"{path}:{lines[parsed[i]]}")
                for index, message, error in zip(parsed, found, found_errors):
                    messages[index], errors[index] = message, error
            chunk = []
            for row, message, error in zip(rows, messages, errors):
                if isinstance(row, _BadLine):
                    row = {}
                row[args.output_column] = message
                if job.collect:
                    row[args.error_column] = error
                chunk.append(_json_line(row))
            chunk.append("")
            file.write("\n".join(chunk).encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())  # OUT holds the block before the sidecar says so
            failed = len(errors) - errors.count(None)
            done = {
                "rows": done["rows"] + len(rows),
                "errors": done["errors"] + failed,
                "lines": lines[-1],
                "input_offset": offset,
                "output_size": file.tell(),
            }
            sidecar.save(done)
            bar.update(done["rows"], done["errors"])
    return done


def _arrow_modules() -> tuple[Any, Any]:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UserError("reading and writing .parquet files needs pyarrow: pip install pyarrow") from None
    return pyarrow, pyarrow.parquet


def _exact_blocks(pa: Any, batches: Iterable[Any], size: int) -> Iterator[Any]:
    """Tables of exactly ``size`` rows (the last may have fewer) from record batches of any
    sizes: block boundaries, and so the output's row groups, depend on the rows alone."""
    pending: list = []
    count = 0
    for batch in batches:
        while batch.num_rows:
            take = min(size - count, batch.num_rows)
            pending.append(batch.slice(0, take))
            batch = batch.slice(take)
            count += take
            if count == size:
                yield pa.Table.from_batches(pending)
                pending, count = [], 0
    if pending:
        yield pa.Table.from_batches(pending)


def _run_parquet(job: _BatchJob, path: Path, out: Path, sidecar: _Sidecar, done: dict | None, bar: _Bar) -> dict:
    """parse-batch on a .parquet file: --output-column holds each message as a JSON string
    (Arrow cannot type messages whose tool arguments differ from row to row). Each block is
    a part file in ``OUT.parts/`` until the last is done; OUT is then written from the
    parts, one row group each, so a resumed run writes the same bytes."""
    pa, pq = _arrow_modules()
    args = job.args
    try:
        source = pq.ParquetFile(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise UserError(f"{path}: cannot read it as Parquet ({exc})") from None
    with source:
        schema = source.schema_arrow
        for column, option in ((args.text_column, "--text-column"), (args.prefix_column, "--prefix-column")):
            if column is not None and column not in schema.names:
                raise _missing_column(str(path), column, schema.names, option)
        added = [args.output_column] + ([args.error_column] if job.collect else [])
        if not args.overwrite:
            for name, option in zip(added, ("--output-column", "--error-column")):
                if name in schema.names:
                    raise _taken_column(str(path), name, option)
        for name in added:
            field = pa.field(name, pa.string())
            index = schema.get_field_index(name)
            schema = schema.set(index, field) if index >= 0 else schema.append(field)
        parts = out.with_name(out.name + ".parts")
        done = done or {"rows": 0, "errors": 0}
        if not done["rows"]:
            shutil.rmtree(parts, ignore_errors=True)
        elif len(list(parts.glob("*.parquet"))) != -(-done["rows"] // args.block_rows):
            raise UserError(f"{parts}: the blocks written before the interrupt are missing; pass --restart")
        parts.mkdir(exist_ok=True)
        bar.start(source.metadata.num_rows, done["rows"], done["errors"])
        blocks = _exact_blocks(pa, source.iter_batches(batch_size=args.block_rows), args.block_rows)
        for number, table in enumerate(blocks):
            first = number * args.block_rows
            if first < done["rows"]:
                continue  # written before the interrupt
            texts = table.column(args.text_column).to_pylist()
            prefixes = table.column(args.prefix_column).to_pylist() if args.prefix_column is not None else None
            messages, errors = job.parse(texts, prefixes, lambda index: f"{path}: row {first + index}")
            columns = {args.output_column: [None if m is None else _json_line(m) for m in messages]}
            if job.collect:
                columns[args.error_column] = errors
            for name in added:
                values = pa.array(columns[name], pa.string())
                index = table.schema.get_field_index(name)
                table = table.set_column(index, name, values) if index >= 0 else table.append_column(name, values)
            part = parts / f"{number:08d}.parquet"
            pq.write_table(table.cast(schema), part.with_suffix(".tmp"))
            os.replace(part.with_suffix(".tmp"), part)
            done = {"rows": first + table.num_rows, "errors": done["errors"] + len(errors) - errors.count(None)}
            sidecar.save(done)
            bar.update(done["rows"], done["errors"])
    temporary = out.with_name(out.name + ".tmp")
    with pq.ParquetWriter(temporary, schema) as writer:
        for part in sorted(parts.glob("*.parquet")):
            writer.write_table(pq.read_table(part, schema=schema))
    os.replace(temporary, out)
    shutil.rmtree(parts)
    return done


def cmd_parse_batch(args: argparse.Namespace) -> int:
    import hashlib

    from .api import compile_template

    path, out = Path(args.input), Path(args.output)
    runs = {".jsonl": _run_jsonl, ".parquet": _run_parquet}
    if path.suffix not in runs:
        raise UserError(
            f"{path}: unknown input format {path.suffix or '(no extension)'!r}: parse-batch reads .jsonl "
            "(JSON lines) and .parquet files"
        )
    if out.suffix in runs and out.suffix != path.suffix:
        raise UserError(f"{out}: the output is written in the input's format ({path.suffix}): name it *{path.suffix}")
    if sum((args.prefix_column is not None, args.prefix_file is not None, args.no_prefix)) != 1:
        raise UserError(BATCH_PREFIX_REQUIRED)
    if args.block_rows < 1:
        raise UserError("--block-rows must be at least 1")
    try:
        info = path.stat()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the input ({exc.strerror or exc})") from None
    if out.exists() and out.resolve() == path.resolve():
        raise UserError(f"{out}: the output would overwrite the input; write it to another file")
    _one_stdin(("--prefix-file", args.prefix_file), ("--tools-file", args.tools_file))
    compiled = compile_template(_template_arg(args.template))  # a path or a bundled name
    prefix = "" if args.no_prefix else _read_text(args.prefix_file, "prefix") if args.prefix_file is not None else None
    tools = _read_tools(args.tools_file) if args.tools_file is not None else None
    settings = {
        key: getattr(args, key)
        for key in ("text_column", "prefix_column", "output_column", "error_column", "errors", "block_rows", "overwrite")
    }
    settings["prefix"] = prefix
    settings["tools"] = tools
    identity = {
        "respc": __version__,
        "input": str(path.resolve()),
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "template_hash": compiled.hash,
        "settings": hashlib.sha256(_json_line(settings).encode("utf-8")).hexdigest(),
    }
    sidecar = _Sidecar(out, identity)
    done = None if args.restart else sidecar.load()
    bar = _Bar(not args.no_progress, path.name)
    try:
        try:
            done = runs[path.suffix](_BatchJob(args, compiled, prefix, tools), path, out, sidecar, done, bar)
        finally:
            bar.close()
    except KeyboardInterrupt:
        saved = sidecar.load()
        print(
            f"respc: interrupted after {saved['rows'] if saved else 0} rows; rerun the same command to continue "
            f"({sidecar.path})",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    sidecar.remove()
    print(f"respc parse-batch: {done['rows']} rows, {done['errors']} failed -> {out}", file=sys.stderr)
    return 0


def _checkout() -> Path | None:
    """The respc checkout the current directory is in (a folder with pyproject.toml naming
    respc, templates/ and generated/), or None."""
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        project = folder / "pyproject.toml"
        if (folder / "templates").is_dir() and (folder / "generated").is_dir() and project.is_file():
            try:
                if 'name = "respc"' in project.read_text(encoding="utf-8"):
                    return folder
            except OSError:
                return None
    return None


def _bundled_dirs(args: argparse.Namespace) -> tuple[Path, Path]:
    """templates/ and generated/ of the checkout the command runs in, else the installed
    package's (unless --templates / --out say otherwise)."""
    checkout = _checkout()
    if checkout is not None:
        templates_default, out_default = checkout / "templates", checkout / "generated"
    else:
        templates_default = Path(str(resources.files("respc.templates")))
        out_default = Path(str(resources.files("respc.generated")))
    templates = Path(args.templates) if args.templates else templates_default
    out = Path(args.out) if args.out else out_default
    return templates, out


def cmd_build(args: argparse.Namespace) -> int:
    from .api import _ident
    from .compiler import compile_source, load_template_file

    templates, out = _bundled_dirs(args)
    files = sorted(templates.glob("*.json"))
    if not files:
        raise UserError(f"{templates}: no template files (*.json) to build")
    stale = []
    expected = set()
    for path in files:
        target = out / f"{_ident(path.stem)}.py"
        expected.add(target.name)
        _, source = compile_source(load_template_file(path))
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == source:
            continue
        stale.append(target)
        if not args.check:
            target.write_text(source, encoding="utf-8")
            print(f"wrote {target}")
    orphans = sorted(p for p in out.glob("*.py") if p.name != "__init__.py" and p.name not in expected)
    if args.check:
        for target in stale:
            print(f"stale: {target} (run `respc build`)", file=sys.stderr)
        for orphan in orphans:
            print(f"orphan: {orphan} has no template in {templates}", file=sys.stderr)
        if stale or orphans:
            return EXIT_STALE
        print(f"{len(files)} generated modules are fresh")
        return 0
    for orphan in orphans:
        orphan.unlink()
        print(f"removed {orphan} (no template)")
    print(f"{len(files)} templates, {len(stale)} module(s) regenerated")
    return 0


def _variant(name: str) -> str:
    """What a bundled family is, in a line: its samples' ``doc.variant`` (the variant of the
    model's own chat template, or which other variant a suffixed name is), else the start of
    ``doc.format``."""
    from importlib import resources

    try:
        doc = json.loads(resources.files("respc.templates").joinpath("samples", f"{name}.json").read_text("utf-8"))["doc"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    text = doc.get("variant") or doc.get("format") or ""
    text = " ".join(str(text).split())
    return text if len(text) <= 100 else text[:99].rstrip() + "…"


def cmd_list(args: argparse.Namespace) -> int:
    from .api import bundled_templates

    names = bundled_templates()
    width = max((len(n) for n in names), default=0)
    for name in names:
        print(f"{name:<{width}}  {_variant(name)}".rstrip())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="respc", description="The response-template compiler.")
    runtime = "compiled" if COMPILED_RUNTIME else "pure-Python"
    parser.add_argument("--version", action="version", version=f"respc {__version__} ({runtime} runtime)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("compile", help="compile a template to its Python parser module")
    p.add_argument("template", help="template JSON file or bundled template name")
    p.add_argument("-o", "--output", help="write the module here instead of stdout")
    p.add_argument("--no-format", action="store_true", help="skip black formatting")
    p.add_argument("--strict", action="store_true", help="fail on what would only be a warning")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("lint", help="list what makes a template fragile on real output (exit 1 if anything)")
    p.add_argument("template", help="template JSON file or bundled template name")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("grammar", help="print the grammar of the template's replies (Lark for llguidance, or an xgrammar structural tag)")
    p.add_argument("template", help="template JSON file or bundled template name")
    p.add_argument("--tools-file", required=True, help="JSON list of tools (OpenAI function schemas); '-' for stdin")
    p.add_argument("--format", choices=("lark", "structural-tag", "structural_tag"), default="lark")
    p.add_argument("--tool-choice", default="auto", help="auto, required, none, or a tool name (default auto)")
    p.add_argument("--no-parallel-tool-calls", action="store_true", help="at most one tool call")
    p.add_argument("--prefix-file", help="the prompt before the reply (the grammar starts in the state it leaves)")
    p.add_argument("--special-tokens-file", help="JSON list of the markers that are special tokens")
    p.set_defaults(func=cmd_grammar)

    p = sub.add_parser(
        "diff", help="review a template change: the generated code's diff, then every sample message that changes"
    )
    p.add_argument("old", help="the template before: JSON file, tokenizer_config.json or bundled name")
    p.add_argument("new", help="the template after")
    p.add_argument(
        "--samples", action="append", default=[], metavar="DIR",
        help="samples files (or folders of them) to parse too, in the bundled samples' format; repeatable",
    )
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser(
        "parse",
        help="parse model output with a template; print the message as JSON",
        description=(
            "Parse model output with a template and print the message as JSON (with --stream: the events "
            "as JSON lines, then the message). The output is always valid JSON: NaN and the infinities "
            'are written as the strings "NaN", "Infinity" and "-Infinity", and characters stdout cannot '
            "encode (a lone surrogate) as \\uXXXX escapes. Files and stdin are read as UTF-8, as they are."
        ),
    )
    p.add_argument("template", help="template JSON file or bundled template name")
    p.add_argument("input", nargs="?", default="-", help="file with the model output ('-' or omitted: stdin)")
    prefix = p.add_mutually_exclusive_group()
    prefix.add_argument(
        "--prefix-file", metavar="F",
        help="file with the chat prompt before the generation ('-': stdin); this or --no-prefix is required",
    )
    prefix.add_argument(
        "--no-prefix", action="store_true", help="no prompt: the output holds the complete message (prefix \"\")"
    )
    p.add_argument("--tools-file", help="JSON file with the request's tools, to type tool-call arguments")
    p.add_argument("--stream", action="store_true", help="print the events as JSON lines, then the message")
    p.add_argument("--chunk-size", type=int, default=4, help="characters per feed with --stream (default 4)")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser(
        "parse-batch",
        help="parse a column of model outputs in a .jsonl or .parquet file; resumable",
        description=(
            "Parse the model outputs in a column of a JSON lines (.jsonl) or Parquet file and write every row, "
            "in order and with all its columns, plus the message, to OUT in the same format: in .jsonl as a "
            "JSON value, in .parquet as a JSON string (strict JSON, written as respc parse writes it). It "
            "works a block of rows at a time and records its progress in OUT.progress.json: after an "
            "interrupt, the same command continues from the last block written, and the output is the "
            "same as an uninterrupted run's. See docs/scale.md."
        ),
    )
    p.add_argument("template", help="template JSON file or bundled template name")
    p.add_argument("input", help="the rows: a .jsonl file (one JSON object a line) or a .parquet file")
    p.add_argument("-o", "--output", required=True, help="where to write the rows with their messages")
    p.add_argument("--text-column", default="text", metavar="C", help="the column of model outputs (default: text)")
    prefix = p.add_mutually_exclusive_group()
    prefix.add_argument("--prefix-column", metavar="C", help="the column of each row's chat prompt")
    prefix.add_argument("--prefix-file", metavar="F", help="file with one chat prompt for every row")
    prefix.add_argument("--no-prefix", action="store_true", help='no prompt: the outputs hold the complete messages')
    p.add_argument("--tools-file", help="JSON file with the request's tools, to type tool-call arguments")
    p.add_argument(
        "--output-column", default="message", metavar="C", help="the column for the messages (default: message)"
    )
    p.add_argument(
        "--errors", choices=("raise", "collect"), default="raise",
        help="raise: stop at the first row that fails (default); collect: that row's message is null, "
        "the --error-column holds 'Type: message', and the rest go on (a .jsonl row without the text "
        "column, or a line that is not UTF-8, JSON or an object, is such a row too)",
    )
    p.add_argument(
        "--error-column", default="error", metavar="C",
        help="the column for errors with --errors collect (default: error)",
    )
    p.add_argument(
        "--overwrite", action="store_true",
        help="replace an --output-column (or --error-column) the input already has (without it, such a column "
        "is an error)",
    )
    p.add_argument(
        "--block-rows", type=int, default=BLOCK_ROWS, metavar="N", help=f"rows per block (default {BLOCK_ROWS:,})"
    )
    p.add_argument("--restart", action="store_true", help="start over, ignoring the progress of an interrupted run")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_parse_batch)

    p = sub.add_parser("build", help="regenerate the bundled parser modules (generated/) from templates/")
    p.add_argument("--check", action="store_true", help="only check that they are fresh (exit 1 if not)")
    p.add_argument("--templates", help="template folder (default: the bundled templates)")
    p.add_argument("--out", help="output folder (default: the bundled generated modules)")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("list", help="list the bundled templates")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("detect", help="the bundled family a chat template writes (exit 1 if none fits)")
    p.add_argument("path", help="a .jinja chat template, a tokenizer_config.json holding chat_template, or a model folder")
    p.set_defaults(func=cmd_detect)

    p = sub.add_parser("infer", help="infer a response template from a chat template")
    p.add_argument("path", help="a .jinja chat template, a tokenizer_config.json holding chat_template, or a model folder")
    p.add_argument("-o", "--output", help="write the template here (default: stdout)")
    p.add_argument("--report", action="store_true", help="also say what each probe showed (on stderr)")
    p.set_defaults(func=cmd_infer)
    return parser


def _chat_model(path: str):
    from .chat.model import read_model

    try:
        model = read_model(path)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from None
    if not model.chat_template:
        raise UserError(f"{path}: no chat_template found (a .jinja file, tokenizer_config.json or model folder)")
    return model


def cmd_detect(args: argparse.Namespace) -> int:
    from .chat.detect import detect_report
    from .chat.render import ChatTemplateError

    model = _chat_model(args.path)
    try:
        result = detect_report(model.chat_template, bos_token=model.bos_token, eos_token=model.eos_token)
    except ChatTemplateError as exc:
        raise UserError(f"{args.path}: {exc}") from None
    if result.family is None:
        print(f"respc detect: {args.path}: " + result.explain(), file=sys.stderr)
        return EXIT_STALE
    print(result.family)
    return 0


def cmd_infer(args: argparse.Namespace) -> int:
    from .chat.infer import InferError, infer_report
    from .chat.render import ChatTemplateError

    model = _chat_model(args.path)
    try:
        result = infer_report(model.chat_template, bos_token=model.bos_token, eos_token=model.eos_token)
    except ChatTemplateError as exc:
        raise UserError(f"{args.path}: {exc}") from None
    if args.report:
        for line in result.lines:
            print(line, file=sys.stderr)
    if result.template is None:
        raise UserError(f"{args.path}: {InferError(result.error)}")
    text = json.dumps(result.template, indent=2, ensure_ascii=False) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import warnings

    from .compiler import TemplateError, TemplateWarning

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
        if issubclass(category, TemplateWarning):
            print(f"respc: warning: {message}", file=sys.stderr)
        else:
            print(warnings.formatwarning(message, category, filename, lineno, line), file=sys.stderr, end="")

    warnings.showwarning = show
    try:
        return args.func(args)
    except (UserError, TemplateError) as exc:
        return _error(exc)
    except (ValueError, KeyError, RuntimeError) as exc:
        # a parse failure on the given output (invalid JSON in a tool call, ...)
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        return _error(f"{type(exc).__name__}: {message}")
    except BrokenPipeError:
        return 0
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return _error(f"{where}{exc.strerror or exc}")


if __name__ == "__main__":
    sys.exit(main())
