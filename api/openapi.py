"""The OpenAPI 3.1 document, served at ``/openapi.json``.

Bodies come from the msgspec Structs in :mod:`threadfold.api.schemas`; the message model (what
LangChain's ``model_dump()`` gives, per message type) is written out here, since
message-likes are validated by ``core``, not by a schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import UnionType
from typing import Annotated, Any, Final, Literal, Union, get_args, get_origin

import msgspec

from threadfold.api.schemas import PipelineOut
from threadfold.core import errors
from threadfold.core.keys import NAME_RULE
from threadfold.core.render import FORMATS
from threadfold.workers.feed.events import Change, Deleted, Snapshot
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads import routes

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


def _parameter(param: routes.Param) -> dict[str, Any]:
    """A path or query parameter of an operation, from its field: the schema of its
    type (null aside: a query string has none) and its Meta's constraints, described."""
    if param.where == "path":
        if param.name == "thread_id":
            return _THREAD_ID
        return {"name": param.name, "in": "path", "required": True,
                "schema": {"type": "string", "minLength": 1}}
    schema = _param_schema(param)
    text = schema.pop("description", "")
    found = {"name": param.name, "in": "query", "required": param.required, "schema": schema}
    if text:
        found["description"] = text
    return found


def _param_schema(param: routes.Param) -> dict[str, Any]:
    text = param.meta.description if param.meta is not None else None
    if get_origin(param.type) is Literal:
        return {"enum": list(get_args(param.type)), **({"description": text} if text else {})}
    union = get_args(param.type) if get_origin(param.type) in (Union, UnionType) else ()
    options = [o for o in (union or (param.type,)) if o is not type(None)]
    if any(getattr(o, "__origin__", None) is Sequence for o in options):
        # A list in a query string: message types, comma-separated.
        schema: dict[str, Any] = {"type": "string", "pattern": ops.TYPES_PATTERN}
        if param.meta is not None and param.meta.description:
            schema["description"] = param.meta.description
        return schema
    kind: Any = options[0] if len(options) == 1 else param.type
    hinted = kind if param.meta is None else Annotated[kind, param.meta]
    return dict(msgspec.json.schema(hinted))


def _operation(op: type[ops.Op[Any]]) -> dict[str, Any]:
    """An operation's entry in the document: its route's summary, parameters, body,
    success and the statuses it answers with a meaning of its own."""
    route = op.route
    assert route is not None
    entry: dict[str, Any] = {"summary": route.summary}
    parameters = [_parameter(p) for p in routes.params(op) if p.where != "body"]
    if parameters:
        entry["parameters"] = parameters
    if route.body is not None:
        entry["requestBody"] = {"required": True, **_json(route.body)}
    answer = route.answer if route.answer != "" else _result_name(op)
    success: dict[str, Any] = {"description": _SUCCESS.get(route.status, "OK")}
    if answer is not None:
        success |= _json(answer)
    responses: dict[str, Any] = {str(route.status): success, **_common_errors()}
    for status, text in route.refusals.items():
        responses[str(status)] = {"description": text, **_json("ErrorOut")}
    entry["responses"] = responses
    return entry


def _result_name(op: type[ops.Op[Any]]) -> str:
    assert op.result is not None
    return op.result.__name__


_SUCCESS: Final = {200: "OK", 201: "Created", 202: "Accepted", 204: "Done, no body"}


def _paths() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for op in ops.OPERATIONS:
        if op.route is not None:
            paths.setdefault(op.route.path, {})[op.route.method.lower()] = _operation(op)
    paths["/threads/{thread_id}/events"] = _events_path()
    return {**paths, **_watch_paths(), **_probe_paths()}


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
                    {"type": "string", "pattern": ops.VERSION_PATTERN},
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
    *(routes.body_type(op) for op in ops.OPERATIONS if op.route is not None and op.route.body),
    *(op.result for op in ops.OPERATIONS if op.result is not None),
    PipelineOut,
    Snapshot,
    Change,
    Deleted,
)


def document(auth: bool) -> dict[str, Any]:
    """The whole OpenAPI document."""
    _, components = msgspec.json.schema_components(_BODIES, ref_template=_REF)
    components |= _message_components() | _error_components()
    for name in ("State", "Context"):
        components[name]["properties"]["messages"]["items"] = {
            "anyOf": [{"$ref": "#/components/schemas/Message"}, {"type": "object"}]
        }
    for name in ("DeltaIn", "Delta"):
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
