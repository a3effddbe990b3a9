"""The reference pages name everything they are the reference of, read from the code.

docs/http-api.md: every route the application serves (its route table, not a list kept
here) is a row of the page's route table and a section headed by it, written
`` `METHOD /path` `` with the path as the app declares it (``{thread_id}``); a section
names every parameter of its operation; every class of the error tree is a row of the
error table with its status and code. docs/cli.md: every ``threadfold`` command of the
argparse parser is a section headed `` `threadfold NAME` `` and a row of its command
table, and a section names its command's options.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
from starlette.routing import Mount, Route

from threadfold.api.app import create_app
from threadfold.api.settings import ApiSettings
from threadfold.core import errors
from threadfold.workers.ops import cli
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads import routes

DOCS: Final = Path(__file__).resolve().parent.parent / "docs"
HTTP_API: Final = DOCS / "http-api.md"
CLI: Final = DOCS / "cli.md"

#: A route as the pages write it: `` `POST /threads/{thread_id}/deltas` ``.
ROUTE_NAMED: Final = re.compile(r"`(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) (/[^`\s]*)`")
#: The parameters of the process's own routes (the table's operations declare theirs).
OWN_PARAMETERS: Final = {("GET", "/threads/{thread_id}/events"): ("thread_id", "format", "after")}
#: Commands whose options another page is the reference of.
OPTIONS_ELSEWHERE: Final = {"bench": "docs/benchmarks.md lists the benchmarks and their arguments"}


# -- reading the pages -----------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    heading: str
    level: int
    text: str  # the section's lines up to the next heading of its level or higher


def _lines_outside_code(text: str) -> Iterator[tuple[str, bool]]:
    """Each line, and whether it is prose (not inside a fenced code block)."""
    fence: str | None = None
    for line in text.splitlines():
        opened = re.match(r"^\s*(```+|~~~+)", line)
        if fence is None and opened:
            fence = opened.group(1)
            yield line, False
        elif fence is not None:
            if line.strip().startswith(fence) and line.strip() == fence[0] * len(line.strip()):
                fence = None
            yield line, False
        else:
            yield line, True


def sections(path: Path) -> list[Section]:
    """The page's sections by their headings (a ``#`` line in a code block is none)."""
    lines = list(_lines_outside_code(path.read_text()))
    headings = [
        (i, len(m.group(1)), m.group(2).strip())
        for i, (line, prose) in enumerate(lines)
        if prose and (m := re.match(r"^(#{1,6}) (.*)$", line))
    ]
    found = []
    for n, (start, level, heading) in enumerate(headings):
        # A section ends where a heading of its level or a higher one begins.
        end = next((i for i, lv, _ in headings[n + 1 :] if lv <= level), len(lines))
        found.append(Section(heading, level, "\n".join(line for line, _ in lines[start:end])))
    return found


def section(path: Path, heading: str) -> Section:
    matches = [s for s in sections(path) if s.heading == heading]
    assert len(matches) == 1, f"{path.name}: {len(matches)} sections headed {heading!r}"
    return matches[0]


def table_rows(text: str) -> list[list[str]]:
    """The cells of every table row of ``text`` outside code (header rows too)."""
    rows = []
    for line, prose in _lines_outside_code(text):
        if prose and line.startswith("|") and not re.match(r"^\|[-| :]+\|$", line):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


# -- what the code serves ---------------------------------------------------------------------


def served_routes() -> list[tuple[str, str]]:
    """(method, path) of every route the application answers, HEAD aside (every GET
    route answers it, as the page says once); the page's mount as a GET."""
    app = create_app(ApiSettings())
    found = []
    for route in app.routes:
        if isinstance(route, Route):
            assert route.methods is not None
            found += [(m, route.path) for m in sorted(route.methods) if m != "HEAD"]
        elif isinstance(route, Mount):
            found.append(("GET", route.path))
        else:
            raise AssertionError(f"a route of a kind the page does not describe: {route!r}")
    return found


def _named(method: str, path: str) -> str:
    return f"`{method} {path}`"


def operation_of(method: str, path: str) -> type[ops.Op[object]] | None:
    for op in ops.OPERATIONS:
        if op.route is not None and (op.route.method, op.route.path) == (method, path):
            return op
    return None


def parameters_of(method: str, path: str) -> tuple[str, ...]:
    op = operation_of(method, path)
    if op is None:
        return OWN_PARAMETERS.get((method, path), ())
    return tuple(p.name for p in routes.params(op))


SERVED: Final = served_routes()
ERRORS: Final = errors.classes()


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every ``threadfold`` subcommand, by name, from the parser the CLI runs."""
    parser = cli._parser()
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    assert found, "the threadfold parser has no subcommands"
    return found


COMMANDS: Final = commands()


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    """A command's options, each by its longest spelling (``--dry-run``), help aside."""
    return [
        max(action.option_strings, key=len)
        for action in parser._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction)
    ]


# -- docs/http-api.md ---------------------------------------------------------------------------


def test_the_app_serves_the_routes_of_the_operations_table_and_its_own() -> None:
    # The enumeration below is the app's: it must hold the table's routes and the rest.
    assert len(SERVED) >= len([op for op in ops.OPERATIONS if op.route is not None]) + 6
    assert ("GET", "/healthz") in SERVED and ("GET", "/ui") in SERVED


@pytest.mark.parametrize(("method", "path"), SERVED, ids=[f"{m} {p}" for m, p in SERVED])
def test_every_route_the_app_serves_is_a_row_of_the_route_table(method: str, path: str) -> None:
    table = section(HTTP_API, "Routes").text
    firsts = [row[0] for row in table_rows(table)]
    assert _named(method, path) in firsts, f"add a row for {_named(method, path)}"


@pytest.mark.parametrize(("method", "path"), SERVED, ids=[f"{m} {p}" for m, p in SERVED])
def test_every_route_the_app_serves_has_a_section_headed_by_it(method: str, path: str) -> None:
    section(HTTP_API, _named(method, path))


@pytest.mark.parametrize(("method", "path"), SERVED, ids=[f"{m} {p}" for m, p in SERVED])
def test_a_route_section_names_every_parameter_of_its_route(method: str, path: str) -> None:
    text = section(HTTP_API, _named(method, path)).text
    missing = [
        name for name in parameters_of(method, path)
        if f"`{name}`" not in text and f"{{{name}}}" not in text
    ]
    assert not missing, f"{_named(method, path)}: name {missing} in its section"


def test_the_route_table_gives_each_operation_its_success_status() -> None:
    rows = {row[0]: row[1] for row in table_rows(section(HTTP_API, "Routes").text)}
    wrong = {
        named: (rows.get(named), status)
        for op in ops.OPERATIONS
        if op.route is not None
        for named, status in [(_named(op.route.method, op.route.path), str(op.route.status))]
        if rows.get(named) != status
    }
    assert not wrong, f"route: (the page's status, the operation's): {wrong}"


def test_the_http_reference_names_no_route_the_app_does_not_serve() -> None:
    served = {_named(m, p) for m, p in SERVED}
    named = {_named(m, p) for m, p in ROUTE_NAMED.findall(HTTP_API.read_text())}
    assert named, "the page names routes as `METHOD /path`"
    assert not named - served, f"not served: {sorted(named - served)}"


@pytest.mark.parametrize("cls", ERRORS, ids=[c.__name__ for c in ERRORS])
def test_every_error_of_the_tree_is_a_row_of_the_error_table(
    cls: type[errors.RequestError],
) -> None:
    rows = table_rows(section(HTTP_API, "Errors").text)
    mine = [row for row in rows if row[0].split()[0] == f"`{cls.__name__}`"]
    assert len(mine) == 1, f"one row of the error table starts with `{cls.__name__}`"
    status = "any" if cls.status_code is None else str(cls.status_code)
    wanted = [status, f"`{cls.error_code}`"]
    assert mine[0][1:3] == wanted, f"{cls.__name__}: {wanted} in its row, not {mine[0][1:3]}"


def test_the_error_table_names_only_classes_of_the_tree() -> None:
    known = {f"`{cls.__name__}`" for cls in ERRORS}
    rows = table_rows(section(HTTP_API, "Errors").text)
    named = {row[0].split()[0] for row in rows if len(row) == 5 and row[0] != "class"}
    assert named and not named - known, f"not classes of the tree: {sorted(named - known)}"


def test_every_further_key_an_error_body_may_carry_is_named() -> None:
    text = section(HTTP_API, "Errors").text
    keys = {key for cls in ERRORS for key in cls.detail_keys}
    missing = sorted(key for key in keys if f"`{key}`" not in text)
    assert keys and not missing, f"name these error keys in the Errors section: {missing}"


# -- docs/cli.md ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_threadfold_command_has_a_section_and_a_row_of_the_command_table(name: str) -> None:
    section(CLI, f"`threadfold {name}`")
    firsts = [row[0] for row in table_rows(CLI.read_text())]
    assert any(cell.startswith(f"`threadfold {name}") for cell in firsts), (
        f"add `threadfold {name}` to the command table"
    )


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - set(OPTIONS_ELSEWHERE)))
def test_a_command_section_names_every_option_of_its_command(name: str) -> None:
    text = section(CLI, f"`threadfold {name}`").text
    missing = [o for o in options_of(COMMANDS[name]) if not re.search(rf"`{o}\b", text)]
    assert not missing, f"threadfold {name}: describe {missing} in its section"


def test_the_cli_reference_heads_sections_only_with_commands_the_parser_has() -> None:
    headed = [
        m.group(1)
        for s in sections(CLI)
        if (m := re.fullmatch(r"`threadfold (\S+)[^`]*`", s.heading))
    ]
    assert headed, "the page heads its commands' sections `threadfold NAME`"
    assert set(headed) <= set(COMMANDS), f"not commands: {sorted(set(headed) - set(COMMANDS))}"
