"""What ingestion accepts, a read can serve: in both formats, after any fold.

LangChain's ``convert_to_messages`` accepts messages its ``convert_to_openai_messages``
refuses (a text block without ``text``); the producer refuses those at ingestion
(:mod:`threadfold.core.servable`). The properties here run the real ingest step
(``threadfold.workers.ingest.producer.prepare``) over generated deltas — every input form, content
blocks
good and broken, chunks that merge — then fold what was accepted as the workers do
(with and without chunk merging), store and load it, and render both read formats.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadfold.core import AIMessage, AIMessageChunk, HumanMessage, InvalidMessage, to_message
from threadfold.core.codec import decode_messages, decode_stored, encode_stored, to_json
from threadfold.core.delta import apply_deltas
from threadfold.core.dump import dump_messages
from threadfold.core.fold import merge_chunk, replay_fold
from threadfold.core.ids import uuid4_str
from threadfold.core.messages import BaseMessage, RemoveMessage
from threadfold.core.openai import to_openai
from threadfold.core.servable import check_servable
from threadfold.workers.ingest.producer import Delta, prepare

# --- generated message-likes: the input space of the API and the Python producer ----

KEYS = [
    "type", "text", "image_url", "url", "source", "image", "file", "input_audio", "id",
    "name", "input", "call_id", "arguments", "tool_use_id", "content", "json",
    "guard_content", "mime_type", "data", "base64", "file_id", "source_type", "filename",
    "extras", "refusal", "index", "format", "bytes", "media_type", "file_data", "thinking",
]  # fmt: skip
BLOCK_TYPES = [
    "text", "image_url", "image", "file", "input_audio", "audio", "video", "text-plain",
    "tool_use", "function_call", "tool_result", "json", "guard_content", "media",
    "refusal", "thinking", "reasoning", "custom", "base64", "url",
]  # fmt: skip
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBOR"}
GOOD_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "hi"},
    {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
    {"type": "image", "source": PNG},
    {"type": "image", "url": "https://x/i.png"},
    {"type": "image", "base64": "AAA", "mime_type": "image/png"},
    {"type": "file", "base64": "JVBE", "mime_type": "application/pdf"},
    {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE"}},
    {"type": "audio", "base64": "UklG", "mime_type": "audio/wav"},
    {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
    {"type": "tool_use", "id": "tu_1", "name": "search", "input": {"q": "x"}},
    {"type": "tool_result", "tool_use_id": "tu_1", "content": "42"},
    {"type": "json", "json": {"a": 1}},
    {"guard_content": {"text": "g"}},
    {"type": "refusal", "refusal": "no"},
    {"type": "thinking", "thinking": "hmm"},
    {"type": "custom", "x": 1},
]

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from(["", "x", "text", "base64", "url", "image/png", "audio/wav", "tu_1"]),
)
python_only = st.one_of(st.binary(max_size=2), st.tuples(leaves))  # the Python producer's
json_values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=6,
)
values = st.one_of(json_values, python_only, st.dictionaries(st.none() | st.integers(), leaves))
# a block: a known good one (often), or a type and a few keys of any kind
blocks = st.one_of(
    st.sampled_from(GOOD_BLOCKS),
    st.builds(
        lambda kind, rest: {"type": kind, **rest} if kind else rest,
        st.sampled_from([*BLOCK_TYPES, None]),
        st.dictionaries(st.sampled_from(KEYS), values, max_size=3),
    ),
    st.text(max_size=2),
)
# chunks add list contents block by block, matched on "index": give some an index
indexed = st.builds(
    lambda block, index: {**block, "index": index} if isinstance(block, dict) and index else block,
    blocks,
    st.sampled_from([None, 0, 0, 1]),
)
contents = st.one_of(st.sampled_from(["", "hello"]), st.lists(indexed, max_size=3))
ids = st.sampled_from(["a", "b", None])
args = st.dictionaries(st.sampled_from(["q", "n"]), values, max_size=2)


def _message_like(
    kind: str, content: Any, ident: str | None, extra: dict[str, Any]
) -> dict[str, Any]:
    if kind == "remove":
        return {"type": "remove", "id": ident or "a", "content": ""}
    key = "role" if kind in ("user", "assistant", "system", "developer", "tool") else "type"
    item = {key: kind, "content": content, **extra}
    if ident is not None:
        item["id"] = ident
    if kind == "tool":
        item["tool_call_id"] = "c1"
    return item


extras = st.one_of(
    st.just({}),
    st.builds(lambda a: {"tool_calls": [{"name": "f", "args": a, "id": "c1"}]}, args),
    st.builds(lambda role: {"additional_kwargs": {"__openai_role__": role}}, leaves),
    st.builds(lambda v: {"additional_kwargs": {"k": v}}, values),
    st.builds(lambda v: {"response_metadata": {"m": v}}, values),
)
KINDS = ["user", "assistant", "system", "tool", "human", "ai", "AIMessageChunk"]
KINDS += ["AIMessageChunk", "HumanMessageChunk", "remove"]
message_likes = st.builds(_message_like, st.sampled_from(KINDS), contents, ids, extras)
# A stream: chunks of one id whose blocks merge (index 0). LangChain's sum keeps the
# first block's type and adds the others' keys, which can make a block another rule
# matches (an image with a "text" key is a data block without a url): the sum of two
# servable chunks is not always servable.
fragment_values = st.sampled_from(["x", "", PNG, {"format": "png"}, {"url": "u"}])
fragments = st.builds(
    lambda kind, rest: {"type": kind, **rest},
    st.sampled_from(["custom", "text", "thinking", "image", "file"]),
    st.dictionaries(
        st.sampled_from(["text", "url", "base64", "mime_type", "source", "file_id", "refusal"]),
        fragment_values,
        min_size=1,
        max_size=2,
    ),
)
stream_blocks = st.one_of(st.sampled_from(GOOD_BLOCKS), fragments).map(lambda b: {**b, "index": 0})
streams = st.lists(
    st.lists(stream_blocks, min_size=1, max_size=2).map(
        lambda content: [{"type": "AIMessageChunk", "id": "s", "content": content}]
    ),
    min_size=2,
    max_size=4,
)
deltas = st.builds(
    lambda general, stream: [*general, *stream],
    st.lists(st.lists(message_likes, min_size=1, max_size=3), min_size=1, max_size=6),
    streams,
)


# --- the properties --------------------------------------------------------------------


def _accepted(delta: list[Any]) -> list[BaseMessage] | None:
    """The delta as the log stores it, or None when ingestion refuses it."""
    try:
        prepared = prepare(Delta("t", delta), "", uuid4_str)
    except InvalidMessage:
        return None
    return decode_messages(prepared.payload)


def _served(state: list[BaseMessage]) -> None:
    """Both read formats of a state, from its stored bodies, as the API renders them."""
    stored = [decode_stored(encode_stored(m), str(m.id)) for m in state]
    to_openai(stored)
    to_json(dump_messages(stored))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deltas)
def test_every_accepted_delta_sequence_renders_in_both_formats_after_any_fold(
    sequence: list[list[Any]],
) -> None:
    log = [m for m in map(_accepted, sequence) if m is not None]
    for merge in (False, True):
        _served(replay_fold(log, merge_chunks=merge).ordered())  # the workers' fold
        state: list[BaseMessage] = []
        for batch in log:  # the reducer, one delta at a time
            state = apply_deltas(state, [batch], merge_chunks=merge)
        _served(state)


def _renders(message: BaseMessage) -> bool:
    try:
        to_openai([message])
    except Exception:  # whatever a read would raise
        return False
    return True


def _checks(message: BaseMessage) -> bool:
    try:
        check_servable([message])
    except InvalidMessage as exc:
        assert exc.path.startswith("messages[0]"), exc.path
        return False
    return True


hand_built = st.builds(  # message objects are taken as built: nothing validated them
    lambda content, calls: AIMessage(content=content, tool_calls=calls),
    contents,
    st.lists(st.dictionaries(st.sampled_from(["id", "name", "args"]), values), max_size=2),
)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(message_likes, hand_built))
def test_the_check_refuses_exactly_what_a_read_fails_to_render(item: Any) -> None:
    """Its fast path (what cannot fail is not rendered) decides nothing wrongly."""
    try:
        message = to_message(item)
    except InvalidMessage:
        return
    if type(message) is not RemoveMessage:
        assert _checks(message) == _renders(message)


# --- the cases behind the decision ---------------------------------------------------


def test_the_reported_message_is_refused_at_ingest_naming_the_block() -> None:
    delta = Delta("t", [{"type": "human", "content": [{"type": "text"}], "id": "m1"}])
    with pytest.raises(InvalidMessage) as raised:
        prepare(delta, "", uuid4_str)
    assert raised.value.path == "messages[0].content[0]"
    assert str(raised.value) == (
        "messages[0].content[0]: cannot be served with format=openai: missing key 'text'"
    )


def test_a_bulk_refusal_is_located_in_its_delta() -> None:
    good = {"role": "user", "content": "fine"}
    bad = {"role": "user", "content": ["ok", {"type": "image"}]}
    with pytest.raises(InvalidMessage) as raised:
        prepare(Delta("t", [good, bad]), "deltas[3]", uuid4_str)
    assert raised.value.path == "deltas[3].messages[1].content[1]"
    assert "does not have a 'source' or 'image' key" in str(raised.value)


def test_a_dict_key_json_cannot_carry_is_refused_where_it_is() -> None:
    """A Python producer can hand msgpack what a JSON read cannot give back."""
    for key in (None, True, ("a", 1)):
        item = {"role": "user", "content": "x", "additional_kwargs": {"k": {key: 1}}}
        with pytest.raises(InvalidMessage, match="not JSON data") as raised:
            prepare(Delta("t", [item]), "", uuid4_str)
        assert raised.value.path == "messages[0].additional_kwargs"
    carried = {"role": "user", "content": "x", "additional_kwargs": {"k": {1: 1, b"b": 2}}}
    [message] = _accepted([carried]) or []
    _served([message])


def test_a_chunk_sum_without_an_openai_form_is_not_stored_the_new_chunk_replaces() -> None:
    """Each chunk renders; LangChain's sum keeps the image block's type and gains "text",
    which makes it a data block without a url, which the converter refuses."""
    image = [{"index": 0, "type": "image", "source": PNG}]
    first = AIMessageChunk(content=image, id="x")
    second = AIMessageChunk(content=[{"index": 0, "type": "text", "text": "hi"}], id="x")
    check_servable([first, second])
    assert merge_chunk(first, second) is second
    text = AIMessageChunk(content=[{"index": 0, "type": "text", "text": " there"}], id="x")
    assert merge_chunk(second, text).content == [{"index": 0, "type": "text", "text": "hi there"}]


def test_a_hand_built_message_a_read_would_fail_on_is_refused_not_raised() -> None:
    broken = AIMessage(content="", tool_calls=[{"name": "f", "args": {}}])  # no id
    with pytest.raises(InvalidMessage, match="KeyError") as raised:
        prepare(Delta("t", [broken]), "", uuid4_str)
    assert raised.value.path == "messages[0]"
    assert _accepted([HumanMessage(content=[{"type": "text", "text": "ok"}])])


def test_what_is_checked_is_what_a_read_decodes() -> None:
    """msgpack gives a Python caller's tuple back as a list: a block whose type is a
    tuple renders (passed through), the list a read decodes cannot be hashed."""
    item = {"role": "user", "content": [{"type": ("x",)}]}
    check_servable([to_message(item)])  # as given, it would render
    with pytest.raises(InvalidMessage, match="unhashable type: 'list'") as raised:
        prepare(Delta("t", [item]), "", uuid4_str)
    assert raised.value.path == "messages[0].content[0]"
