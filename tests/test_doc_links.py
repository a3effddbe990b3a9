"""The README and the docs hold together: every relative link and anchor resolves, the
README stays short, and the pages speak of the system, not of how it was built.

Links are read as a renderer reads them (markdown-it-py, CommonMark: inline, reference
and autolinks alike), and an anchor is checked against the slugs GitHub gives the
target's headings, so a renamed heading breaks the link that named it, here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from tests.doc_blocks import ROOT, markdown_files

#: Every Markdown page a reader follows links through: the README, docs/, the
#: changelog and the deployment folder's pages.
PAGES = sorted(
    {*markdown_files(), ROOT / "CHANGELOG.md", *(ROOT / "deploy").rglob("*.md")}
)
#: The pages that describe the system as it is (the changelog holds its history).
CURRENT = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

README_MAX_WORDS = 2500  # code included: a newcomer's hour, not a manual

#: Words about how the project was built, which belong in git and the changelog. A
#: commit hash is a word of 7 to 40 hex digits with a digit and a letter in it.
PROCESS_WORDS = re.compile(
    r"\bsessions?\b|\b(?:this|last) run\b|\bissues? #?\d+"
    r"|\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b",
    re.IGNORECASE,
)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, mailto:, …
_EXPLICIT_ANCHOR = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']""")

_MD = MarkdownIt("commonmark")


def _tokens(path: Path) -> list[Token]:
    return _MD.parse(path.read_text())


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


def _plain(inline: Token) -> str:
    """A heading's text as GitHub slugs it: text and code spans, no markup."""
    return "".join(
        child.content for child in inline.children or [] if child.type in {"text", "code_inline"}
    )


def slug(text: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but ``-`` and ``_``
    dropped, each space a hyphen."""
    kept = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return kept.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors a page offers: each heading's slug (a repeated one numbered, as
    GitHub numbers it) and every explicit ``<a id>``."""
    tokens = _tokens(path)
    seen: dict[str, int] = {}
    found: set[str] = set()
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        base = slug(_plain(tokens[index + 1]))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    found.update(_EXPLICIT_ANCHOR.findall(path.read_text()))
    return frozenset(found)


def links(path: Path) -> Iterator[tuple[int, str]]:
    """Each link and image target of a page, with the line of its block."""
    for token in _tokens(path):
        line = token.map[0] + 1 if token.map else 0
        for inner in _walk(token.children or []):
            target = inner.attrGet("href") if inner.type == "link_open" else None
            if inner.type == "image":
                target = inner.attrGet("src")
            if isinstance(target, str):
                yield line, target
        if token.type in {"html_block", "inline"}:
            for href in re.findall(r"""<(?:a|img)\s[^>]*(?:href|src)=["']([^"']+)["']""",
                                   token.content):
                yield line, href


def broken(path: Path, target: str) -> str | None:
    """Why a relative link from ``path`` leads nowhere, or None when it resolves."""
    if _EXTERNAL.match(target):
        return None
    file_part, _, anchor = target.partition("#")
    destination = (path.parent / unquote(file_part)).resolve() if file_part else path
    if not destination.exists():
        return "no such file"
    if ROOT not in destination.parents and destination != ROOT:
        return "outside the repository"
    if anchor and destination.suffix == ".md" and unquote(anchor) not in anchors(destination):
        return f"no heading #{anchor} in {destination.relative_to(ROOT)}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_of_a_page_resolves(page: Path) -> None:
    wrong = [
        f"{page.relative_to(ROOT)}:{line}: {target}: {why}"
        for line, target in links(page)
        if (why := broken(page, target)) is not None
    ]
    assert not wrong, "\n".join(wrong)


def test_the_link_checker_finds_a_broken_file_and_a_broken_anchor() -> None:
    page = ROOT / "README.md"
    assert broken(page, "docs/no-such-page.md") == "no such file"
    assert broken(page, "#no-such-heading") is not None
    assert broken(page, "https://example.invalid/") is None
    first = slug(_plain(_tokens(page)[1]))
    assert broken(page, f"#{first}") is None


def test_a_heading_slug_is_githubs() -> None:
    assert slug("The HTTP API: routes & errors") == "the-http-api-routes--errors"
    assert slug("`threadfold bench` commands") == "threadfold-bench-commands"


def test_the_readme_is_read_in_minutes() -> None:
    words = len((ROOT / "README.md").read_text().split())
    assert words <= README_MAX_WORDS, f"README.md has {words} words"


@pytest.mark.parametrize("page", CURRENT, ids=lambda page: str(page.relative_to(ROOT)))
def test_a_page_describes_the_system_not_how_it_was_built(page: Path) -> None:
    hits = [
        f"{page.relative_to(ROOT)}:{number}: {match.group()!r} in {line.strip()[:100]!r}"
        for number, line in enumerate(page.read_text().splitlines(), 1)
        for match in PROCESS_WORDS.finditer(line)
    ]
    assert not hits, "\n".join(hits)
