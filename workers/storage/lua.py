"""The scripts' Lua sources: one ``.lua`` file per script, shared helpers joined at load.

A script's file holds its own code; the helpers it names are prepended in order
(``common.lua``: ids, the fence, the backlog; ``state.lua``: the page and index format
of :mod:`threadfold.workers.storage.pages`, whose sizes are written in as Lua constants
here, so Python and Lua cannot disagree on them; ``lifecycle.lua``: a thread's keys by
its ref, metadata, TTL, removal; ``apply.lua``: a commit's writes, which COMMIT and
INGEST share). The files ship as package data.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Final, Literal

from threadfold.core.keys import ThreadKeys
from threadfold.core.metadata import TERM_DIGITS
from threadfold.workers.redisio.client import Script
from threadfold.workers.storage.pages import BUCKET_ENTRIES, MAX_PAGE_RECORDS, PAGE_BYTES

Helper = Literal["common", "state", "lifecycle", "apply", "checkpoint"]

#: The thread keys the lifecycle helper names by a thread's tag and ref (what removing
#: a thread deletes, and its metadata), and its bucket's keys of a tenant.
THREAD_KINDS: Final = (
    "log",
    "meta",
    "pages",
    "index",
    "sched",
    "dedupe",
    "dedupe_expiry",
    "feed",
    "followed",
    "metadata",
    "checkpoints",
    "checkpoint_order",
    "checkpoint_versions",
    "checkpoint_blobs",
    "checkpoint_writes",
    "checkpoint_write_order",
    "checkpoint_runs",
)
TENANT_KINDS: Final = ("active", "born", "terms", "run_index")
BUCKET_KINDS: Final = ("dirty", "quarantine", "threads", "expiry")

#: The state helpers' sizes, from the page format's Python half.
_CONSTANTS: Final = (
    f"\nlocal PAGE_BYTES, MAX_PAGE_RECORDS, BUCKET_ENTRIES = "
    f"{PAGE_BYTES}, {MAX_PAGE_RECORDS}, {BUCKET_ENTRIES}\n"
)


def _lua_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _concat(name: str, parts: dict[str, str]) -> str:
    """A key name as a Lua expression: its placeholders as the named variables."""
    pieces, rest = [], name
    while rest:
        at = min((rest.find(p), p) for p in parts if p in rest) if any(
            p in rest for p in parts
        ) else (len(rest), "")
        if at[0]:
            pieces.append(_lua_string(rest[: at[0]]))
        if at[1]:
            pieces.append(parts[at[1]])
        rest = rest[at[0] + len(at[1]) :]
    return " .. ".join(pieces)


@cache
def key_functions() -> str:
    """``KEY.<kind>(tag, ref)`` (``(tag, tenant)`` for a tenant's, ``(tag)`` for a
    bucket's) in Lua, built from :class:`ThreadKeys` itself: the scripts that find a
    thread's keys from its ref (the sweep, a removal, an ingest) name them as Python
    does, in one place."""
    tag, ref, tenant = "\x02", "\x01", "\x03"
    lines = ["\nlocal KEY = {}"]
    of_thread = ThreadKeys(ref, tag)
    for kind in THREAD_KINDS:
        body = _concat(getattr(of_thread, kind), {tag: "tag", ref: "ref"})
        lines.append(f"KEY.{kind} = function(tag, ref) return {body} end")
    of_tenant = ThreadKeys(f"{tenant}/", tag)
    for kind in TENANT_KINDS:
        body = _concat(getattr(of_tenant, kind), {tag: "tag", tenant: "tenant"})
        lines.append(f"KEY.{kind} = function(tag, tenant) return {body} end")
    for kind in BUCKET_KINDS:
        body = _concat(getattr(of_thread, kind), {tag: "tag"})
        lines.append(f"KEY.{kind} = function(tag) return {body} end")
    lines.append(f"local TERM_DIGITS = {TERM_DIGITS}\n")
    return "\n".join(lines)


@cache
def source(name: str) -> str:
    """The text of ``<name>.lua`` in this package."""
    return files(__package__).joinpath(f"{name}.lua").read_text(encoding="utf-8")


def assemble(name: str, *helpers: Helper) -> str:
    """The script ``name`` as Redis runs it: its helpers, then its own code."""
    parts = []
    for helper in helpers:
        if helper == "state":
            parts.append(_CONSTANTS)
        if helper == "lifecycle":
            parts.append(key_functions())
        parts.append("\n" + source(helper))
    parts.append("\n" + source(name))
    return "".join(parts)


def script(name: str, *helpers: Helper) -> Script:
    """The :class:`Script` of ``<name>.lua`` with its helpers."""
    return Script(name, assemble(name, *helpers))
