"""Which tree's code a process runs, for the A/B's record.

A side runs in its tree: working directory and ``PYTHONPATH`` (see
:mod:`bench.live.trees`, whose worktrees and environment the A/B uses). That this
really makes its tree's ``threadfold`` win over the venv's editable install (pointing
at the main checkout) is checked, not assumed, in two ways:

* :func:`driver`, in the side's driver process: ``threadfold.__file__`` and the file of
  every ``threadfold.*`` module loaded so far (the producer, the drain's settings, the
  stores: everything the driver ran), none of which may lie outside the tree;
* :func:`service`, for each service process (the API, every Celery worker and beat),
  read from outside: its interpreter, working directory, ``PYTHONPATH``, its children's
  working directories, and where the module its command line runs (``-m threadfold.api``,
  Celery's ``-A threadfold.workers...``) resolves under *that* process's working
  directory and environment (a fresh interpreter asked with ``importlib.util.find_spec``,
  which follows the same ``sys.path`` rules as the process did when it started).

:func:`fingerprint` hashes a tree's code (``api/ core/ workers/ threadfold/``, ``.py``
and ``.lua``) so the record shows whether the two sides' code differs at all;
:func:`problems` compares a side's proof with its tree; :func:`relative` writes the
proof with the tree's path as ``<tree>`` (no machine paths in the results).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

#: The directories holding the code under test (threadfold/ links to the others).
CODE = ("api", "core", "workers", "threadfold")

_FIND = ("import importlib.util, sys; "
         "print(importlib.util.find_spec(sys.argv[1]).origin)")


def driver() -> dict[str, Any]:
    """This process's threadfold: the package's file, every loaded module's, and where
    the process runs."""
    import threadfold  # noqa: PLC0415  # imported here: the caller's sys.path decides

    files = sorted({str(getattr(module, "__file__", "") or "")
                    for name, module in list(sys.modules.items())
                    if name == "threadfold" or name.startswith("threadfold.")} - {""})
    return {"threadfold": threadfold.__file__, "modules": len(files), "module_files": files,
            "cwd": os.getcwd(), "pythonpath": os.environ.get("PYTHONPATH", ""),
            "python": sys.executable}


def _module(argv: Sequence[str]) -> str:
    """The module a command line runs: Celery's app (``-A``) or ``python -m``'s."""
    for flag in ("-A", "--app", "-m"):
        if flag in argv[:-1] and (flag != "-m" or argv[argv.index(flag) + 1] != "celery"):
            return argv[argv.index(flag) + 1]
    return ""


def _resolve(module: str, cwd: str, env: dict[str, str]) -> str:
    if not module:
        return ""
    found = subprocess.run([sys.executable, "-c", _FIND, module], cwd=cwd, env=env,
                           capture_output=True, text=True, check=False, timeout=60)
    return found.stdout.strip() if found.returncode == 0 else f"error: {found.stderr[-300:]}"


def service(pid: int) -> dict[str, Any]:
    """A service process seen from outside: what it runs and where its code comes from."""
    process = psutil.Process(pid)
    argv = process.cmdline()
    cwd = process.cwd()
    env = process.environ()
    module = _module(argv)
    children = sorted({c.cwd() for c in process.children(recursive=True)})
    return {"python": argv[0] if argv else "", "module": module,
            "module_file": _resolve(module, cwd, env), "cwd": cwd,
            "pythonpath": env.get("PYTHONPATH", ""), "children_cwd": children}


def _inside(path: str, tree: Path) -> bool:
    return path == str(tree) or path.startswith(str(tree) + os.sep)


def problems(name: str, proof: dict[str, Any], tree: Path) -> list[str]:
    """What in ``proof`` (``driver`` and ``services``, as a side reports them) shows code
    or a process from outside ``tree``."""
    out = []
    drv = proof["driver"]
    if not _inside(drv["threadfold"], tree):
        out.append(f"{name}: the driver imported {drv['threadfold']}, not {tree}'s")
    outside = [f for f in drv["module_files"] if not _inside(f, tree)]
    if outside:
        out.append(f"{name}: the driver loaded {len(outside)} modules from elsewhere, "
                   f"e.g. {outside[0]}")
    for role, found in proof["services"].items():
        for one in found:
            if not (_inside(one["module_file"], tree) and one["cwd"] == str(tree)
                    and one["pythonpath"] == str(tree)
                    and all(c == str(tree) for c in one["children_cwd"])):
                out.append(f"{name}: a {role} process runs {one['module_file']!r} in "
                           f"{one['cwd']!r} (PYTHONPATH {one['pythonpath']!r})")
            if one["python"] != sys.executable:
                out.append(f"{name}: a {role} process runs another interpreter")
    return out


def relative(value: Any, tree: Path) -> Any:
    """``value`` with ``tree``'s path as ``<tree>``, the interpreter as whether it is
    this process's, recursively."""
    if isinstance(value, dict):
        return {("same_python" if k == "python" else k):
                (v == sys.executable if k == "python" else relative(v, tree))
                for k, v in value.items()}
    if isinstance(value, list):
        return [relative(v, tree) for v in value]
    if isinstance(value, str) and _inside(value, tree):
        return "<tree>" + value[len(str(tree)):]
    return value


def fingerprint(tree: Path) -> str:
    """A hash of the tree's code: every ``.py`` and ``.lua`` file under :data:`CODE`
    (threadfold/'s own files only: its links are the other directories)."""
    digest = hashlib.sha256()
    for top in CODE:
        found = (tree / top).glob("*") if top == "threadfold" else (tree / top).rglob("*")
        for path in sorted(found):
            if path.suffix in (".py", ".lua") and path.is_file():
                digest.update(path.relative_to(tree).as_posix().encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
