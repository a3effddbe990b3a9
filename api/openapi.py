"""The OpenAPI 3.1 document, served at ``/openapi.json``.

Bodies come from the msgspec Structs in :mod:`threadfold.api.schemas`; the message model (what
LangChain's ``model_dump()`` gives, per message type) is written out here, since
message-likes are validated by ``core``, not by a schema.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from threadfold.api.schemas import (
    BulkAccepted,
    BulkIn,
    CopyIn,
    CountIn,
    DeltaIn,
    PipelineOut,
    PruneIn,
    SearchIn,
    ThreadPatchIn,
)
from threadfold.core import errors
from threadfold.core.context import COUNTERS, MAX_TOKENS, MESSAGE_TYPES, STRATEGIES
from threadfold.core.keys import NAME_RULE
from threadfold.core.render import FORMATS
from threadfold.workers.feed.events import Change, Deleted, Snapshot
from threadfold.workers.threads.results import (
    Appended,
    Context,
    Copied,
    Pruned,
    Searched,
    State,
    Status,
    ThreadCount,
    ThreadList,
)

_STR_OR_NULL: Final = {"anyOf": [{"type": "string"}, {"type": "null"}]}
_COMMON: Final[dict[str, Any]] = {
    "content": {
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "object"}]}},
        ]
    },
    "additional_kwargs": {"type": "object"},
    "response_metadata": {"type": "object"},
    "name": _STR_OR_NULL,
    "id": _STR_OR_NULL,
}
_OWN: Final[dict[str, dict[str, Any]]] = {
    "ai": {
        "tool_calls": {"type": "array", "items": {"$ref": "#/components/schemas/ToolCall"}},
        "invalid_tool_calls": {"type": "array", "items": {"type": "object"}},
        "usage_metadata": {"anyOf": [{"type": "object"}, {"type": "null"}]},
    },
    "tool": {
        "tool_call_id": {"type": "string"},
        "artifact": {},
        "status": {"enum": ["success", "error"]},
    },
    "chat": {"role": {"type": "string"}},
}
_TYPES: Final = {
    "human": "HumanMessage",
    "ai": "AIMessage",
    "system": "SystemMessage",
    "tool": "ToolMessage",
    "function": "FunctionMessage",
    "chat": "ChatMessage",
    "AIMessageChunk": "AIMessageChunk",
    "HumanMessageChunk": "HumanMessageChunk",
    "SystemMessageChunk": "SystemMessageChunk",
    "ToolMessageChunk": "ToolMessageChunk",
    "FunctionMessageChunk": "FunctionMessageChunk",
    "ChatMessageChunk": "ChatMessageChunk",
}


def _message_schema(type_name: str) -> dict[str, Any]:
    base = (
        type_name.removesuffix("MessageChunk").lower() if type_name.endswith("Chunk") else type_name
    )
    own = dict(_OWN.get(base, {}))
    if type_name == "AIMessageChunk":
        own |= {
            "tool_call_chunks": {"type": "array", "items": {"type": "object"}},
            "chunk_position": {"anyOf": [{"const": "last"}, {"type": "null"}]},
        }
    return {
        "type": "object",
        "description": f"LangChain's {_TYPES[type_name]} in its flat model_dump() form; "
        "extra fields are kept.",
        "properties": {"type": {"const": type_name}, **_COMMON, **own},
        "required": ["type", "content"],
        "additionalProperties": True,
    }


def _message_components() -> dict[str, Any]:
    components = {name: _message_schema(type_name) for type_name, name in _TYPES.items()}
    components["ToolCall"] = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "args": {"type": "object"},
            "id": _STR_OR_NULL,
            "type": {"const": "tool_call"},
        },
        "required": ["name", "args", "id"],
    }
    components["Message"] = {
        "oneOf": [{"$ref": f"#/components/schemas/{name}"} for name in _TYPES.values()],
        "discriminator": {"propertyName": "type"},
    }
    components["MessageLike"] = {
        "description": "Anything LangChain's convert_to_messages accepts: an OpenAI role dict "
        "({role, content, tool_calls...}), a flat {type, content, id...} dict (a chunk class "
        "name as type builds that chunk), a [role, content] pair, a bare string (a user "
        "message), an lc constructor envelope, or {type: 'remove', id, content: ''}.",
        "anyOf": [
            {"type": "object"},
            {"type": "string"},
            {"type": "array", "minItems": 2, "maxItems": 2},
        ],
    }
    return components


_THREAD_ID: Final = {
    "name": "thread_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9._:@-]{1,128}$"},
    "description": f"Thread id: {NAME_RULE}.",
}
#: Statuses a route names itself, with what they mean there (409 and 410: time travel
#: and min_version on the state read), or that are not a refusal (405 is Starlette's
#: routing; 500 is a bug, never answered on purpose). Every other status of the error
#: tree can answer any route.
_OWN_STATUSES: Final = frozenset({405, 409, 410, 500})


def _first_line(cls: type[errors.RequestError]) -> str:
    doc = (cls.__doc__ or cls.__name__).strip()
    return " ".join(doc.split("\n\n")[0].split()).replace("``", "")


def _common_errors() -> dict[str, Any]:
    """The refusals any route may answer, each status described by its classes (their
    codes and what their docstrings say), from the error tree itself."""
    by_status: dict[int, list[type[errors.RequestError]]] = {}
    for cls in errors.classes():
        if cls.status_code is not None and cls.status_code not in _OWN_STATUSES:
            by_status.setdefault(cls.status_code, []).append(cls)
    return {
        str(status): {
            "description": "; ".join(f"{c.error_code}: {_first_line(c)}" for c in found),
            **_json("ErrorOut"),
        }
        for status, found in sorted(by_status.items())
    }


def _error_components() -> dict[str, Any]:
    """``ErrorOut``: the API's one error body, every key the tree's classes may put in
    it (their ``detail_keys``) beside the ones every error has."""
    properties: dict[str, Any] = {
        "status": {"type": "integer"},
        "code": {"type": "string"},  # the tree's codes, and http_error for a routing one
        "message": {"type": "string"},
        "field": _STR_OR_NULL,
        "pointer": _STR_OR_NULL,
    }
    for cls in errors.classes():
        for key, text in cls.detail_keys.items():
            properties.setdefault(key, {"description": text})
    detail = {"type": "object", "required": ["status", "code", "message"],
              "properties": properties}
    return {
        "ErrorDetail": detail,
        "ErrorOut": {"type": "object", "required": ["error"],
                     "properties": {"error": {"$ref": "#/components/schemas/ErrorDetail"}}},
    }


def _json(ref: str) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


def _query(name: str, schema: dict[str, Any], text: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": text}


# A stream id: ASCII digits (each part is also at most 2**64-1, which a pattern cannot say).
_VERSION_PATTERN: Final = "^[0-9]{1,20}-[0-9]{1,20}$"
_STATE_QUERY: Final = [
    _query(
        "format",
        {"enum": list(FORMATS)},
        "langchain (flat model_dump form, default) "
        "or openai (what convert_to_openai_messages gives).",
    ),
    _query(
        "min_version",
        {"type": "string", "pattern": _VERSION_PATTERN},
        "Wait until the thread's version reaches this one (read-your-writes).",
    ),
    _query(
        "at_version",
        {"type": "string", "pattern": _VERSION_PATTERN},
        "Time travel: the exact state as of this version (the version answered is the "
        "last entry at or before it). 410 before the live version once retention trimmed "
        "the log; 404 before the thread's first version.",
    ),
    _query("wait", {"type": "number", "minimum": 0}, "Longest wait for min_version, seconds."),
    _query("limit", {"type": "integer", "minimum": 0}, "Page size (default: all messages)."),
    _query("before", {"type": "string", "minLength": 1}, "Only messages before this message id."),
    _query("after", {"type": "string", "minLength": 1}, "Only messages after this message id."),
]


_TYPES_PATTERN: Final = "^(" + "|".join(MESSAGE_TYPES) + ")(,(" + "|".join(MESSAGE_TYPES) + "))*$"
_CONTEXT_QUERY: Final = [
    {
        "name": "max_tokens",
        "in": "query",
        "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_TOKENS},
        "description": "The window's budget, in tokens of the counter.",
    },
    _query(
        "strategy",
        {"enum": list(STRATEGIES)},
        "last (default: the newest messages that fit) or first (the oldest), as "
        "trim_messages' strategy.",
    ),
    _query(
        "include_system",
        {"enum": ["true", "false"]},
        "Keep the thread's first message when it is a system message (strategy last only; "
        "kept even when it alone is past the budget, as LangChain keeps it).",
    ),
    _query(
        "start_on",
        {"type": "string", "pattern": _TYPES_PATTERN},
        "Message types (comma-separated) the window's first message other than the system "
        "one must be of (strategy last only).",
    ),
    _query(
        "end_on",
        {"type": "string", "pattern": _TYPES_PATTERN},
        "Message types (comma-separated) the window's last message must be of.",
    ),
    _query(
        "counter",
        {"enum": list(COUNTERS)},
        "The token counter: approximate (default) is LangChain's count_tokens_approximately.",
    ),
    *(q for q in _STATE_QUERY if q["name"] in ("format", "min_version", "at_version", "wait")),
]


def _paths() -> dict[str, Any]:
    # In parts only to keep each function short; the document's order is theirs.
    return {
        **_write_paths(),
        **_thread_paths(),
        **_lifecycle_paths(),
        **_watch_paths(),
        **_probe_paths(),
    }


def _write_paths() -> dict[str, Any]:
    common = _common_errors()
    return {
        "/threads/{thread_id}/deltas": {
            "post": {
                "summary": "Append one delta (a list of message-likes) to a thread",
                "parameters": [_THREAD_ID],
                "requestBody": {"required": True, **_json("DeltaIn")},
                "responses": {"202": {"description": "Accepted", **_json("Appended")}, **common},
            }
        },
        "/deltas": {
            "post": {
                "summary": "Append many deltas to many threads: all validated, then all appended",
                "requestBody": {"required": True, **_json("BulkIn")},
                "responses": {
                    "202": {"description": "Accepted", **_json("BulkAccepted")},
                    **common,
                },
            }
        },
    }


def _thread_paths() -> dict[str, Any]:
    common = _common_errors()
    return {
        "/threads/{thread_id}/state": {
            "get": {
                "summary": "The merged messages of a thread and their version",
                "parameters": [_THREAD_ID, *_STATE_QUERY],
                "responses": {
                    "200": {"description": "State", **_json("State")},
                    "409": {
                        "description": "min_version not reached in time (version_not_reached), "
                        "or at_version reaches a log entry that cannot be decoded or folded "
                        "(poison_entry, naming it in entry)",
                        **_json("ErrorOut"),
                    },
                    "410": {
                        "description": "at_version precedes the live version and retention "
                        "trimmed the log (gone; oldest_version is the oldest served)",
                        **_json("ErrorOut"),
                    },
                    **common,
                },
            }
        },
        "/threads/{thread_id}/context": _context_path(),
        "/threads/{thread_id}/status": {
            "get": {
                "summary": "Version, backlog, times, quarantine, metadata, TTL and expiry",
                "parameters": [_THREAD_ID],
                "responses": {"200": {"description": "Status", **_json("Status")}, **common},
            }
        },
        "/threads/{thread_id}/events": _events_path(),
        "/threads/{thread_id}": {
            "delete": _delete_path(),
            "patch": _patch_path(),  # with search, copy and prune: _lifecycle_paths
        },
    }


def _context_path() -> dict[str, Any]:
    common = _common_errors()
    return {
        "get": {
            "summary": "The thread's messages a model can take: trimmed to max_tokens as "
            "LangChain's trim_messages trims, tool calls and their answers kept together",
            "parameters": [_THREAD_ID, *_CONTEXT_QUERY],
            "responses": {
                "200": {"description": "Context", **_json("Context")},
                "409": {
                    "description": "as on GET state (version_not_reached, poison_entry)",
                    **_json("ErrorOut"),
                },
                "410": {"description": "as on GET state (gone)", **_json("ErrorOut")},
                **common,
            },
        }
    }


def _delete_path() -> dict[str, Any]:
    return {
        "summary": "Remove a thread: every key of it and its place in every index",
        "parameters": [_THREAD_ID],
        "responses": {"204": {"description": "Deleted"}, **_common_errors()},
    }


def _patch_path() -> dict[str, Any]:
    return {
        "summary": "Change a thread's metadata (merged; null deletes a key), its own TTL "
        "(null: the deployment's) and its pin, together or not at all",
        "parameters": [_THREAD_ID],
        "requestBody": {"required": True, **_json("ThreadPatchIn")},
        "responses": {"200": {"description": "Its status after", **_json("Status")},
                      **_common_errors()},
    }


def _post(summary: str, body: str, status: str, answer: str, **more: Any) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "requestBody": {"required": True, **_json(body)},
            "responses": {status: {"description": answer, **_json(answer)}, **_common_errors()},
            **more,
        }
    }


def _copy_path() -> dict[str, Any]:
    copy = _post(
        "A new thread whose state is exactly this one's at at_version (default: now), with "
        "its metadata (changes laid over it); 409 when `to` exists, 410/409 as time travel",
        "CopyIn",
        "201",
        "Copied",
        parameters=[_THREAD_ID],
    )
    copy["post"]["responses"]["409"] = {
        "description": "`to` exists (conflict), or at_version reaches an entry that cannot "
        "be folded (poison_entry)",
        **_json("ErrorOut"),
    }
    copy["post"]["responses"]["410"] = {
        "description": "at_version precedes what retention kept (gone)",
        **_json("ErrorOut"),
    }
    return copy


def _lifecycle_paths() -> dict[str, Any]:
    """Search, count, copy and prune (docs/lifecycle.md)."""
    return {
        "/threads/search": _post(
            "The tenant's threads holding every given metadata value (and in status), latest "
            "first by sort; a page of limit with a cursor for the next",
            "SearchIn",
            "200",
            "Searched",
        ),
        "/threads/count": _post(
            "How many threads a search would find", "CountIn", "200", "ThreadCount"
        ),
        "/threads/{thread_id}/copy": _copy_path(),
        "/threads/prune": _post(
            "Remove the tenant's threads by id prefix, metadata and idle age (never a pinned "
            "one); dry_run counts them",
            "PruneIn",
            "200",
            "Pruned",
        ),
    }


def _events_path() -> dict[str, Any]:
    """GET /threads/{thread_id}/events: Server-Sent Events (docs/feed.md has the wire)."""
    return {
        "get": {
            "summary": "The thread's changes as Server-Sent Events: a snapshot (unless "
            "resuming), then one change per committed version (id: the version), "
            "heartbeat comments, an error event before the server ends a stream",
            "parameters": [
                _THREAD_ID,
                _query(
                    "format",
                    {"enum": list(FORMATS)},
                    "The messages' form, as on GET state.",
                ),
                _query(
                    "after",
                    {"type": "string", "pattern": _VERSION_PATTERN},
                    "Resume after this version (as the Last-Event-ID header; both given "
                    "and different: 400): every change after it, or a snapshot with "
                    "reason resume_gap when the feed no longer reaches back.",
                ),
            ],
            "responses": {
                "200": {
                    "description": "text/event-stream: event snapshot (data: Snapshot), "
                    "event change (data: Change), event deleted (data: Deleted: the thread "
                    "was deleted, expired or pruned; id 0-0), event error ({error: {code, "
                    "message}}: too_slow, shutting_down)",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}},
                },
                **_common_errors(),
                "503": {
                    "description": "Redis unreachable (unavailable), or this API process "
                    "serves its cap of subscribers (too_many_subscribers); retry after "
                    "Retry-After",
                    **_json("ErrorOut"),
                },
            },
        }
    }


def _watch_paths() -> dict[str, Any]:
    """What the page at /ui reads besides a thread's state: threads, the pipeline."""
    common = _common_errors()
    return {
        "/threads": {
            "get": {
                "summary": "The tenant's threads, most recently active first, with their "
                "version, messages, backlog, lag and quarantine",
                "parameters": [
                    _query(
                        "limit",
                        {"type": "integer", "minimum": 0, "maximum": 500},
                        "Most threads listed (default 50).",
                    )
                ],
                "responses": {"200": {"description": "Threads", **_json("ThreadList")}, **common},
            }
        },
        "/pipeline": {
            "get": {
                "summary": "Fleet-wide pipeline totals (ingested, applied, backlog, lag "
                "histogram) as JSON; rates come from two samples",
                "responses": {
                    "200": {"description": "Pipeline totals", **_json("PipelineOut")},
                    **common,
                },
            }
        },
    }


def _probe_paths() -> dict[str, Any]:
    common = _common_errors()
    return {
        "/healthz": {
            "get": {
                "summary": "The process is up",
                "security": [],  # the probes need no key
                "responses": {"200": {"description": "Up"}},
            }
        },
        "/readyz": {
            "get": {
                "summary": "Redis and the broker are reachable",
                "security": [],
                "responses": {"200": {"description": "Ready"}, **common},
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics of the API and the workers (a key, as a "
                "bearer token, when keys are set)",
                "responses": {"200": {"description": "text/plain exposition"}, **common},
            }
        },
    }


_REF: Final = "#/components/schemas/{name}"
#: The bodies the document describes (their components; others are referenced from them).
_BODIES: Final = (
    DeltaIn,
    BulkIn,
    Appended,
    BulkAccepted,
    State,
    Context,
    Status,
    ThreadList,
    PipelineOut,
    Snapshot,
    Change,
    Deleted,
    ThreadPatchIn,
    SearchIn,
    CountIn,
    CopyIn,
    PruneIn,
    Searched,
    ThreadCount,
    Copied,
    Pruned,
)


def document(auth: bool) -> dict[str, Any]:
    """The whole OpenAPI document."""
    _, components = msgspec.json.schema_components(_BODIES, ref_template=_REF)
    components |= _message_components() | _error_components()
    for name in ("State", "Context"):
        components[name]["properties"]["messages"]["items"] = {
            "anyOf": [{"$ref": "#/components/schemas/Message"}, {"type": "object"}]
        }
    for name in ("DeltaIn", "BulkItem"):
        components[name]["properties"]["messages"]["items"] = {
            "$ref": "#/components/schemas/MessageLike"
        }
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "threadfold",
            "version": "0.1.0",
            "description": "Batching-invariant reducer for conversation state. Versions "
            "are Redis stream ids '<ms>-<seq>', compared as integer pairs.",
        },
        "paths": _paths(),
        "components": {"schemas": components},
    }
    if auth:
        doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearer": []}]
    return doc
