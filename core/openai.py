"""Messages to OpenAI Chat Completions dicts, as LangChain's ``convert_to_openai_messages``.

:func:`to_openai` gives, for a list of messages, exactly what langchain-core 1.8.3 gives
for the same list: the same dicts, keys in the same order, the same refusals. The
content blocks of other providers (Anthropic, Bedrock Converse, VertexAI, LangChain's
own v0/v1 data blocks) become OpenAI blocks; Anthropic ``tool_use`` blocks become
``tool_calls`` and ``tool_result`` blocks become separate ``tool`` messages.

Where LangChain raises, :class:`InvalidMessage` is raised with the block's ``path``
(``messages[3].content[1]``), LangChain's own message as ``reason`` where it writes one,
and LangChain's exception class as ``lc_error``. LangChain also fails with bare
``KeyError``/``TypeError``/``AttributeError`` on malformed blocks (a ``source`` that is a
string, bytes that are not bytes); those are reproduced by running the same operations on
the block and relocating the error, rather than by re-deriving every condition.

This module walks a message's content blocks and handles the kinds that read or change
the message itself (``tool_use``, ``tool_result``); :mod:`threadfold.core.openai_head` builds the
keys besides ``content`` and :mod:`threadfold.core.openai_blocks` the translations that need only
the block.

Two things are left out on purpose: LangChain's ``logger.info`` and the ``UserWarning``
about a file without a filename (pure code here; the placeholder name is still set).

The result shares nested values (passed-through blocks, ``image_url`` objects) with the
frozen input messages, as LangChain's does: serialise it, do not edit it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from threadfold.core import fields
from threadfold.core.errors import InvalidMessage
from threadfold.core.messages import AIMessage, BaseMessage, ToolMessage
from threadfold.core.openai_blocks import (
    AUTO_FILENAME,
    Block,
    Refusal,
    b64,
    data_block,
    image_url,
    is_data_block,
    is_openai_audio,
    is_openai_file,
    of_type,
    of_type_or_key,
)
from threadfold.core.openai_head import function_call, message_head

_TEXT_FORMATS: Final = ("string", "block")
# A set, not a tuple: an unhashable ``type`` must fail here as it does in LangChain.
_REASONING_TYPES: Final = frozenset({"thinking", "reasoning"})


@dataclass(frozen=True, slots=True)
class _Options:
    text_format: str
    include_id: bool
    pass_through: bool


_DEFAULTS: Final = _Options("string", include_id=False, pass_through=True)


def to_openai(
    messages: Sequence[BaseMessage],
    *,
    text_format: str = "string",
    include_id: bool = False,
    pass_through_unknown_blocks: bool = True,
) -> list[dict[str, Any]]:
    """OpenAI message dicts for ``messages``, as ``convert_to_openai_messages`` gives them.

    ``text_format="string"`` collapses text-only content to one ``"\\n"``-joined string;
    ``"block"`` always gives a list of blocks. Raises :class:`InvalidMessage` for a bad
    ``text_format``, a ``RemoveMessage``, or a block LangChain refuses.
    """
    if text_format not in _TEXT_FORMATS:
        reason = f"Unrecognized text_format={text_format!r}, expected one of 'string' or 'block'."
        raise InvalidMessage("", reason)
    options = _Options(text_format, include_id, pass_through_unknown_blocks)
    result: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        result.extend(_Converter(message, options, path=where, label=where).run())
    return result


def check_openai(message: BaseMessage, path: str) -> None:
    """Raise the :class:`InvalidMessage` that :func:`to_openai` with its defaults (the
    API's ``?format=openai``) would raise for ``message``, located at ``path`` (which
    also stands for the message in LangChain's own error texts)."""
    _Converter(message, _DEFAULTS, path=path, label=path).run()


def message_to_openai(message: BaseMessage, path: str) -> list[dict[str, Any]]:
    """What :func:`to_openai` with its defaults gives for ``message`` (its own dict, then
    a tool message per ``tool_result`` block), or raises, located at ``path``: for a
    read that renders message by message (:mod:`threadfold.core.render`)."""
    return _Converter(message, _DEFAULTS, path=path, label=path).run()


def _describe(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing key {exc.args[0]!r}"
    return str(exc)


class _Converter:
    """One message to its OpenAI dict, followed by the tool messages of its tool_results.

    ``path`` locates the message for our errors; ``label`` is how LangChain names it in
    its own error texts, which differs inside a ``tool_result`` (LangChain converts the
    nested tool message on its own, as ``messages[0]``).
    """

    def __init__(self, message: BaseMessage, options: _Options, path: str, label: str) -> None:
        self.message = message
        self.options = options
        self.path = path
        self.label = label
        self.head: dict[str, Any] = {}
        self.blocks: list[Block] = []
        self.origins: list[int] = []  # the input block each output block came from
        self.tool_messages: list[dict[str, Any]] = []
        self.j = 0

    def run(self) -> list[dict[str, Any]]:
        self.head = message_head(self.message, self.options.include_id, self.path)
        content = self._content()
        self.head["content"] = content
        # A message that held only tool_results has nothing left to say itself.
        if not content and self.tool_messages:
            return self.tool_messages
        return [self.head, *self.tool_messages]

    # --- locations and refusals --------------------------------------------------

    def _at(self, j: int) -> str:
        return f"{self.path}.content[{j}]"

    @property
    def _where(self) -> str:
        return f"{self.label}.content[{self.j}]"

    def _unrecognized(self, detail: str, block: Block) -> Refusal:
        return Refusal(
            f"Unrecognized content block at {self._where} {detail}. Full content block:\n\n{block}"
        )

    def _require(self, holder: Any, keys: tuple[str, ...], lead: str, block: Block) -> None:
        if missing := [key for key in keys if key not in holder]:
            raise self._unrecognized(f"{lead} {missing}", block)

    # --- content -------------------------------------------------------------------

    def _content(self) -> str | list[Block]:
        content = self.message.content
        as_string = self.options.text_format == "string"
        if not content:
            return "" if as_string else []
        if isinstance(content, str):
            return content if as_string else [{"type": "text", "text": content}]
        if as_string and all(isinstance(b, str) or b.get("type") == "text" for b in content):
            return self._joined(content, range(len(content)))
        for j, block in enumerate(content):
            self.j = j
            self._convert(block)
        if as_string and self._all_text():
            return self._joined(self.blocks, self.origins)
        return self.blocks

    def _joined(self, blocks: list[Any], origins: Sequence[int]) -> str:
        # LangChain gathers every text before joining, so a missing "text" anywhere
        # wins over a non-str text earlier on.
        texts: list[Any] = []
        for block, j in zip(blocks, origins, strict=True):
            if not isinstance(block, str) and "text" not in block:
                raise InvalidMessage(self._at(j), "missing key 'text'", "KeyError")
            texts.append(block if isinstance(block, str) else block["text"])
        for k, text in enumerate(texts):
            if not isinstance(text, str):
                kind = type(text).__name__
                reason = f"sequence item {k}: expected str instance, {kind} found"
                raise InvalidMessage(self._at(origins[k]), reason, "TypeError")
        return "\n".join(texts)

    def _all_text(self) -> bool:
        for block, j in zip(self.blocks, self.origins, strict=True):
            if "type" not in block:  # a passed-through block may have none
                raise InvalidMessage(self._at(j), "missing key 'type'", "KeyError")
            if block["type"] != "text":
                return False
        return True

    def _emit(self, block: Block) -> None:
        self.blocks.append(block)
        self.origins.append(self.j)

    def _convert(self, block: Any) -> None:
        if isinstance(block, str):
            self._emit({"type": "text", "text": block})
            return
        try:
            _handler(block, self.options.pass_through)(self, block)
        except Refusal as exc:
            raise InvalidMessage(self._at(self.j), str(exc)) from exc
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidMessage(self._at(self.j), _describe(exc), type(exc).__name__) from exc

    # --- one method per block kind -----------------------------------------------

    def _text(self, block: Block) -> None:
        self._require(block, ("text",), "has 'type': 'text' but is missing expected key(s)", block)
        self._emit({"type": block["type"], "text": block["text"]})

    def _image_url_block(self, block: Block) -> None:
        lead = "has 'type': 'image_url' but is missing expected key(s)"
        self._require(block, ("image_url",), lead, block)
        self._emit({"type": "image_url", "image_url": block["image_url"]})

    def _data(self, block: Block) -> None:
        self._emit(data_block(block))

    def _image(self, block: Block) -> None:
        if source := block.get("source"):
            self._emit(self._anthropic_image(source, block))
        elif image := block.get("image"):
            self._emit(self._bedrock_image(image, block))
        else:
            detail = "has 'type': 'image' but does not have a 'source' or 'image' key"
            raise self._unrecognized(detail, block)

    def _anthropic_image(self, source: Any, block: Block) -> Block:
        lead = "has 'type': 'image' but 'source' is missing expected key(s)"
        self._require(source, ("media_type", "type", "data"), lead, block)
        return image_url(f"data:{source['media_type']};{source['type']},{source['data']}")

    def _bedrock_image(self, image: Any, block: Block) -> Block:
        lead = "has key 'image', but 'image' is missing expected key(s)"
        self._require(image, ("source", "format"), lead, block)
        data = b64(image["source"]["bytes"])
        return image_url(f"data:image/{image['format']};base64,{data}")

    def _openai_file(self, block: Block) -> None:
        if block["file"].get("filename") is None:
            block = {**block, "file": {**block["file"], "filename": AUTO_FILENAME}}
        self._emit(block)

    def _keep(self, block: Block) -> None:
        self._emit(block)

    def _declared_calls(self) -> Any:
        # LangChain reads ``message.tool_calls`` on whatever message holds the block:
        # only an AI message has the field, others have it only as an extra field.
        if isinstance(self.message, AIMessage):
            return self.message.tool_calls
        if "tool_calls" in self.message.extra:
            return self.message.extra["tool_calls"]
        cls = type(self.message).__name__
        raise AttributeError(f"'{cls}' object has no attribute 'tool_calls'")

    def _declares(self, call_id: Any) -> bool:
        return any(call["id"] == call_id for call in self._declared_calls())

    def _add_tool_call(self, call: dict[str, Any]) -> None:
        # A new "tool_calls" key lands after the keys set so far, as in LangChain.
        self.head.setdefault("tool_calls", []).append(call)

    def _tool_use(self, block: Block) -> None:
        lead = "has 'type': 'tool_use', but is missing expected key(s)"
        self._require(block, ("id", "name", "input"), lead, block)
        if not self._declares(block["id"]):
            arguments = json.dumps(block["input"], ensure_ascii=False)
            self._add_tool_call(function_call(block["id"], block["name"], arguments))

    def _responses_function_call(self, block: Block) -> None:
        if not self._declares(block.get("call_id")):
            # LangChain words this refusal as for tool_use; kept so texts match.
            lead = "has 'type': 'tool_use', but is missing expected key(s)"
            self._require(block, ("call_id", "name", "arguments"), lead, block)
            call = function_call(block.get("call_id"), block.get("name"), block.get("arguments"))
            self._add_tool_call(call)
        if self.options.pass_through:
            self._emit(block)

    def _tool_result(self, block: Block) -> None:
        lead = "has 'type': 'tool_result', but is missing expected key(s)"
        self._require(block, ("content", "tool_use_id"), lead, block)
        at = self._at(self.j)
        message = ToolMessage(
            content=fields.tool_content(block["content"]),
            tool_call_id=fields.tool_call_id(block["tool_use_id"], f"{at}.tool_use_id"),
        )
        # LangChain converts the result on its own, passing on text_format only.
        nested = _Options(self.options.text_format, include_id=False, pass_through=True)
        self.tool_messages.extend(_Converter(message, nested, at, "messages[0]").run())

    def _json(self, block: Block) -> None:
        if "json" not in block:
            raise self._unrecognized("has 'type': 'json' but does not have a 'json' key", block)
        self._emit({"type": "text", "text": json.dumps(block["json"])})

    def _guard_content(self, block: Block) -> None:
        if "guard_content" not in block or "text" not in block["guard_content"]:
            detail = (
                f"has 'type': 'guard_content' but does not have a "
                f"{self._where}['guard_content']['text'] key"
            )
            raise self._unrecognized(detail, block)
        text = block["guard_content"]["text"]
        if isinstance(text, dict):
            text = text["text"]
        self._emit({"type": "text", "text": text})

    def _media(self, block: Block) -> None:
        lead = "has 'type': 'media' but does not have key(s)"
        self._require(block, ("mime_type", "data"), lead, block)
        mime_type = block["mime_type"]
        if "image" not in mime_type:
            raise Refusal(
                "OpenAI messages can only support text and image data. "
                f"Received content block with media of type: {mime_type}"
            )
        self._emit(image_url(f"data:{mime_type};base64,{b64(block['data'])}"))

    def _refusal(self, block: Block) -> None:
        # An empty refusal (Anthropic sends them) has nothing to tell the model.
        if block.get("refusal"):
            self._emit({"type": "refusal", "refusal": block["refusal"]})

    def _other(self, block: Block) -> None:
        self._emit(block)

    def _unknown(self, block: Block) -> None:
        detail = "does not match OpenAI, Anthropic, Bedrock Converse, or VertexAI format"
        raise self._unrecognized(detail, block)


_Handler = Callable[[_Converter, Block], None]

# First match wins; the order is LangChain's and matters (a v1 image block is a data
# block before it is an Anthropic image; a typeless {"image": …} is Bedrock's).
_RULES: Final[tuple[tuple[Callable[[Block], bool], _Handler], ...]] = (
    (of_type("text"), _Converter._text),
    (of_type("image_url"), _Converter._image_url_block),
    (is_data_block, _Converter._data),
    (of_type_or_key("image"), _Converter._image),
    (is_openai_file, _Converter._openai_file),
    (is_openai_audio, _Converter._keep),
    (of_type("tool_use"), _Converter._tool_use),
    (of_type("function_call"), _Converter._responses_function_call),
    (of_type("tool_result"), _Converter._tool_result),
    (of_type_or_key("json"), _Converter._json),
    (of_type_or_key("guard_content"), _Converter._guard_content),
    (of_type("media"), _Converter._media),
    (of_type("refusal"), _Converter._refusal),
)


def _handler(block: Block, pass_through: bool) -> _Handler:
    for matches, handler in _RULES:
        if matches(block):
            return handler
    if block.get("type") in _REASONING_TYPES or pass_through:
        return _Converter._other
    return _Converter._unknown
