"""The crash test's child process: the crash plan's graph run over the saver under test
(a direct ``threadfold.Client`` on the settings its ``THREADFOLD_*`` environment gives)
until the ``side`` node of the fan-out step writes the marker file and blocks, where
the test SIGKILLs the process.

    python -m tests.integrations.saver_crash THREAD_ID MARKER add|delta sync|async
"""

from __future__ import annotations

import sys
from pathlib import Path

from langgraph.types import Durability

from tests.integrations.saver_graphs import Nodes, Plan
from tests.integrations.saver_script import compiled, config_of, saver_under_test, turn_input
from threadfold import Client
from threadfold.workers.settings import Settings


def crash_plan(delta: bool) -> Plan:
    """Tool rounds and an edit before the fan-out step (so they are committed when the
    process dies in it), a reset after it (so the resumed run writes more)."""
    return Plan(
        seed=-1,
        delta=delta,
        tool_rounds=2,
        tool_calls=2,
        stages=("edit", "fanout", "reset"),
        sends=3,
        edit_at=1,
        remove_at=2,
        keep_last=True,
        turns=1,
        fork_back=None,
        fork_as="agent",
        fork_edits=False,
        fresh_savers=False,
    )


def main(argv: list[str]) -> int:
    thread_id, marker, messages, persist = argv
    plan = crash_plan(messages == "delta")
    durability: Durability = "sync" if persist == "sync" else "async"
    with Client(settings=Settings()) as client:
        nodes = Nodes(plan, block=Path(marker))
        graph = compiled(plan, saver_under_test(client), nodes)
        graph.invoke(turn_input(0), config_of(thread_id), durability=durability)
    print("the graph returned: it should have blocked in its side node", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
