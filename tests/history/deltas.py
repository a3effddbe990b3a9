"""Random deltas: what the writers send.

Ids come from a small pool per thread, so most messages update or remove one already
there: a fold that misses or repeats an entry, or applies a prefix of the wrong length,
then shows in the state (with appends only, a missing entry could hide behind a later
one). Some messages are id-less (the service stamps them: the answer's ids say how),
some are tool calls and their results, and now and then a delta removes everything.
"""

from __future__ import annotations

import random
from typing import Any

#: Ids per thread: most messages hit one that is already there.
POOL = 24


def _message(rng: random.Random, tag: str) -> dict[str, Any]:
    ident = f"m{rng.randrange(POOL)}"
    roll = rng.random()
    if roll < 0.30:
        return {"role": "user", "content": f"u {tag}", "id": ident}
    if roll < 0.50:
        return {"role": "assistant", "content": f"a {tag}", "id": ident}
    if roll < 0.60:
        call = {"name": "lookup", "args": {"q": tag}, "id": f"call-{ident}"}
        return {"type": "ai", "content": "", "tool_calls": [call], "id": ident}
    if roll < 0.68:
        return {"type": "tool", "content": f"r {tag}", "tool_call_id": f"call-{ident}",
                "id": ident}
    if roll < 0.72:
        return {"role": "system", "content": f"s {tag}", "id": ident}
    if roll < 0.88:
        return {"type": "remove", "id": ident, "content": ""}
    return {"role": "user", "content": f"x {tag}"}  # id-less: stamped at ingestion


def delta(rng: random.Random, tag: str) -> list[dict[str, Any]]:
    """One delta: one to three messages, or (rarely) a removal of everything."""
    if rng.random() < 0.01:
        return [{"type": "remove", "id": "__remove_all__", "content": ""}]
    return [_message(rng, f"{tag}.{n}") for n in range(rng.choice((1, 1, 1, 2, 3)))]
