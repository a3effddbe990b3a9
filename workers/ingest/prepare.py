"""A delta checked and encoded for the log: what ingestion refuses, and what it stores.

Everything here runs before any I/O, so a bad delta is refused, located, with nothing
written (the producer stages a whole bulk this way before it sends any of it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import msgspec

from threadfold.core.codec import decode_messages, encode_messages, encode_stored
from threadfold.core.context import approximate
from threadfold.core.depth import DEFAULT_MAX_DEPTH, check_depth, containers_at_most
from threadfold.core.errors import InvalidMessage
from threadfold.core.ids import MAX_DELTA_ID, IdSource, derived_ids, ensure_ids
from threadfold.core.keys import DEFAULT_TENANT, InvalidName, make_ref
from threadfold.core.messages import REMOVE_ALL_MESSAGES, RemoveMessage, is_chunk
from threadfold.core.metadata import changes, pairs
from threadfold.core.results import Delta
from threadfold.core.servable import check_encoded
from threadfold.workers.storage.ingest import options
from threadfold.workers.storage.pages import fingerprints, unplaced, unplaced_removal


# The per-delta record here is a msgspec Struct, as the Delta it is made from: one is
# made per delta, and a Struct is built in C (0.15 us) where a frozen dataclass sets
# each field through object.__setattr__ (1.7 us): at 1,000 deltas per bulk call, a
# visible share.
class Prepared(msgspec.Struct, gc=False):
    """A delta as the ingest script takes it: its thread, bytes and ids."""

    ref: str
    delta_id: str
    payload: bytes
    ids: tuple[str, ...]
    mentioned: bytes
    #: The ingest script's opts for the thread (threadfold.workers.storage.ingest.options).
    opts: bytes = b""
    #: Its messages' records as a commit would store them, but for their positions
    #: (:func:`records_of`): the ingest script may commit the delta itself. Empty for
    #: a delta only a worker folds, or when not asked for.
    records: bytes = b""


def prepare(
    delta: Delta, where: str, new_id: IdSource, max_depth: int = DEFAULT_MAX_DEPTH,
    tenant: str = DEFAULT_TENANT,
) -> Prepared:
    """Validate and encode ``tenant``'s delta; errors are located under ``where`` ('' for
    none).

    A message nested deeper than ``max_depth`` levels is refused (see threadfold.core.depth).
    """

    def at(field: str) -> str:
        return f"{where}.{field}" if where else field

    ref = _checked_ref(delta, at, tenant)
    source = derived_ids(ref, delta.delta_id) if delta.delta_id else new_id
    messages = ensure_ids(delta.messages, source, at("messages"))
    try:
        payload = encode_messages(messages)
    except InvalidMessage as exc:
        raise exc.under(f"{where}.") if where else exc from None
    except RecursionError:
        payload = b""  # nested past what the encoder takes: the walk below says where
    # Nothing nested deeper than max_depth is stored, where a process with a deeper stack
    # (a worker) could fail to decode it. Only a delta whose bound passes the limit is walked.
    if not payload or containers_at_most(payload) > max_depth:
        check_depth(messages, max_depth, at("messages"))
        if not payload:  # shallow enough, but the caller's own stack was near the limit
            raise InvalidMessage(at("messages"), "nested too deeply to encode here")
    # What is accepted must be servable: a message with no OpenAI form would fail
    # every later ?format=openai read of the thread (see threadfold.core.servable).
    check_encoded(messages, payload, at("messages"))
    ids = tuple([m.id for m in messages])
    for i, ident in enumerate(ids):  # a message object is taken as built: check its id
        if type(ident) is not str:
            raise InvalidMessage(at(f"messages[{i}].id"), f"expected a string, got {ident!r}")
    ids = cast("tuple[str, ...]", ids)
    opts = b""
    if delta.metadata is not None:
        opts = options(pairs(changes(delta.metadata, at("metadata"), deletes=False)))
    return Prepared(ref, delta.delta_id or "", payload, ids, fingerprints(ids), opts)


def records_of(payload: bytes) -> bytes:
    """The records a worker's commit would write for these messages, but for their
    positions (:func:`threadfold.workers.storage.pages.unplaced`: the body, the token
    count; an id removed, :func:`~threadfold.workers.storage.pages.unplaced_removal`),
    for the ingest script to commit the delta itself where it can; or b"" for a delta
    only a worker folds: one with a chunk (merging needs the stored body), a removal of
    everything, or an id twice (the second applies to what the first made). Made from
    the payload decoded, as the worker decodes it, so the bytes are the ones it would
    store. Whether an id is stored, and so an update or an append, is the script's to
    see."""
    messages = decode_messages(payload)
    parts, seen = [], set()
    for m in messages:
        ident = m.id
        if is_chunk(m) or ident is None or ident in seen or ident == REMOVE_ALL_MESSAGES:
            return b""
        seen.add(ident)
        if type(m) is RemoveMessage:
            parts.append(unplaced_removal(ident))
        else:
            parts.append(unplaced(ident, encode_stored(m), approximate(m)))
    return b"".join(parts)


def _checked_ref(delta: Delta, at: Callable[[str], str], tenant: str) -> str:
    """The thread's ref, once the delta's own fields (not its messages) are checked."""
    try:
        ref = make_ref(tenant, delta.thread_id)
    except InvalidName as exc:
        raise InvalidMessage(at("thread_id"), str(exc)) from exc
    if delta.delta_id is not None and not (
        isinstance(delta.delta_id, str) and 0 < len(delta.delta_id) <= MAX_DELTA_ID
    ):
        reason = f"expected a string of 1 to {MAX_DELTA_ID} characters"
        raise InvalidMessage(at("delta_id"), reason)
    if not isinstance(delta.messages, list | tuple) or not delta.messages:
        raise InvalidMessage(at("messages"), "expected a non-empty list of messages")
    return ref


def prepare_all(  # a bulk's deltas, where they are located, and how
    deltas: Sequence[Delta],
    path: str,
    new_id: IdSource,
    max_depth: int,
    *,
    commits: bool = False,
    tenant: str = DEFAULT_TENANT,
) -> list[Prepared]:
    """``tenant``'s deltas checked and encoded. ``path`` 'deltas' locates errors as
    deltas[i].<field>; any other is used as is.
    ``commits``: give each delta its records (:func:`records_of`), for the ingest
    script to commit it itself where it can."""
    if not isinstance(deltas, Sequence):
        raise InvalidMessage(path, f"expected a sequence of Delta, got {type(deltas).__name__}")
    prepared = []
    for i, d in enumerate(deltas):
        where = f"{path}[{i}]" if path == "deltas" else path
        if not isinstance(d, Delta):
            raise InvalidMessage(where, f"expected a Delta, got {type(d).__name__}")
        p = prepare(d, where, new_id, max_depth, tenant)
        if commits:
            p.records = records_of(p.payload)
        prepared.append(p)
    return prepared
