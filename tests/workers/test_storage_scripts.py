"""The data model's scripts: each loads into a real redis-server, each ``.lua`` header
names the keys and fixed arguments its Python module builds, and the meta fields are
named in one table and nowhere else by their letters."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from types import ModuleType

import pytest
import redis
from redis.exceptions import ResponseError

from tests.sources import python_files
from threadfold.workers.storage import lua, meta
from threadfold.workers.storage.scripts import MODULES

ROOT = Path(__file__).resolve().parents[2]
HELPERS = {"common", "state", "lifecycle", "apply", "checkpoint"}


def _name(module: ModuleType) -> str:
    return module.__name__.rsplit(".", 1)[1]


def test_every_assembled_script_loads_into_redis(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    for module in MODULES:
        # SCRIPT LOAD compiles the script: a syntax error is refused here.
        assert client.script_load(module.SCRIPT.source) == module.SCRIPT.sha, _name(module)


def test_the_load_check_refuses_a_syntax_error(redis_url: str) -> None:
    """The check above is a real compile: a script with a broken helper is refused."""
    client = redis.Redis.from_url(redis_url)
    broken = lua.source("common").replace("end\n", "\n", 1) + lua.source("wake")
    with pytest.raises(ResponseError, match="Error compiling script"):
        client.script_load(broken)


def test_every_lua_file_is_a_script_or_a_helper() -> None:
    shipped = {p.name[: -len(".lua")] for p in files(lua.__package__).iterdir()
               if p.name.endswith(".lua")}
    assert shipped == {_name(m) for m in MODULES} | HELPERS


def _header(name: str, what: str) -> tuple[bool, list[str]]:
    """Whether the ``-- KEYS`` / ``-- ARGV`` block of ``<name>.lua`` is per thread, and
    its words (the line and its indented continuation lines)."""
    lines = lua.source(name).splitlines()
    for at, line in enumerate(lines):
        found = re.match(rf"-- {what}( per thread)?:(.*)", line)
        if found:
            block = [found.group(2)]
            block += [x[2:] for x in _continued(lines[at + 1 :])]
            return found.group(1) is not None, re.findall(r"[a-z_]+", " ".join(block))
    raise AssertionError(f"{name}.lua has no '-- {what}:' line")


def _continued(lines: list[str]) -> Iterator[str]:
    for line in lines:
        if not line.startswith("--      "):
            return
        yield line


@pytest.mark.parametrize("module", MODULES, ids=_name)
def test_the_lua_header_states_the_modules_contract(module: ModuleType) -> None:
    name = _name(module)
    per_thread, words = _header(name, "KEYS")
    assert per_thread == getattr(module, "PER_THREAD", False), name
    # The key names up to any parenthesised remark, exactly and in order.
    assert words[: len(module.Keys._fields)] == list(module.Keys._fields), name
    keys_line = next(x for x in lua.source(name).splitlines() if x.startswith("-- KEYS"))
    listed = keys_line.split(":", 1)[1].split("(")[0].split()
    assert listed == list(module.Keys._fields), name
    if hasattr(module, "Args"):
        _, words = _header(name, "ARGV")
        fields = list(module.Args._fields)
        runs = [words[i : i + len(fields)] for i in range(len(words))]
        assert fields in runs, f"{name}.lua's ARGV does not list {fields} in order: {words}"


# -- the meta fields ---------------------------------------------------------------------------

_META_CALL = re.compile(r"'(HGET|HMGET|HSET|HDEL|HINCRBY)',\s*(meta|KEYS\[1\]|KEYS\[k \+ 1\])")


def test_every_meta_field_a_script_uses_is_in_the_table() -> None:
    letters = set(meta.FIELDS.values())
    used: set[str] = set()
    for module in MODULES:
        for line in module.SCRIPT.source.splitlines():
            if _META_CALL.search(line):
                used |= set(re.findall(r"'([a-z]{1,2})'", line.split("--")[0]))
    assert used <= letters, used - letters
    assert {"c", "g", "i", "q", "pp", "ib", "m", "k", "sk", "sc"} <= used  # the scan works
    doc = meta.__doc__ or ""
    for name, letter in meta.FIELDS.items():
        assert re.search(rf"^``{letter}``\s+{name}\s", doc, re.M), (letter, name)


_HASH_COMMANDS = {"hget", "hmget", "hset", "hdel", "hincrby", "hexists", "hsetnx"}


def raw_meta_letters(source: str) -> list[tuple[int, str]]:
    """Meta field letters written raw in Python: a literal field name given to a hash
    command whose key names a meta hash (``hget(k.meta, "c")``, ``hmget(meta, ["c", "e"])``,
    ``hset(meta, mapping={"q": ...})``), or a bytes literal of a two-letter field.
    Single letters in bytes (``b"c"``) are not flagged alone: log entries have fields
    ``d`` and ``f``, and a letter means nothing without the key it is read from."""
    letters = set(meta.FIELDS.values())
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and _two_letter_field(node.value, letters):
            found.append((node.lineno, repr(node.value)))
        for arg in _meta_hash_arguments(node):
            found += (
                (sub.lineno, repr(sub.value))
                for sub in ast.walk(arg)
                if isinstance(sub, ast.Constant) and _letter(sub.value) in letters
            )
    return found


def _two_letter_field(value: object, letters: set[str]) -> bool:
    return isinstance(value, bytes) and len(value) == 2 and _letter(value) in letters


def _letter(value: object) -> str | None:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, str) else None


def _meta_hash_arguments(node: ast.AST) -> list[ast.expr]:
    """The arguments after the key of a hash command on a meta hash, else none."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return []
    if node.func.attr.lower() not in _HASH_COMMANDS or not node.args:
        return []
    if "meta" not in ast.unparse(node.args[0]):
        return []
    return [*node.args[1:], *(k.value for k in node.keywords)]


def test_the_raw_letter_check_finds_what_it_is_for() -> None:
    sample = (
        'client.hget(k.meta, "c")\n'
        'client.hmget(ks.thread(ref).meta, ["c", "e"])\n'
        'pipe.hset(meta_key, mapping={"q": "why"})\n'
        'if name == b"pp": pass\n'
        'client.hget(k.meta, meta.CURSOR)\n'  # named: fine
        'client.xadd(k.log, {"d": payload})\n'  # a log entry's field: not meta
        'client.hget(k.pages, "0")\n'  # not a meta hash
    )
    assert [line for line, _ in raw_meta_letters(sample)] == [1, 2, 2, 3, 4]


def _python_files() -> Iterator[Path]:
    storage = ROOT / "workers" / "storage"
    for top in ("workers", "api", "threadfold", "bench"):
        for path in python_files(top):
            if not path.is_relative_to(storage):
                yield path


def test_no_meta_field_letter_outside_the_storage_package() -> None:
    found = {
        str(path.relative_to(ROOT)): hits
        for path in _python_files()
        if (hits := raw_meta_letters(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "name meta fields by threadfold.workers.storage.meta's constants"
