"""A seeded random corpus of message-likes, valid and invalid, for the differential tests.

Every input form ``convert_to_messages`` reads is covered: bare strings, ``[role,
content]`` sequences (of every length), OpenAI role dicts, flat ``{"type": ...}`` dicts,
role and type together, ``{"lc": 1, "type": "constructor"}`` envelopes (well formed
and broken), ``{"type", "data"}`` envelopes, dicts with neither role nor type, and
scalars.

Each value is drawn from a pool of good values (accepted or coerced by LangChain) or,
with the item's *noise* probability, from a pool of bad ones. Noise varies per item,
from none to mostly bad, so the corpus holds plenty of messages LangChain builds (whose
dumps are compared field by field) and plenty it refuses, at every depth.

A few values only Python can produce (bytes, tuples, sets, non-string dict keys) are in
the bad pools on purpose: ``to_message`` is a Python API too.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Sequence
from typing import Any, Final

CHUNK_TYPES: Final = (
    "AIMessageChunk",
    "HumanMessageChunk",
    "SystemMessageChunk",
    "ToolMessageChunk",
    "FunctionMessageChunk",
    "ChatMessageChunk",
)
GOOD_ROLES: Final[list[Any]] = [
    "user",
    "human",
    "assistant",
    "ai",
    "system",
    "developer",
    "tool",
    "function",
    "remove",
]
BAD_ROLES: Final[list[Any]] = [
    "chat",
    "critic",
    "",
    "User",
    "constructor",
    *CHUNK_TYPES,
    5,
    0,
    None,
    True,
    1.5,
    ["user"],
    {"a": 1},
    ("user",),
]
GOOD_TYPES: Final[list[Any]] = ["human", "ai", "system", "tool", "function", "remove"]
BAD_TYPES: Final[list[Any]] = [
    "chat",
    "developer",
    "user",
    "assistant",
    "weird",
    "",
    5,
    None,
    False,
    ["ai"],
]

GOOD_CONTENT: Final[list[Any]] = [
    None,
    "",
    "hello",
    "héllo ✓",
    [],
    ["a", "b"],
    ("a", "b"),
    ["look", {"type": "text", "text": "t"}],
    [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
    [{"type": "tool_call_chunk", "id": "c1", "name": "f", "args": "{}", "index": 0}],
    [{"type": "tool_call", "id": "c1", "name": "f", "args": {"a": 1}}],
    [{"type": "text", "text": "x", "index": 0}, "tail"],
]
BAD_CONTENT: Final[list[Any]] = [
    (),
    0,
    1,
    7,
    1.5,
    0.0,
    True,
    False,
    [1],
    [None],
    [["nested"]],
    ["a", 2.5],
    {"a": 1},
    {},
    [b"x"],
    b"x",
    bytearray(b"y"),
    {"a"},
    [b"\xff"],
    b"\xff",
]
GOOD_BLOCKS: Final[list[Any]] = [
    None,
    [],
    [{"type": "text", "text": "hi"}],
    [{"type": "tool_call", "id": "b1", "name": "f", "args": {"a": 1}}, "tail"],
    [{"type": "tool_call", "id": None, "name": "g", "args": {}, "extras": {"k": 1}}],
]
BAD_BLOCKS: Final[list[Any]] = [
    "x",
    5,
    [1],
    ["text"],
    {"type": "text"},
    [{"type": "tool_call", "id": "b1", "name": "f", "args": {}, "index": 0}],
    [{"type": "tool_call", "name": "f", "args": {}}],
]
GOOD_IDS: Final[list[Any]] = [
    None,
    "",
    "m1",
    "run-2",
    "lc_run-3",
    0,
    123,
    -7,
    1.5,
    1.0,
    1e20,
    0.1,
    10**30,
    float("inf"),
    b"m2",
]
BAD_IDS: Final[list[Any]] = [True, False, [], {}, ["a"], b"\xff"]
GOOD_NAMES: Final[list[Any]] = [None, "", "bob", "get_weather"]
BAD_NAMES: Final[list[Any]] = [5, 1.5, True, [], {}, b"raw", b"\xff", bytearray(b"ba")]
GOOD_TOOL_CALL_IDS: Final[list[Any]] = ["c1", "call_9", "", 5, 0, 1.5, True, False]
BAD_TOOL_CALL_IDS: Final[list[Any]] = [None, [], {}, {"a": 1}, b"\xff"]
GOOD_STATUSES: Final[list[Any]] = [None, "success", "error"]
BAD_STATUSES: Final[list[Any]] = ["", "failed", 1, True, ["error"]]
ARTIFACTS: Final[list[Any]] = [None, {"x": 1}, [1, 2], "a", 0, "", False]
GOOD_METADATA: Final[list[Any]] = [
    None,
    {},
    {"model_name": "m"},
    {"finish_reason": "stop", "model_provider": "openai"},
    {"output_version": "v1"},
]
BAD_METADATA: Final[list[Any]] = [[], [["a", 1]], "x", "", 0, 1, True, False, {1: "x"}]
GOOD_ARGUMENTS: Final[list[Any]] = [
    '{"city": "Paris"}',
    '{"a": 1, "b": [1, 2]}',
    "{}",
    '{"a": "line\nbreak"}',
    '  {"a": null}  ',
    {"a": 1},
    {},
]
BAD_ARGUMENTS: Final[list[Any]] = [
    "{bad",
    "",
    "[1]",
    '"s"',
    "null",
    "0",
    "1",
    "true",
    '{"a":1}trailing',
    '{"a": 1',
    "[]",
    [1],
    None,
    0,
    1,
    1.5,
    True,
    {1: "x"},
    b'{"a": 1}',
]
GOOD_FUNCTION_NAMES: Final[list[Any]] = ["get_weather", "f", ""]
BAD_FUNCTION_NAMES: Final[list[Any]] = [None, 5, ["f"], b"f"]
GOOD_CALL_IDS: Final[list[Any]] = ["call_1", "c2", "", None]
BAD_CALL_IDS: Final[list[Any]] = [5, True, 1.5, ["c"]]
GOOD_LC_ARGS: Final[list[Any]] = [{"a": 1}, {}, {"nested": {"x": [1, None]}}]
BAD_LC_ARGS: Final[list[Any]] = ['{"a": 1}', [1], None, 0, "", {1: "x"}]
GOOD_INDEXES: Final[list[Any]] = [0, 1, 2, None]
BAD_INDEXES: Final[list[Any]] = ["1", "lc_1", "x", 1.0, 1.5, True, [0]]
WEIRD_CONTAINERS: Final[list[Any]] = [
    None,
    "",
    "abc",
    "function",
    5,
    1.5,
    True,
    False,
    {},
    {"name": "f"},
    [5],
    [None],
    ["function"],
    [["function"]],
    ["abc"],
    [[]],
    [{}],
    {"function"},
]
EXTRA_KEYS: Final[list[Any]] = [
    "foo",
    "lc",
    "data",
    "message_type",
    "content_blocks",
    "function_call",
    "refusal",
    "parsed",
    "self",
    "kwargs",
    1,
    None,
    2.5,
    ("t", 1),
]
EXTRA_VALUES: Final[list[Any]] = [
    1,
    "x",
    None,
    {"k": [1, 2]},
    [1, {"a": None}],
    True,
    0.5,
    "",
    [],
    [{"type": "tool_call", "name": "f", "args": {}, "id": "b1"}],
]


class Draw:
    """Random choices for one corpus item, biased towards good values by ``noise``."""

    def __init__(self, rng: random.Random, noise: float) -> None:
        self.rng = rng
        self.noise = noise

    def maybe(self, p: float) -> bool:
        return self.rng.random() < p

    def bad(self) -> bool:
        """Whether this draw should be a bad one."""
        return self.rng.random() < self.noise

    def pick(self, good: Sequence[Any], bad: Sequence[Any] = ()) -> Any:
        """A fresh copy of a pool value (either side may mutate its input)."""
        pool = bad if bad and self.bad() else good
        return copy.deepcopy(self.rng.choice(pool))

    def keep(self, p: float = 0.9) -> bool:
        """Whether a required key is present: always without noise, less often with."""
        return not self.bad() or self.maybe(p)


Gen = Callable[[Draw], Any]


# --- tool calls --------------------------------------------------------------------


def openai_function(d: Draw) -> Any:
    if d.bad() and d.maybe(0.15):
        return d.pick(["f", None, [], 5, ["name"]])
    function: dict[str, Any] = {}
    if d.keep():
        function["name"] = d.pick(GOOD_FUNCTION_NAMES, BAD_FUNCTION_NAMES)
    if d.keep():
        function["arguments"] = d.pick(GOOD_ARGUMENTS, BAD_ARGUMENTS)
    if d.maybe(0.05):
        function["extra"] = 1
    return function


def openai_call(d: Draw) -> dict[str, Any]:
    call: dict[str, Any] = {}
    if d.keep():
        call["id"] = d.pick(GOOD_CALL_IDS, BAD_CALL_IDS)
    if d.maybe(0.6):
        call["type"] = d.pick(["function"], ["tool_call", 5])
    if d.keep(0.95):
        call["function"] = openai_function(d)
    if d.maybe(0.15):
        call["index"] = d.pick(GOOD_INDEXES, BAD_INDEXES)
    return call


def langchain_call(d: Draw) -> dict[Any, Any]:
    call: dict[Any, Any] = {}
    if d.keep():
        call["name"] = d.pick(GOOD_FUNCTION_NAMES, BAD_FUNCTION_NAMES)
    if d.keep():
        call["args"] = d.pick(GOOD_LC_ARGS, BAD_LC_ARGS)
    if d.keep():
        call["id"] = d.pick(GOOD_CALL_IDS, BAD_CALL_IDS)
    if d.maybe(0.3):
        call["type"] = d.pick(["tool_call"], ["function", None, 5])
    if d.maybe(0.15):
        call["extras"] = d.pick([{"k": 1}, None, "x"])
    if d.bad() and d.maybe(0.3):
        call[d.pick(["index", "foo", "error", 3])] = d.pick([0, "x", None])
    return call


def tool_calls(d: Draw) -> Any:
    """``tool_calls`` as a message dict carries it (OpenAI or LangChain shape)."""
    if d.bad() and d.maybe(0.2):
        return d.pick(WEIRD_CONTAINERS)
    calls: list[Any] = []
    for _ in range(d.rng.choice([0, 1, 1, 1, 2, 3])):
        calls.append(openai_call(d) if d.maybe(0.5) else langchain_call(d))
    return tuple(calls) if d.maybe(0.05) else calls


def raw_tool_calls(d: Draw) -> Any:
    """Raw OpenAI ``additional_kwargs.tool_calls`` (parsed leniently by AIMessage)."""
    if d.bad() and d.maybe(0.2):
        return d.pick(WEIRD_CONTAINERS)
    return [openai_call(d) for _ in range(d.rng.choice([1, 1, 2, 3]))]


def invalid_tool_calls(d: Draw) -> Any:
    if d.bad() and d.maybe(0.2):
        return d.pick(WEIRD_CONTAINERS)
    result: list[Any] = []
    for _ in range(d.rng.choice([0, 1, 2])):
        entry: dict[str, Any] = {}
        for key in ("name", "args", "id", "error"):
            if d.maybe(0.7):
                entry[key] = d.pick(["f", '{"a', None, ""], [5, [1]])
        if d.maybe(0.2):
            entry["type"] = d.pick(["invalid_tool_call"], ["x"])
        if d.bad() and d.maybe(0.3):
            entry[d.pick(["index", "extras", "foo"])] = 0
        result.append(entry)
    return result


def tool_call_chunks(d: Draw) -> Any:
    if d.bad() and d.maybe(0.2):
        return d.pick(WEIRD_CONTAINERS)
    result: list[Any] = []
    for _ in range(d.rng.choice([0, 1, 1, 2])):
        entry: dict[str, Any] = {}
        if d.maybe(0.8):
            entry["name"] = d.pick(["f", "", None], [5])
        if d.maybe(0.8):
            entry["args"] = d.pick(
                ['{"a": 1}', '{"city": "Pa', "", None, "[1]", "xx", '{"a": [1, 2'], [1]
            )
        if d.maybe(0.8):
            entry["id"] = d.pick(["c1", "c2", None, ""], [3])
        if d.maybe(0.8):
            entry["index"] = d.pick(GOOD_INDEXES, BAD_INDEXES)
        if d.maybe(0.2):
            entry["type"] = d.pick(["tool_call_chunk"], ["x"])
        if d.bad() and d.maybe(0.2):
            entry["extras"] = {}
        result.append(entry)
    return result


# --- other fields ------------------------------------------------------------------


def usage_metadata(d: Draw) -> Any:
    if d.maybe(0.05):
        return None
    if d.bad() and d.maybe(0.15):
        return d.pick(["x", [], 5, {}, True])
    usage: dict[str, Any] = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    for key in list(usage):
        if not d.keep(0.7):
            del usage[key]
        elif d.maybe(0.2):
            usage[key] = d.pick(
                ["1", 1.0, True, " 2 ", 0, -1, 10**20, 1e3],
                [
                    1.5,
                    None,
                    "x",
                    [1],
                    "1.5",
                    "1.0",
                    "+3",
                    "1_0",
                    "0x1",
                    "\u0663",
                    b"4",
                    "",
                    "1.",
                    "1.00",
                    "\x1c7",
                    "\xa07",
                    b"\xff",
                ],
            )
    if d.maybe(0.3):
        usage["input_token_details"] = d.pick(
            [{"audio": 1, "cache_read": "2"}, {"foo": "x"}, {}, {"cache_creation": 0}],
            [{"cache_creation": 1.5}, "no", {"audio": None}],
        )
    if d.maybe(0.2):
        usage["output_token_details"] = d.pick([{"reasoning": 4}, {}], [{"audio": "x"}, []])
    if d.maybe(0.15):
        usage[d.pick(["cost", "model"])] = d.pick([0.5, "x", None])
    return usage


_ADDITIONAL_PARTS: Final[list[tuple[Any, Gen]]] = [
    ("foo", lambda d: d.pick([2, "x", None])),
    ("example", lambda d: d.pick([True, False, 1, "x", None, 0])),
    ("tool_calls", raw_tool_calls),
    ("function_call", lambda d: {"name": "f", "arguments": "{}"}),
    ("response_metadata", lambda d: d.pick(GOOD_METADATA, BAD_METADATA)),
    ("artifact", lambda d: d.pick(ARTIFACTS)),
    ("status", lambda d: d.pick(GOOD_STATUSES, BAD_STATUSES)),
    ("__openai_role__", lambda d: d.pick(["developer", "x"])),
    ("refusal", lambda d: "no"),
    ("nested", lambda d: {"a": {"b": [1, {"c": None}]}}),
    ("type", lambda d: d.pick(GOOD_TYPES, BAD_TYPES)),
    ("content", lambda d: d.pick(GOOD_CONTENT, BAD_CONTENT)),
    ("usage_metadata", usage_metadata),
    ("additional_kwargs", lambda d: {"deeper": 1}),
    (7, lambda d: "int key"),
]


def additional_kwargs(d: Draw) -> Any:
    if d.bad() and d.maybe(0.25):
        return d.pick([None, [], [["a", 1]], [["a"]], "ab", "", 5, True, [("k", "v")], ["ab"]])
    result: dict[Any, Any] = {}
    for key, make in _ADDITIONAL_PARTS:
        if d.maybe(0.25 if key == "tool_calls" else 0.12):
            result[key] = make(d)
    return result


# --- whole messages ----------------------------------------------------------------


def _field_odds(kind: Any) -> dict[str, float]:
    ai = kind in ("ai", "assistant", "AIMessageChunk")
    tool = kind in ("tool", "ToolMessageChunk")
    return {
        "content": 0.95,
        "id": 0.45,
        "name": 0.9 if kind in ("function", "FunctionMessageChunk") else 0.25,
        "tool_call_id": 0.9 if tool else 0.05,
        "tool_calls": 0.45 if ai else 0.05,
        "additional_kwargs": 0.35,
        "response_metadata": 0.25,
        "status": 0.4 if tool else 0.04,
        "artifact": 0.3 if tool else 0.04,
        "usage_metadata": 0.3 if ai else 0.03,
        "invalid_tool_calls": 0.25 if ai else 0.03,
        "tool_call_chunks": 0.4 if kind == "AIMessageChunk" else 0.03,
        "chunk_position": 0.25 if kind in CHUNK_TYPES else 0.02,
        "example": 0.08,
        "content_blocks": 0.2 if kind in CHUNK_TYPES else 0.02,
    }


_FIELD_MAKERS: Final[dict[str, Gen]] = {
    "content": lambda d: d.pick(GOOD_CONTENT, BAD_CONTENT),
    "id": lambda d: d.pick(GOOD_IDS, BAD_IDS),
    "name": lambda d: d.pick(GOOD_NAMES, BAD_NAMES),
    "tool_call_id": lambda d: d.pick(GOOD_TOOL_CALL_IDS, BAD_TOOL_CALL_IDS),
    "tool_calls": tool_calls,
    "additional_kwargs": additional_kwargs,
    "response_metadata": lambda d: d.pick(GOOD_METADATA, BAD_METADATA),
    "status": lambda d: d.pick(GOOD_STATUSES, BAD_STATUSES),
    "artifact": lambda d: d.pick(ARTIFACTS),
    "usage_metadata": usage_metadata,
    "invalid_tool_calls": invalid_tool_calls,
    "tool_call_chunks": tool_call_chunks,
    "chunk_position": lambda d: d.pick(["last", None], ["first", 1]),
    "example": lambda d: d.pick([True, False, 1, "x"]),
    "content_blocks": lambda d: d.pick(GOOD_BLOCKS, BAD_BLOCKS),
}


def message_fields(d: Draw, kind: Any, faulty: str | None = None) -> dict[Any, Any]:
    """The fields of a message dict whose role or type is ``kind`` (or near it).

    A ``faulty`` field is always present and drawn with heavy noise, so that its own
    validation is reached even when every other field is clean.
    """
    fields: dict[Any, Any] = {}
    for key, odds in _field_odds(kind).items():
        if key == faulty:
            fields[key] = _FIELD_MAKERS[key](Draw(d.rng, 0.9))
        elif d.maybe(odds):
            fields[key] = _FIELD_MAKERS[key](d)
    while d.maybe(0.1):
        key = d.pick(EXTRA_KEYS[:7]) if not d.bad() else d.pick(EXTRA_KEYS)
        fields[key] = d.pick(EXTRA_VALUES)
    return fields


def role_dict(d: Draw) -> dict[Any, Any]:
    role = d.pick(GOOD_ROLES, BAD_ROLES)
    return {"role": role, **message_fields(d, role)}


def type_dict(d: Draw) -> dict[Any, Any]:
    kind = d.pick(GOOD_TYPES, BAD_TYPES)
    return {"type": kind, **message_fields(d, kind)}


def chunk_dict(d: Draw) -> dict[Any, Any]:
    """A flat chunk dict: our extension builds it as the chunk class's constructor would."""
    kind = "AIMessageChunk" if d.maybe(0.5) else d.pick(CHUNK_TYPES)
    return {"type": kind, **message_fields(d, kind)}


def single_fault(d: Draw) -> dict[Any, Any]:
    """A clean message dict (roles, types and chunks alike) with one noisy field."""
    faulty = d.rng.choice(list(_FIELD_MAKERS))
    clean = Draw(d.rng, 0.0)
    if d.maybe(0.4):
        kind = d.pick(CHUNK_TYPES[:5]) if d.maybe(0.3) else "AIMessageChunk"
        return {"type": kind, **message_fields(clean, kind, faulty)}
    key, kind = ("role", d.pick(GOOD_ROLES)) if d.maybe(0.5) else ("type", d.pick(GOOD_TYPES))
    return {key: kind, **message_fields(clean, kind, faulty)}


def role_and_type_dict(d: Draw) -> dict[Any, Any]:
    item = role_dict(d)
    item["type"] = d.pick([*GOOD_TYPES, *CHUNK_TYPES], BAD_TYPES)
    if d.maybe(0.5):  # type first, as a flat dump would have it
        item = {"type": item.pop("type"), **item}
    return item


def sequence(d: Draw) -> Any:
    role = d.pick(GOOD_ROLES, BAD_ROLES)
    length = 2 if not d.bad() else d.rng.choice([0, 1, 3, 2])
    parts = [role, d.pick(GOOD_CONTENT, BAD_CONTENT), "x"][:length]
    return tuple(parts) if d.maybe(0.5) else parts


_ENVELOPE_CLASSES: Final = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "SystemMessage": "system",
    "FunctionMessage": "function",
    "ToolMessage": "tool",
    "RemoveMessage": "remove",
    "HumanMessageChunk": "HumanMessageChunk",
    "AIMessageChunk": "AIMessageChunk",
    "SystemMessageChunk": "SystemMessageChunk",
    "FunctionMessageChunk": "FunctionMessageChunk",
    "ToolMessageChunk": "ToolMessageChunk",
    "ChatMessage": "chat",
    "ChatMessageChunk": "ChatMessageChunk",
    "Unknown": "human",
}


def lc_envelope(d: Draw) -> dict[Any, Any]:
    """A ``dumpd()`` envelope: mostly well formed, sometimes broken in one place."""
    cls = d.rng.choice(list(_ENVELOPE_CLASSES))
    lc_type = _ENVELOPE_CLASSES[cls]
    kwargs = message_fields(d, lc_type)
    if d.maybe(0.7):
        kwargs["type"] = lc_type
    if d.bad() and d.maybe(0.1):
        kwargs["role"] = d.pick(GOOD_ROLES, BAD_ROLES)
    envelope: dict[Any, Any] = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", cls],
        "kwargs": kwargs,
    }
    if d.bad():
        _break_envelope(d, envelope)
    return envelope


_GONE: Final[Any] = object()


def _break_envelope(d: Draw, envelope: dict[Any, Any]) -> None:
    key = d.rng.choice(["lc", "type", "id", "id_last", "kwargs", "content"])
    if key == "lc":
        envelope["lc"] = d.pick([2, "1", True, 1.0, None, _GONE])
    elif key == "type":
        envelope["type"] = d.pick(["secret", "human", None, _GONE])
    elif key == "id":
        envelope["id"] = d.pick([[], "AIMessage", None, ("AIMessage",), _GONE])
    elif key == "id_last":
        envelope["id"][-1] = d.pick([5, None, ["AIMessage"], {"a": 1}, "aimessage"])
    elif key == "kwargs":
        envelope["kwargs"] = d.pick([None, [], "x", [["content", "x"]], _GONE])
    else:
        envelope["content"] = d.pick(GOOD_CONTENT, BAD_CONTENT)
    for k in [k for k, v in envelope.items() if v is _GONE]:
        del envelope[k]


def data_envelope(d: Draw) -> dict[Any, Any]:
    """The ``message_to_dict`` shape, which ``convert_to_messages`` does not read."""
    kind = d.pick(["human", "ai", "system", "tool", "AIMessageChunk", "chat"])
    envelope: dict[Any, Any] = {"type": kind, "data": {"type": kind, **message_fields(d, kind)}}
    if d.maybe(0.3):
        envelope["content"] = d.pick(GOOD_CONTENT, BAD_CONTENT)
    return envelope


def scalar(d: Draw) -> Any:
    return d.pick([0, 5, -1, 1.5, None, True, False, {1, 2}, b"ab", b"abc", b"", range(2)])


def bare_string(d: Draw) -> str:
    return str(d.pick(["", "hello", "héllo ✓", '{"role": "user"}', "user"]))


def dict_without_role_or_type(d: Draw) -> dict[Any, Any]:
    return message_fields(d, "human")


FORMS: Final[list[tuple[str, Gen, int]]] = [
    ("string", bare_string, 3),
    ("sequence", sequence, 10),
    ("role_dict", role_dict, 30),
    ("type_dict", type_dict, 20),
    ("chunk_dict", chunk_dict, 8),
    ("single_fault", single_fault, 12),
    ("role_and_type", role_and_type_dict, 6),
    ("lc_envelope", lc_envelope, 14),
    ("data_envelope", data_envelope, 3),
    ("no_role", dict_without_role_or_type, 2),
    ("scalar", scalar, 2),
]
NOISE_LEVELS: Final = (0.0, 0.0, 0.0, 0.05, 0.2, 0.5, 0.9)


def corpus(seed: int, size: int) -> list[tuple[str, Any]]:
    """``size`` (form name, input) pairs, the same for the same seed."""
    rng = random.Random(seed)
    names = [name for name, _, _ in FORMS]
    weights = [weight for _, _, weight in FORMS]
    makers = {name: make for name, make, _ in FORMS}
    items: list[tuple[str, Any]] = []
    for _ in range(size):
        name = rng.choices(names, weights)[0]
        draw = Draw(rng, rng.choice(NOISE_LEVELS))
        items.append((name, makers[name](draw)))
    return items
