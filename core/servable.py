"""What ingestion stores must render as OpenAI messages: the check, and its fast path.

LangChain accepts messages that its own OpenAI converter refuses:
``convert_to_messages`` builds ``{"type": "human", "content": [{"type": "text"}]}``,
and ``convert_to_openai_messages`` raises ``KeyError: 'text'`` on it. A service that
stored such a message would fail every later ``?format=openai`` read of the thread, so
ingestion refuses it, naming the block, and what the service accepts it can always
serve. (The LangChain form is always servable: its only failure, a dict key JSON cannot
carry, is refused by :func:`threadfold.core.codec.encode_messages`.) What was stored
before this check is served as a marker in its place (:mod:`threadfold.core.render`).

Rendering costs 2-5 us and most messages cannot fail it, so the check skips what
cannot fail: a message with string content, no tool calls and no role override; and of
a message with string content, the content. What is left runs the converter's own code,
so the check refuses exactly what a read would.
"""

from __future__ import annotations

from collections.abc import Sequence

from threadfold.core.codec import decode_messages
from threadfold.core.errors import InvalidMessage
from threadfold.core.messages import BaseMessage, RemoveMessage
from threadfold.core.openai import check_openai
from threadfold.core.openai_head import check_head

_REASON = "cannot be served with format=openai"


def surely_renders(message: BaseMessage) -> bool:
    """True when the OpenAI form of ``message`` cannot fail (False decides nothing).

    The converter can fail only on list content (a block it refuses), on a tool call
    whose arguments ``json.dumps`` refuses, on a system role override that is not a
    string, and on a remove (which is never stored). Other classes keep ``tool_calls``
    in ``extra``, which the converter does not read.
    """
    return (
        type(message.content) is str
        and not getattr(message, "tool_calls", None)
        and "__openai_role__" not in message.additional_kwargs
        and type(message) is not RemoveMessage
    )


def check_servable(messages: Sequence[BaseMessage], path: str = "messages") -> None:
    """Refuse the first message whose OpenAI form a read would fail to render.

    A remove is never stored (nor rendered), so it is not checked. The error is located
    at the block or field (``messages[2].content[0]``) and keeps LangChain's reason.
    """
    for i, message in enumerate(messages):
        if surely_renders(message) or type(message) is RemoveMessage:
            continue
        where = f"{path}[{i}]"
        try:
            _check(message, where)
        except InvalidMessage as exc:
            raise InvalidMessage(exc.path, f"{_REASON}: {exc.reason}", exc.lc_error) from None
        except Exception as exc:  # noqa: BLE001  # anything a read would raise is a refusal
            # Only a message object built by hand (taken as built, never validated) gets
            # here, e.g. a tool call without an id; a read would fail on it the same way.
            reason = f"{_REASON}: {type(exc).__name__}: {exc}"
            raise InvalidMessage(where, reason, type(exc).__name__) from None


def check_encoded(messages: Sequence[BaseMessage], payload: bytes, path: str) -> None:
    """:func:`check_servable` on a delta as a read will see it: decoded from ``payload``.

    msgpack turns a tuple or a set a Python caller passed into a list, which can change
    what the converter does with a block (a list cannot be hashed), so content blocks
    are checked as decoded. Whether a message surely renders is the same before and
    after the round trip, and so is the rest of it (its role, and its tool calls'
    arguments, where json.dumps takes a tuple and refuses a set as LangChain's own
    converter would on the message as given): the payload is decoded only when a
    message to check has list content.
    """
    blocks = heads = False
    for m in messages:  # one pass, no list: this runs for every delta ingested
        if type(m) is RemoveMessage or surely_renders(m):
            continue
        if type(m.content) is not str:
            blocks = True
            break
        heads = True
    if blocks:
        check_servable(decode_messages(payload), path)
    elif heads:
        check_servable(messages, path)


def renders(message: BaseMessage) -> bool:
    """Whether ``message`` has an OpenAI form (as a read of it renders it)."""
    if surely_renders(message):
        return True
    try:
        _check(message, "message")
    except Exception:  # noqa: BLE001  # whatever a read would raise on it
        return False
    return True


def _check(message: BaseMessage, path: str) -> None:
    if type(message.content) is str and type(message) is not RemoveMessage:
        check_head(message, path)  # string content is never refused: only the rest can be
    else:
        check_openai(message, path)
