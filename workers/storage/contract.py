"""What a script's Python module declares about it, and how its keys are named.

Each script's KEYS are a ``NamedTuple`` whose fields are :class:`ThreadKeys`
attribute names, in the order the script takes them: the order is written once, here
in Python, and the ``-- KEYS:`` line of the ``.lua`` file is checked against it by a
test (so are fixed ARGV, declared as an ``Args`` NamedTuple).
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeVar

from threadfold.core.keys import ThreadKeys

K = TypeVar("K", bound=NamedTuple)


def keys_of(shape: type[K], k: ThreadKeys) -> K:
    """The keys ``shape`` names, of the thread (or bucket) ``k``."""
    values: Any = [getattr(k, name) for name in shape._fields]
    return shape._make(values)
