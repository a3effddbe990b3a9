"""The scripts' Lua sources: one ``.lua`` file per script, shared helpers joined at load.

A script's file holds its own code; the helpers it names are prepended in order
(``common.lua``: ids, the fence, the backlog; ``state.lua``: the page and index format
of :mod:`threadfold.workers.storage.pages`, whose sizes are written in as Lua constants
here, so Python and Lua cannot disagree on them). The files ship as package data.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Final, Literal

from threadfold.workers.redisio.client import Script
from threadfold.workers.storage.pages import BUCKET_ENTRIES, MAX_PAGE_RECORDS, PAGE_BYTES

Helper = Literal["common", "state"]

#: The state helpers' sizes, from the page format's Python half.
_CONSTANTS: Final = (
    f"\nlocal PAGE_BYTES, MAX_PAGE_RECORDS, BUCKET_ENTRIES = "
    f"{PAGE_BYTES}, {MAX_PAGE_RECORDS}, {BUCKET_ENTRIES}\n"
)


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
        parts.append("\n" + source(helper))
    parts.append("\n" + source(name))
    return "".join(parts)


def script(name: str, *helpers: Helper) -> Script:
    """The :class:`Script` of ``<name>.lua`` with its helpers."""
    return Script(name, assemble(name, *helpers))
