"""The code blocks of the repository's Markdown, as tests/test_examples.py runs them.

Markdown is parsed by markdown-it-py (CommonMark), not by a regex: fences in lists,
longer fences around ``` and indented code blocks are found as a renderer finds them.

A fenced block carries its language: ``python`` and ``sh`` blocks are run; ``text`` is
for pictures, trees and synopses, which are not code. A block that cannot run is marked
on the line before its fence with the reason, which the reader sees in the source::

    <!-- not-run: starts the whole stack and runs until Ctrl-C -->
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent

#: Languages of blocks that are run, and of blocks that are not code.
RUN = ("python", "sh")
NOT_CODE = ("text",)

_NOT_RUN = re.compile(r"<!--\s*not-run\b\s*(?::(?P<reason>.*?))?\s*-->", re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One code block: where it is, its language, its code, and why it is not run (when
    it is marked; an empty reason is a mark without one)."""

    path: str
    line: int  # of the block's first line of code, 1-based
    language: str
    source: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language in RUN and self.not_run is None


def markdown_files(root: Path = ROOT) -> list[Path]:
    """The README and every page of docs/. (deploy/'s READMEs are not here: their blocks
    are docker, kubectl and manifests, which tests/deploy checks as files.)"""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The code blocks of one file, in order. An indented code block has no language:
    its language is ``""``, which no test accepts."""
    tokens = MarkdownIt("commonmark").parse(path.read_text())
    found: list[Block] = []
    for index, token in enumerate(tokens):
        if token.type not in {"fence", "code_block"} or token.map is None:
            continue
        before = tokens[index - 1] if index else None
        mark = None
        if before is not None and before.type == "html_block" and before.map is not None:
            match = _NOT_RUN.search(before.content)
            if match is not None and before.map[1] == token.map[0]:
                mark = (match.group("reason") or "").strip()
        first = token.map[0] + (2 if token.type == "fence" else 1)
        language = token.info.split()[0] if token.type == "fence" and token.info else ""
        found.append(Block(str(path.relative_to(root)), first, language, token.content, mark))
    return found
