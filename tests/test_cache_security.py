"""The disk cache runs only what respc wrote (docs/cache.md): a tampered file with a
recomputed stamp, special files at a cache path, and folders other users can write or own
are never read; a plain round trip still hits the cache.

Tests that could hang or exhaust memory on a cache that reads whatever it finds run the
compile in a child process with a timeout and an address-space limit, so they fail instead."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import subprocess
import sys

import pytest

import respc
from respc import api
from respc.compiler import compile_source
from respc.runtime import loader

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="POSIX owners, modes, FIFOs and symbolic links"),
    pytest.mark.slow,  # child processes (the quick tier, pytest -m "not slow", leaves this module out)
]

CACHED = {"start_anchor": "S", "fields": {"v": {"open": "<v>", "close": "</v>", "content": "int"}}}
OTHER = {"start_anchor": "S", "fields": {"w": {"open": "<w>", "close": "</w>"}}}

# A child that compiles CACHED (whose module then comes from the cache or is compiled) and
# prints what it parses. With "cached-only" as its second argument it cannot compile at all.
_CHILD = """
import json, sys
from respc import api
if sys.argv[2] == "cached-only":
    def refuse(*args, **kwargs):
        raise AssertionError("compiled again: the cached module was not used")
    api.compile_source = refuse
compiled = api.compile_template(json.loads(sys.argv[1]))
print(json.dumps(compiled.parse("<v>5</v>", prefix="")))
"""
_CHILD_MEMORY = 1 << 30  # bytes of address space: far more than a compile needs
_CHILD_TIMEOUT = 120  # seconds: a guard against a hang, not a measurement


def _fresh_compile(template):
    """Compile in a clean in-process cache (as a new process would)."""
    api._BY_CANONICAL.clear()
    api._BY_OBJECT.clear()
    return respc.compile_template(template)


def _run_child(cache, mode="compile"):
    """Compile and parse CACHED in a new process using ``cache``; its parse result."""

    def limit_memory():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (_CHILD_MEMORY, _CHILD_MEMORY))

    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(CACHED), mode],
        env={**os.environ, loader.CACHE_ENV: str(cache)},
        capture_output=True,
        text=True,
        timeout=_CHILD_TIMEOUT,
        preexec_fn=limit_memory,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _cache_file(cache):
    """The one cached module in ``cache``."""
    (path,) = cache.glob("*.py")
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of this test's own (not made yet: the first write makes it)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(loader.CACHE_ENV, str(folder))
    return folder


def _plain_sha256(prefix):
    return lambda name, body: prefix + hashlib.sha256(body).hexdigest().encode()


def _hmac_under_another_key(name, body):
    digest = hmac.new(b"not the folder's key".ljust(32, b"."), name.encode() + b"\n" + body, hashlib.sha256)
    return b"# respc-cache hmac-sha256=" + digest.hexdigest().encode()


@pytest.mark.parametrize(
    "stamp",
    [
        _plain_sha256(b"# respc-cache sha256="),  # the old format
        _plain_sha256(b"# respc-cache hmac-sha256="),
        _hmac_under_another_key,
    ],
    ids=["old-sha256-stamp", "sha256-as-hmac", "hmac-with-another-key"],
)
def test_an_edited_file_with_a_recomputed_stamp_is_not_executed(cache, tmp_path, stamp):
    first = _fresh_compile(CACHED)
    path = _cache_file(cache)
    source = compile_source(CACHED, format=False)[1]
    marker = tmp_path / "marker"
    edited = (source + f"\nopen({str(marker)!r}, 'w').close()\n").encode()
    path.write_bytes(stamp(path.name, edited) + b"\n" + edited)

    assert loader.read_cached(first.hash) is None
    assert _fresh_compile(CACHED).parse("<v> 7 </v>", prefix="") == {"v": 7}
    assert not marker.exists()
    assert loader.read_cached(first.hash) == source  # recompiled and rewritten, stamped with the key


def test_a_fifo_at_the_cache_path_does_not_hang(cache):
    _fresh_compile(CACHED)
    path = _cache_file(cache)
    path.unlink()
    os.mkfifo(path, 0o600)
    assert _run_child(cache) == {"v": 5}
    assert stat.S_ISREG(os.lstat(path).st_mode)  # the write replaced the FIFO


def test_a_symlink_to_dev_zero_is_not_followed(cache):
    first = _fresh_compile(CACHED)
    path = _cache_file(cache)
    path.unlink()
    path.symlink_to("/dev/zero")
    assert _run_child(cache) == {"v": 5}
    assert not path.is_symlink()  # the write replaced the link, not what it points to
    assert loader.read_cached(first.hash) is not None


def test_a_huge_file_at_the_cache_path_is_not_read(cache):
    _fresh_compile(CACHED)
    path = _cache_file(cache)
    with open(path, "r+b") as handle:  # 16 GiB, sparse: a valid stamp, then zeros
        handle.truncate(16 << 30)
    assert _run_child(cache) == {"v": 5}
    assert path.stat().st_size < loader.MAX_CACHED_BYTES  # rewritten


def test_a_file_over_the_size_bound_is_a_miss_and_is_not_written(cache, monkeypatch):
    first = _fresh_compile(CACHED)
    path = _cache_file(cache)
    monkeypatch.setattr(loader, "MAX_CACHED_BYTES", path.stat().st_size - 1)
    assert loader.read_cached(first.hash) is None  # stamped with the key, but too large
    path.unlink()
    assert _fresh_compile(CACHED).parse("<v>2</v>", prefix="") == {"v": 2}
    assert not path.exists()  # a module over the bound would never be read back


def _cache_warnings(record):
    return [str(w.message) for w in record if issubclass(w.category, loader.CacheWarning)]


@pytest.mark.parametrize("mode", [0o770, 0o777, 0o1777], ids=oct)
def test_a_folder_others_can_write_is_not_used_and_warns_once(cache, mode):
    cache.mkdir()
    os.chmod(cache, mode)
    with pytest.warns(loader.CacheWarning) as record:
        assert _fresh_compile(CACHED).parse("<v>1</v>", prefix="") == {"v": 1}
        assert _fresh_compile(OTHER).parse("<w>x</w>", prefix="") == {"w": "x"}
        assert _fresh_compile(CACHED).parse("<v>3</v>", prefix="") == {"v": 3}
    (message,) = _cache_warnings(record)
    assert f"{cache}: can be written by other users" in message
    assert f"chmod go-w {cache}" in message and loader.CACHE_ENV in message
    assert os.listdir(cache) == []  # nothing written there, not even a key


def test_a_folder_owned_by_another_user_is_not_used(cache, monkeypatch):
    first = _fresh_compile(CACHED)
    before = sorted(os.listdir(cache))
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    with pytest.warns(loader.CacheWarning) as record:
        assert loader.read_cached(first.hash) is None  # an intact file, in a folder that is not ours
        assert _fresh_compile(OTHER).parse("<w>x</w>", prefix="") == {"w": "x"}
    (message,) = _cache_warnings(record)
    assert f"{cache}: is owned by uid {os.getuid()}, not by you" in message and "chown" in message
    assert sorted(os.listdir(cache)) == before


def test_a_symlinked_folder_is_not_used(cache, tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    cache.symlink_to(real)
    with pytest.warns(respc.CacheWarning, match="is a symbolic link"):  # (the public name)
        assert _fresh_compile(CACHED).parse("<v>1</v>", prefix="") == {"v": 1}
    assert os.listdir(real) == []


def _key_readable_by_others(key):
    os.chmod(key, 0o644)


def _key_a_symlink(key):
    elsewhere = key.parent.parent / "elsewhere"
    elsewhere.write_bytes(key.read_bytes())
    key.unlink()
    key.symlink_to(elsewhere)


def _key_truncated(key):
    key.write_bytes(key.read_bytes()[:16])


@pytest.mark.parametrize(
    "spoil, problem",
    [
        (_key_readable_by_others, "can be used by other users"),
        (_key_a_symlink, "is a symbolic link"),
        (_key_truncated, "is not a 32-byte key"),
    ],
)
def test_an_unsafe_key_makes_the_folder_unused(cache, spoil, problem):
    first = _fresh_compile(CACHED)
    spoil(cache / "key")
    with pytest.warns(loader.CacheWarning) as record:
        assert loader.read_cached(first.hash) is None
        assert _fresh_compile(OTHER).parse("<w>x</w>", prefix="") == {"w": "x"}
    (message,) = _cache_warnings(record)
    assert f"{cache / 'key'}: {problem}" in message and "delete" in message
    assert len(list(cache.glob("*.py"))) == 1  # OTHER was not cached


def test_a_cached_module_is_used_by_a_new_process(cache):
    _fresh_compile(CACHED)
    path = _cache_file(cache)
    written = {name: os.stat(cache / name).st_mtime_ns for name in os.listdir(cache)}
    assert _run_child(cache, "cached-only") == {"v": 5}  # it cannot compile: it read the file
    assert {name: os.stat(cache / name).st_mtime_ns for name in os.listdir(cache)} == written
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == stat.S_IMODE(os.stat(cache / "key").st_mode) == 0o600
