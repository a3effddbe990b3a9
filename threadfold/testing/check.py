"""Checking a deployment against a :class:`~threadfold.testing.Ledger`, through the
client contract only (``state``, ``wait_for``, ``append``): any of the four clients."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from threadfold.testing.fold import as_json
from threadfold.testing.ledger import Ledger, refused

if TYPE_CHECKING:
    from threadfold.types import AsyncClientProtocol, ClientProtocol

#: Default seconds :func:`check` and :func:`wait_applied` wait for a thread's version.
TIMEOUT = 30.0


@dataclass(frozen=True)
class Mismatch:
    """A thread whose state is not the ledger's fold: ``kind`` is ``"missing"``,
    ``"version not reached"``, ``"incomplete"``, ``"state differs"`` or ``"error"``."""

    thread_id: str
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"thread {self.thread_id}: {self.kind}: {self.detail}"


@dataclass
class Report:
    """What :func:`check` found: the threads compared, those it could not check (a
    write with no answer), and every mismatch."""

    checked: list[str] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def assert_ok(self) -> None:
        """Raise AssertionError listing the mismatches, if any."""
        if self.mismatches:
            shown = "\n".join(str(m) for m in self.mismatches[:10])
            more = len(self.mismatches) - 10
            raise AssertionError(
                f"{len(self.mismatches)} of {len(self.checked)} threads differ from the "
                f"oracle:\n{shown}" + (f"\n... and {more} more" if more > 0 else "")
            )


def describe(expected: Sequence[Any], actual: Sequence[Any]) -> str:
    """Where two message lists first differ, and which ids one has that the other lacks."""
    notes = []
    if len(expected) != len(actual):
        notes.append(f"expected {len(expected)} messages, got {len(actual)}")
    for i, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want != got:
            notes.append(
                f"first difference at message {i}: expected {_snippet(want)}, "
                f"got {_snippet(got)}"
            )
            break
    want_ids = {m.get("id") for m in expected}
    got_ids = {m.get("id") for m in actual}
    if want_ids - got_ids:
        notes.append(f"missing ids {sorted(map(str, want_ids - got_ids))[:5]}")
    if got_ids - want_ids:
        notes.append(f"unexpected ids {sorted(map(str, got_ids - want_ids))[:5]}")
    return "; ".join(notes) or "same messages, different order"


def _snippet(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return text if len(text) <= limit else text[:limit] + "..."


def state_of(
    client: ClientProtocol, thread_id: str, *, min_version: str | None = None,
    wait: float | None = None,
) -> list[dict[str, Any]]:
    """The thread's whole state as the deployment serves it (LangChain's form,
    JSON-shaped), once it reached ``min_version`` (waiting up to ``wait`` seconds)."""
    state = client.state(thread_id, min_version=min_version, wait=wait)
    if state.has_more:
        raise AssertionError(f"thread {thread_id}: a read without a limit answered has_more")
    return as_json(state.messages)  # type: ignore[no-any-return]


async def state_of_async(
    client: AsyncClientProtocol, thread_id: str, *, min_version: str | None = None,
    wait: float | None = None,
) -> list[dict[str, Any]]:
    """:func:`state_of` for an asyncio client."""
    state = await client.state(thread_id, min_version=min_version, wait=wait)
    if state.has_more:
        raise AssertionError(f"thread {thread_id}: a read without a limit answered has_more")
    return as_json(state.messages)  # type: ignore[no-any-return]


def wait_applied(
    client: ClientProtocol, ledger: Ledger, *, timeout: float = TIMEOUT,
    threads: Iterable[str] | None = None,
) -> None:
    """Until every thread (of ``threads``, by default the ledger's) reached the last
    version it was answered: ``VersionNotReached`` after ``timeout`` seconds a thread."""
    for thread_id in ledger.threads() if threads is None else threads:
        last = ledger.last_version(thread_id)
        if last is not None:
            client.wait_for(thread_id, last, timeout)


async def wait_applied_async(
    client: AsyncClientProtocol, ledger: Ledger, *, timeout: float = TIMEOUT,
    threads: Iterable[str] | None = None,
) -> None:
    """:func:`wait_applied` for an asyncio client."""
    for thread_id in ledger.threads() if threads is None else threads:
        last = ledger.last_version(thread_id)
        if last is not None:
            await client.wait_for(thread_id, last, timeout)


def settle(client: ClientProtocol, ledger: Ledger) -> int:
    """Resolve the ledger's unanswered writes: each with a ``delta_id`` is re-sent (the
    deployment answers a retry with the original version and ids, or stores it now);
    one without, or whose re-send fails, taints its thread. Returns how many were
    re-sent and answered."""
    resent = 0
    for out in ledger.pending():
        if out.delta_id is None:
            ledger.taint(out.thread_id)
            continue
        try:
            appended = client.append(out.thread_id, out.messages, delta_id=out.delta_id)
        except Exception as exc:  # noqa: BLE001  # any failure: decided below
            if refused(exc) and getattr(exc, "status", None) != 429:
                ledger.abandon(out)  # refused now, so it was refused then
            else:
                ledger.taint(out.thread_id)
            continue
        ledger.accept(out, appended.version, appended.ids)
        resent += 1
    return resent


def _plan(ledger: Ledger, threads: Iterable[str] | None) -> tuple[Report, list[tuple[str, str]]]:
    report = Report()
    todo = []
    names = [*ledger.threads(), *ledger.unsettled()] if threads is None else threads
    for thread_id in dict.fromkeys(names):
        last = ledger.last_version(thread_id)
        if not ledger.settled(thread_id):
            report.unverifiable.append(thread_id)
        elif last is not None:
            report.checked.append(thread_id)
            todo.append((thread_id, last))
    return report, todo


def _compare(ledger: Ledger, thread_id: str, served: list[dict[str, Any]]) -> Mismatch | None:
    expected = ledger.expected_dump(thread_id)
    if served != expected:
        return Mismatch(thread_id, "state differs", describe(expected, served))
    return None


def _failure(thread_id: str, exc: Exception) -> Mismatch:
    kinds = {404: "missing", 409: "version not reached"}
    kind = kinds.get(getattr(exc, "status", 0), "error")
    if isinstance(exc, AssertionError):
        kind = "incomplete"
    return Mismatch(thread_id, kind, f"{type(exc).__name__}: {exc}")


def check(
    client: ClientProtocol, ledger: Ledger, *, timeout: float = TIMEOUT,
    threads: Iterable[str] | None = None,
) -> Report:
    """Read every thread (of ``threads``, by default the ledger's) once it reached its
    last acknowledged version (waiting up to ``timeout`` seconds) and compare it with
    the ledger's fold. Threads with a write still unanswered are reported unverifiable
    (call :func:`settle` first to resolve them)."""
    report, todo = _plan(ledger, threads)
    for thread_id, last in todo:
        try:
            served = state_of(client, thread_id, min_version=last, wait=timeout)
        except Exception as exc:  # noqa: BLE001  # one thread's failure is a finding
            report.mismatches.append(_failure(thread_id, exc))
            continue
        found = _compare(ledger, thread_id, served)
        if found is not None:
            report.mismatches.append(found)
    return report


async def check_async(
    client: AsyncClientProtocol, ledger: Ledger, *, timeout: float = TIMEOUT,
    threads: Iterable[str] | None = None,
) -> Report:
    """:func:`check` for an asyncio client."""
    report, todo = _plan(ledger, threads)
    for thread_id, last in todo:
        try:
            served = await state_of_async(client, thread_id, min_version=last, wait=timeout)
        except Exception as exc:  # noqa: BLE001  # one thread's failure is a finding
            report.mismatches.append(_failure(thread_id, exc))
            continue
        found = _compare(ledger, thread_id, served)
        if found is not None:
            report.mismatches.append(found)
    return report
