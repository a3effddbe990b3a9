"""The driver: threads doing random operations until a deadline.

Each driver thread draws operations from :data:`WEIGHTS` with its own seeded random
generator (the seed chooses the operations; their interleaving is the machine's). The
command line runs in a thread of its own, at most once every :attr:`Plan.cli_every`
seconds: each run is a Python process start, about a second of CPU.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from tests.history import operator, reads, writes
from tests.history.model import Kind
from tests.history.session import Session

Action = Callable[[Session, random.Random], None]


def _one(session: Session, rng: random.Random) -> str:
    return rng.choice(session.refs)


def _some(session: Session, rng: random.Random, most: int) -> list[str]:
    return rng.sample(session.refs, rng.randint(1, min(most, len(session.refs))))


def _retry_target(session: Session, rng: random.Random) -> str:
    """Mostly a thread with a poison entry pending (quarantined, or about to be)."""
    held = [ref for ref in session.refs if session.known.snapshot(ref)[2]]
    return rng.choice(held) if held and rng.random() < 0.85 else _one(session, rng)


def _write_http(session: Session, rng: random.Random) -> None:
    writes.write(session, rng, [_one(session, rng)], "http")


def _write_bulk(session: Session, rng: random.Random) -> None:
    refs = [_one(session, rng) for _ in range(rng.randint(2, 40))]  # repeats: several each
    writes.write(session, rng, refs, "http")


def _write_python(session: Session, rng: random.Random) -> None:
    refs = [_one(session, rng) for _ in range(rng.randint(1, 20))]
    writes.write(session, rng, refs, "python")


def _burst(session: Session, rng: random.Random) -> None:
    """Hundreds of deltas to one thread in one call: logs of several pages (1,000
    entries each), so that reads take pages while commits trim and deletes race them.
    Most go to a thread a poison entry holds: its backlog grows old, and the commit
    that follows the skip trims what a read of its pages has yet to take."""
    ref = _retry_target(session, rng) if rng.random() < 0.7 else _one(session, rng)
    writes.write(session, rng, [ref] * rng.randint(400, 2000), "python")


def _delete(session: Session, rng: random.Random) -> None:
    """A delete; now and then followed by a retry of the thread, which must find no
    thread unless a write made it again meanwhile (a retry once made its keys again)."""
    ref = _one(session, rng)
    writes.delete(session, ref, rng.choice(("http", "http", "store")))
    if rng.random() < 0.3:
        operator.retry(session, ref, skip=rng.random() < 0.5, via="store")


def _poison(session: Session, rng: random.Random) -> None:
    writes.poison(session, rng, _one(session, rng))


#: How long a driver that skipped an entry reads the thread it released.
READ_AFTER_SKIP: Final = 0.5


def _retry(session: Session, rng: random.Random) -> None:
    """A retry; after a skip, reads of the thread at its newest version for a moment.

    The skip releases a backlog that grew old behind the poison entry; the drain then
    applies it in a commit of up to ``batch_size`` entries that also trims it (it is
    older than the retention). A read at the newest version takes the live state and
    the first 1,000 entries after it, then the next pages: the commit landing between
    two of them is the race that must end in a read started again, never a state with
    entries missing."""
    ref = _retry_target(session, rng)
    if not operator.retry(session, ref, skip=rng.random() < 0.75, via="store"):
        return
    until = time.monotonic() + READ_AFTER_SKIP
    while time.monotonic() < until:
        newest = session.known.snapshot(ref)[0]
        reads.travel(session, rng, ref, asked=newest[-1] if newest else None)


def _audit(session: Session, rng: random.Random) -> None:
    operator.recompute(session, _some(session, rng, 6), "audit")


def _rebuild(session: Session, rng: random.Random) -> None:
    operator.recompute(session, _some(session, rng, 6), "rebuild")


def _travel(session: Session, rng: random.Random) -> None:
    reads.travel(session, rng, _one(session, rng))


def _copy(session: Session, rng: random.Random) -> None:
    reads.copy(session, rng, _one(session, rng))


def _live(session: Session, rng: random.Random) -> None:
    reads.live(session, rng, _one(session, rng))


def _cli(session: Session, rng: random.Random, turn: int) -> None:
    """The command line, each of its three tools in turn."""
    if turn % 3 == 0:
        operator.retry(session, _retry_target(session, rng), skip=rng.random() < 0.75, via="cli")
    else:
        kind: Kind = "audit" if turn % 3 == 1 else "rebuild"
        operator.recompute_cli(session, _some(session, rng, 4), kind)


#: Operations and their relative frequencies.
WEIGHTS: Final[dict[str, tuple[Action, int]]] = {
    "write http": (_write_http, 20),
    "write bulk": (_write_bulk, 6),
    "write python": (_write_python, 10),
    "write burst": (_burst, 1),
    "delete": (_delete, 3),
    "poison": (_poison, 2),
    "retry": (_retry, 1),
    "audit": (_audit, 6),
    "rebuild": (_rebuild, 4),
    "travel": (_travel, 30),
    "copy": (_copy, 8),
    "live": (_live, 14),
}


@dataclass(frozen=True)
class Plan:
    """How long, how many driver threads, which seed, how often the command line."""

    seconds: float
    seed: int
    drivers: int = 6
    cli_every: float = 2.0


def _loop(session: Session, plan: Plan, n: int, until: float) -> None:
    rng = random.Random(plan.seed * 1000 + n)
    names = sorted(WEIGHTS)
    weights = [WEIGHTS[name][1] for name in names]
    while time.monotonic() < until:
        action, _ = WEIGHTS[rng.choices(names, weights)[0]]
        action(session, rng)


def _cli_loop(session: Session, plan: Plan, until: float) -> None:
    """The command line, in a thread of its own: its runs take seconds (a Python
    process start on a busy machine), which no driver should spend waiting."""
    rng = random.Random(plan.seed * 1000 - 1)
    turn = 0
    while time.monotonic() + plan.cli_every < until:
        started = time.monotonic()
        _cli(session, rng, turn)
        turn += 1
        time.sleep(max(0.0, started + plan.cli_every - time.monotonic()))  # a pace


def drive(session: Session, plan: Plan) -> None:
    """Run the driver threads until ``plan.seconds`` have passed; a driver's own
    failure (not an operation's, which is an answer) is raised here."""
    until = time.monotonic() + plan.seconds
    failures: list[BaseException] = []

    def run(n: int) -> None:
        try:
            if n < 0:
                _cli_loop(session, plan, until)
            else:
                _loop(session, plan, n, until)
        except BaseException as exc:  # raised again by drive, in its thread
            failures.append(exc)

    threads = [
        threading.Thread(target=run, args=(n,), daemon=True) for n in range(-1, plan.drivers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
