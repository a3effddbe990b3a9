"""threadfold.testing against the real stack (redis-server, a Celery worker, the API):
through each of the four clients, the oracle passes a thread that holds what was
acknowledged and fails one changed behind the ledger's back."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from tests.client.conftest import Stack
from tests.client.kinds import TOKEN, new_thread
from threadfold import AsyncHttpClient, ClientProtocol, InvalidInput
from threadfold.core import apply_deltas
from threadfold.testing import (
    Ledger,
    check,
    check_async,
    fold,
    settle,
    stamped,
    state_of,
    wait_applied,
    wait_applied_async,
)


def _conversation(ledger: Ledger, client: ClientProtocol, thread: str, n: int = 12) -> None:
    """``n`` deltas: id-less appends, messages with ids, updates of earlier ids."""
    rng = random.Random(thread)
    for i in range(n):
        if i % 4 == 3:  # an update in place of an earlier message
            message = {"role": "assistant", "content": f"edited {i}", "id": f"m{rng.randrange(i)}"}
        elif i % 2:
            message = {"role": "assistant", "content": f"answer {i}", "id": f"m{i}"}
        else:
            message = {"role": "user", "content": f"question {i}"}  # id stamped by the service
        ledger.append(client, thread, [message])


def test_a_deployment_that_holds_what_it_acknowledged_passes(client: ClientProtocol) -> None:
    ledger, threads = Ledger(), [new_thread() for _ in range(3)]
    for thread in threads:
        _conversation(ledger, client, thread)
    wait_applied(client, ledger)
    report = check(client, ledger)
    report.assert_ok()
    assert sorted(report.checked) == sorted(threads) and not report.unverifiable
    for thread in threads:
        assert state_of(client, thread) == ledger.expected_dump(thread)


def test_a_thread_changed_behind_the_ledgers_back_fails(client: ClientProtocol) -> None:
    ledger, kept, changed, edited = Ledger(), new_thread(), new_thread(), new_thread()
    for thread in (kept, changed, edited):
        _conversation(ledger, client, thread, n=6)
    # Written past the ledger: an append it never saw, and an edit of a message it holds.
    extra = client.append(changed, [{"role": "user", "content": "not in the ledger"}])
    edit = client.append(edited, [{"role": "assistant", "content": "rewritten", "id": "m1"}])
    client.wait_for(changed, extra.version, 30)
    client.wait_for(edited, edit.version, 30)

    report = check(client, ledger)

    assert not report.ok and sorted(report.checked) == sorted([kept, changed, edited])
    found = {m.thread_id: m for m in report.mismatches}
    assert set(found) == {changed, edited}
    assert found[changed].kind == "state differs"
    held = len(ledger.expected(changed))
    assert f"expected {held} messages, got {held + 1}" in found[changed].detail
    assert f"unexpected ids ['{extra.ids[0]}']" in found[changed].detail
    assert "first difference at message 1" in found[edited].detail
    assert "rewritten" in found[edited].detail
    with pytest.raises(AssertionError, match="2 of 3 threads differ from the oracle"):
        report.assert_ok()


def test_a_deleted_thread_is_reported_missing(client: ClientProtocol) -> None:
    ledger, thread = Ledger(), new_thread()
    _conversation(ledger, client, thread, n=3)
    wait_applied(client, ledger)
    client.delete(thread)
    [mismatch] = check(client, ledger, timeout=5).mismatches
    assert (mismatch.thread_id, mismatch.kind) == (thread, "missing")


def test_append_many_answers_are_recorded_and_a_refusal_stores_nothing(
    client: ClientProtocol,
) -> None:
    ledger, a, b = Ledger(), new_thread(), new_thread()
    deltas: list[tuple[str, list[Any]]] = [
        (a, [{"role": "user", "content": "one"}]),
        (b, [{"role": "user", "content": "two", "id": "x"}]),
        (a, [{"role": "assistant", "content": "three"}]),
    ]
    for (thread, messages), answer in zip(deltas, client.append_many(deltas), strict=True):
        ledger.record(thread, messages, answer)
    with pytest.raises(InvalidInput):  # refused: recorded as nothing stored
        ledger.append(client, a, [{"role": "nobody", "content": "?"}])
    assert ledger.settled(a) and ledger.count == 3
    check(client, ledger).assert_ok()


def test_a_write_without_an_answer_is_unverifiable_until_settled(client: ClientProtocol) -> None:
    ledger, thread = Ledger(), new_thread()
    ledger.append(client, thread, [{"role": "user", "content": "first"}])
    # Sent, its answer lost: the ledger cannot know whether it was stored.
    lost = ledger.begin(thread, [{"role": "user", "content": "lost"}], delta_id=f"{thread}-d2")
    client.append(thread, lost.messages, delta_id=lost.delta_id)
    report = check(client, ledger)
    assert report.unverifiable == [thread] and not report.checked and report.ok

    assert settle(client, ledger) == 1  # re-sent by its delta_id: the original answer
    assert ledger.settled(thread) and len(ledger.deltas(thread)) == 2
    check(client, ledger).assert_ok()


def test_the_asyncio_helpers_check_an_asyncio_client(stack: Stack, runner: asyncio.Runner) -> None:
    ledger, thread, other = Ledger(), new_thread(), new_thread()

    async def scenario() -> tuple[bool, list[str]]:
        async with AsyncHttpClient(stack.api_url, TOKEN) as client:
            for i in range(5):
                await ledger.append_async(client, thread, [{"role": "user", "content": f"{i}"}])
            await ledger.append_async(client, other, [{"role": "user", "content": "kept"}])
            await wait_applied_async(client, ledger)
            right = (await check_async(client, ledger)).ok
            done = await client.append(other, [{"role": "user", "content": "behind its back"}])
            await client.wait_for(other, done.version, 30)
            wrong = await check_async(client, ledger)
            return right, [m.thread_id for m in wrong.mismatches]

    assert runner.run(scenario()) == (True, [other])


def test_the_fold_is_one_reducer_call_per_delta_in_version_order() -> None:
    """Answers arrive in any order; the fold takes them by version. Whatever batch sizes
    a deployment used, the state is the reducer applied delta by delta."""
    deltas = [
        ("1000-0", [{"role": "user", "content": "v1", "id": "m"}], ["m"]),
        ("1000-1", [{"role": "user", "content": "v2", "id": "m"}], ["m"]),
        ("1000-2", [{"role": "ai", "content": "hi"}], ["a1"]),
    ]
    plain, compact = Ledger(), Ledger(compact=True)
    for ledger in (plain, compact):
        outs = [ledger.begin("t", messages) for _, messages, _ in deltas]  # all in flight
        for out, (version, _, ids) in reversed(list(zip(outs, deltas, strict=True))):
            ledger.accept(out, version, ids)  # answered last first
    expected = apply_deltas([], [stamped(m, ids) for _, m, ids in deltas])
    assert plain.expected("t") == compact.expected("t") == expected
    assert fold([(m, ids) for _, m, ids in deltas]) == expected
    assert [d.version for d in plain.deltas("t")] == ["1000-0", "1000-1", "1000-2"]
    assert plain.last_version("t") == compact.last_version("t") == "1000-2"
    plain.add("t", "1000-1", deltas[1][1], deltas[1][2])  # the same answer again: ignored
    assert plain.count == 3
