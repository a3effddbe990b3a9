"""``threadfold.core.openai.to_openai`` against LangChain's ``convert_to_openai_messages``.

A table of readable cases first (the spec's §5 example among them), then a differential
run over seeded random message lists compared with the real function, byte for byte
(``repr`` keeps key order and int/float/bool distinctions).
"""

from __future__ import annotations

import json
import random
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import langchain_core.messages as lc
import pytest
from langchain_core.messages import convert_to_openai_messages

from threadfold.core.errors import InvalidMessage
from threadfold.core.messages import (
    CLASS_OF,
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from threadfold.core.openai import to_openai

# --- the spec's example (langchain-messages.md §5) ------------------------------------

SPEC_INPUT: list[BaseMessage] = [
    SystemMessage(content="sys"),
    SystemMessage(content=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
    SystemMessage(content="dev", additional_kwargs={"__openai_role__": "developer"}),
    HumanMessage(content="hi", name="bob"),
    HumanMessage(
        content=[
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        ]
    ),
    AIMessage(
        content="",
        tool_calls=[
            {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}
        ],
    ),
    ToolMessage(content="sunny", tool_call_id="call_1", name="get_weather"),
    AIMessage(content="refuse", additional_kwargs={"refusal": "no"}),
    FunctionMessage(content="r", name="f"),
    ChatMessage(content="c", role="critic"),
]

SPEC_OUTPUT = """[{"role":"system","content":"sys"},
 {"role":"system","content":"a\\nb"},
 {"role":"developer","content":"dev"},
 {"role":"user","name":"bob","content":"hi"},
 {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},
 {"role":"assistant","tool_calls":[{"type":"function","id":"call_1","function":{"name":"get_weather","arguments":"{\\"city\\": \\"Paris\\"}"}}],"content":""},
 {"role":"tool","name":"get_weather","tool_call_id":"call_1","content":"sunny"},
 {"role":"assistant","refusal":"no","content":"refuse"},
 {"role":"function","name":"f","content":"r"},
 {"role":"critic","content":"c"}]"""  # noqa: E501


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_the_spec_example_gives_the_spec_output_with_keys_in_order() -> None:
    expected = "".join(line.strip() for line in SPEC_OUTPUT.splitlines())
    assert _compact(to_openai(SPEC_INPUT)) == expected


# --- a table of single conversions --------------------------------------------------

PNG = {"type": "base64", "media_type": "image/png", "data": "iVBOR"}

CASES: list[tuple[str, list[BaseMessage], dict[str, Any], list[dict[str, Any]]]] = [
    (
        "an Anthropic image becomes a data URL and loses cache_control",
        [HumanMessage(content=[{"type": "image", "source": PNG, "cache_control": {"x": 1}}])],
        {},
        [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}
                ],
            }
        ],
    ),
    (
        "a tool_use block becomes a tool call and leaves the content",
        [
            AIMessage(
                content=[
                    {"type": "text", "text": "let me look"},
                    {"type": "tool_use", "id": "tu_1", "name": "search", "input": {"q": "café"}},
                ]
            )
        ],
        {},
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "type": "function",
                        "id": "tu_1",
                        "function": {"name": "search", "arguments": '{"q": "café"}'},
                    }
                ],
                "content": "let me look",
            }
        ],
    ),
    (
        "a tool_use block already among the tool calls is not added twice",
        [
            AIMessage(
                content=[{"type": "tool_use", "id": "tu_1", "name": "s", "input": {}}],
                tool_calls=[{"name": "s", "args": {}, "id": "tu_1", "type": "tool_call"}],
            )
        ],
        {},
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {"type": "function", "id": "tu_1", "function": {"name": "s", "arguments": "{}"}}
                ],
                "content": "",
            }
        ],
    ),
    (
        "tool_result blocks become tool messages and replace an emptied message",
        [
            HumanMessage(
                content=[
                    {"type": "tool_result", "tool_use_id": "tu_1", "content": "42"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu_2",
                        "is_error": True,
                        "content": [{"type": "text", "text": "boom"}],
                    },
                ]
            )
        ],
        {},
        [
            {"role": "tool", "tool_call_id": "tu_1", "content": "42"},
            {"role": "tool", "tool_call_id": "tu_2", "content": "boom"},
        ],
    ),
    (
        "a tool_result next to text follows its message",
        [
            HumanMessage(
                content=[
                    {"type": "tool_result", "tool_use_id": 7, "content": None},
                    {"type": "text", "text": "and then?"},
                ]
            )
        ],
        {},
        [
            {"role": "user", "content": "and then?"},
            {"role": "tool", "tool_call_id": "7", "content": "None"},
        ],
    ),
    (
        "block mode keeps strings and text lists as blocks",
        [
            HumanMessage(content="hi"),
            HumanMessage(content=["a", {"type": "text", "text": "b"}]),
            AIMessage(content=""),
        ],
        {"text_format": "block"},
        [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {"role": "assistant", "content": []},
        ],
    ),
    (
        "include_id adds the id just before the content, and only when set",
        [
            ToolMessage(content="ok", tool_call_id="c", id="m1", status="error", artifact=[1]),
            HumanMessage(content="x", id=""),
        ],
        {"include_id": True},
        [
            {"role": "tool", "tool_call_id": "c", "id": "m1", "content": "ok"},
            {"role": "user", "content": "x"},
        ],
    ),
    (
        "v1 data blocks become OpenAI blocks and files get a placeholder name",
        [
            HumanMessage(
                content=[
                    {"type": "image", "base64": "AAA", "mime_type": "image/jpeg"},
                    {"type": "audio", "base64": "UklG", "mime_type": "audio/wav"},
                    {"type": "file", "file_id": "file-1"},
                    {
                        "type": "file",
                        "base64": "JVBE",
                        "mime_type": "application/pdf",
                        "extras": {"filename": "a.pdf"},
                    },
                ]
            )
        ],
        {},
        [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAA"}},
                    {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
                    {"type": "file", "file": {"file_id": "file-1", "filename": "LC_AUTOGENERATED"}},
                    {
                        "type": "file",
                        "file": {
                            "file_data": "data:application/pdf;base64,JVBE",
                            "filename": "a.pdf",
                        },
                    },
                ],
            }
        ],
    ),
    (
        "Bedrock and Vertex images become base64 data URLs",
        [
            HumanMessage(
                content=[
                    {"image": {"format": "png", "source": {"bytes": b"\x89P"}}},
                    {"type": "media", "mime_type": "image/gif", "data": b"GIF"},
                ]
            )
        ],
        {},
        [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVA="}},
                    {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lG"}},
                ],
            }
        ],
    ),
    (
        "json becomes text, refusals stay and reasoning passes through",
        [
            AIMessage(
                content=[
                    {"json": {"ok": "é"}},
                    {"type": "refusal", "refusal": "no"},
                    {"type": "refusal"},
                    {"type": "thinking", "thinking": "hmm"},
                ]
            )
        ],
        {"pass_through_unknown_blocks": False},
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": '{"ok": "\\u00e9"}'},
                    {"type": "refusal", "refusal": "no"},
                    {"type": "thinking", "thinking": "hmm"},
                ],
            }
        ],
    ),
    (
        "tool calls found in blocks come after the other keys",
        [
            AIMessage(
                content=[{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}],
                additional_kwargs={"refusal": "r"},
            )
        ],
        {},
        [
            {
                "role": "assistant",
                "refusal": "r",
                "tool_calls": [
                    {"type": "function", "id": "c", "function": {"name": "f", "arguments": "{}"}}
                ],
                "content": [
                    {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}
                ],
            }
        ],
    ),
]


@pytest.mark.parametrize(
    ("messages", "options", "expected"),
    [pytest.param(m, o, e, id=name) for name, m, o, e in CASES],
)
def test_each_case_converts_as_langchain_does(
    messages: list[BaseMessage], options: dict[str, Any], expected: list[dict[str, Any]]
) -> None:
    result = to_openai(messages, **options)
    assert _compact(result) == _compact(expected)


def test_an_unknown_block_is_refused_with_its_location_when_pass_through_is_off() -> None:
    block = {"type": "mystery", "x": 1}
    messages = [HumanMessage(content="ok"), HumanMessage(content=["a", block])]
    with pytest.raises(InvalidMessage) as caught:
        to_openai(messages, pass_through_unknown_blocks=False)
    assert caught.value.path == "messages[1].content[1]"
    assert caught.value.lc_error == "ValueError"
    assert caught.value.reason == (
        "Unrecognized content block at messages[1].content[1] does not match OpenAI, "
        f"Anthropic, Bedrock Converse, or VertexAI format. Full content block:\n\n{block}"
    )


def test_an_unknown_block_passes_through_by_default() -> None:
    block = {"type": "mystery", "x": 1}
    assert to_openai([HumanMessage(content=[block])]) == [{"role": "user", "content": [block]}]


def test_a_remove_message_is_refused_as_langchain_refuses_it() -> None:
    with pytest.raises(InvalidMessage) as caught:
        to_openai([HumanMessage(content="x"), RemoveMessage(content="", id="m")])
    assert caught.value.path == "messages[1]"
    assert caught.value.reason == (
        "Unknown BaseMessage type <class 'langchain_core.messages.modifier.RemoveMessage'>."
    )


def test_an_unknown_text_format_is_refused_before_anything_else() -> None:
    with pytest.raises(InvalidMessage) as caught:
        to_openai([RemoveMessage(content="", id="m")], text_format="md")
    assert str(caught.value) == (
        "Unrecognized text_format='md', expected one of 'string' or 'block'."
    )


def test_an_error_inside_a_tool_result_is_located_under_its_block() -> None:
    nested = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text"}, 1]}
    with pytest.raises(InvalidMessage) as caught:
        to_openai([HumanMessage(content=[nested])])
    assert caught.value.path == "messages[0].content[0].content[0]"
    assert caught.value.lc_error == "KeyError"


def test_a_tool_use_block_outside_an_ai_message_fails_as_in_langchain() -> None:
    block = {"type": "tool_use", "id": "t", "name": "n", "input": {}}
    with pytest.raises(InvalidMessage) as caught:
        to_openai([HumanMessage(content=["a", block])])
    assert caught.value.path == "messages[0].content[1]"
    assert caught.value.lc_error == "AttributeError"
    assert caught.value.reason == "'HumanMessage' object has no attribute 'tool_calls'"


# --- differential: seeded random message lists ----------------------------------------

Gen = Callable[[random.Random, int], Any]
TEXTS = ["hi", "", "café ü 日本", "two\nlines", "x" * 3]
BROKEN = 0.06  # how often a generator picks one of the blocks LangChain refuses


def _maybe(rng: random.Random, p: float) -> bool:
    return rng.random() < p


def _pick(rng: random.Random, good: list[Any], bad: list[Any]) -> Any:
    return rng.choice(bad if bad and _maybe(rng, BROKEN) else good)


def _text(rng: random.Random, depth: int) -> Any:
    block: dict[str, Any] = {"type": "text", "text": rng.choice(TEXTS)}
    if _maybe(rng, 0.3):
        block[rng.choice(["cache_control", "annotations", "id"])] = rng.choice([{"a": 1}, [], "i"])
    if _maybe(rng, BROKEN / 3):
        del block["text"]
    elif _maybe(rng, BROKEN / 3):
        block["text"] = rng.choice([5, None, ["x"]])
    return block


def _string(rng: random.Random, depth: int) -> Any:
    return rng.choice(TEXTS)


def _image_url(rng: random.Random, depth: int) -> Any:
    return _pick(
        rng,
        [
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
            {"type": "image_url", "image_url": "https://x/bare"},
        ],
        [{"type": "image_url", "url": "https://x"}],
    )


def _data_image(rng: random.Random, depth: int) -> Any:
    return _pick(
        rng,
        [
            {"type": "image", "url": "https://x/i.png", "id": "b1"},
            {"type": "image", "base64": "AAA", "mime_type": "image/png", "extras": {"k": 1}},
            {"type": "image", "source_type": "url", "url": "https://x/v0.png"},
            {"type": "image", "source_type": "base64", "data": "BBB", "mime_type": "image/gif"},
        ],
        [
            {"type": "image", "base64": "AAA"},
            {"type": "image", "file_id": "f1"},
            {"type": "image", "source_type": "id", "id": "f2"},
            {"type": "image", "source_type": "base64", "file_id": "f3", "mime_type": "image/png"},
            {"type": "image", "source_type": "base64", "mime_type": "image/png"},
            {"type": "file", "source_type": "id", "name": "no id"},
        ],
    )


def _data_audio(rng: random.Random, depth: int) -> Any:
    return _pick(
        rng,
        [
            {"type": "audio", "base64": "UklG", "mime_type": "audio/wav"},
            {"type": "audio", "source_type": "base64", "data": "SUQz", "mime_type": "audio/mpeg"},
        ],
        [
            {"type": "audio", "url": "https://x/a.wav"},
            {"type": "audio", "base64": "UklG"},
            {"type": "audio", "base64": "UklG", "mime_type": 3},
        ],
    )


def _data_file(rng: random.Random, depth: int) -> Any:
    pdf = {"type": "file", "base64": "JVBE", "mime_type": "application/pdf"}
    return _pick(
        rng,
        [
            {**pdf, "filename": "a.pdf"},
            pdf,
            {**pdf, "extras": {"filename": "e.pdf"}},
            {**pdf, "metadata": {"filename": "m.pdf"}},
            {**pdf, "filename": ""},
            {"type": "file", "source_type": "base64", "data": "JVBE", "mime_type": "text/csv"},
            {"type": "file", "file_id": "file-1"},
            {"type": "file", "source_type": "id", "id": "file-2"},
        ],
        [
            {**pdf, "extras": "filename"},
            {"type": "file", "url": "https://x/f.pdf"},
            {"type": "file", "text": "plain"},
            {"type": "file", "base64": "JVBE"},
            {"type": "video", "url": "https://x/v.mp4"},
            {"type": "text-plain", "text": "t", "mime_type": "text/plain"},
        ],
    )


def _anthropic_image(rng: random.Random, depth: int) -> Any:
    png = {"type": "base64", "media_type": "image/png", "data": "iVBOR"}
    return _pick(
        rng,
        [
            {"type": "image", "source": png, "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source": {**png, "media_type": "image/jpeg"}},
        ],
        [
            {"type": "image", "source": {"type": "url", "url": "https://x"}},
            {"type": "image", "source": "media_type type data"},
            {"type": "image", "source": {}},
            {"type": "image"},
        ],
    )


def _bedrock_image(rng: random.Random, depth: int) -> Any:
    return _pick(
        rng,
        [
            {"image": {"format": "png", "source": {"bytes": b"\x89PNG\r\n"}}},
            {"type": "image", "image": {"format": "webp", "source": {"bytes": bytes(range(7))}}},
        ],
        [
            {"image": {"source": {"bytes": b"x"}}},
            {"image": {"format": "png", "source": {"bytes": "not bytes"}}},
        ],
    )


def _openai_file(rng: random.Random, depth: int) -> Any:
    file: dict[str, Any] = {"file_data": "data:application/pdf;base64,JVBE"}
    choice = rng.randrange(4)
    if choice == 1:
        file["filename"] = "doc.pdf"
    elif choice > 1:
        file["filename"] = rng.choice([None, ""])
    return {"type": "file", "file": file}


def _input_audio(rng: random.Random, depth: int) -> Any:
    fmt = rng.choice(["wav", "mp3", 3])  # a non-str format is not OpenAI's: passed through
    return {"type": "input_audio", "input_audio": {"data": "UklG", "format": fmt}}


def _tool_use(rng: random.Random, depth: int) -> Any:
    block = {
        "type": "tool_use",
        "id": rng.choice(["tu_1", "tu_2", "tu_3"]),
        "name": "search",
        "input": rng.choice([{}, {"q": "café"}, {"n": [1, 2.5, None]}]),
    }
    if _maybe(rng, BROKEN):
        del block[rng.choice(["id", "name", "input"])]
    return block


def _function_call(rng: random.Random, depth: int) -> Any:
    block = {
        "type": "function_call",
        "call_id": rng.choice(["tu_1", "fc_1"]),
        "name": "f",
        "arguments": '{"a": 1}',
        "id": "fc",
    }
    if _maybe(rng, BROKEN):
        del block[rng.choice(["call_id", "name", "arguments"])]
    return block


def _tool_result(rng: random.Random, depth: int) -> Any:
    content: Any
    if depth > 0 and _maybe(rng, 0.5):
        content = _content_list(rng, depth - 1, ai=False)
    else:
        content = rng.choice(["42", "", [], ["a", 3], 7, None, {"k": "v"}, 1.5, True])
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": _pick(rng, ["tu_1", "tu_2", 9, 2.5, True], [None, ["x"]]),
        "content": content,
    }
    if _maybe(rng, 0.5):
        block["is_error"] = rng.choice([True, False])
    if _maybe(rng, BROKEN):
        del block[rng.choice(["content", "tool_use_id"])]
    return block


def _json(rng: random.Random, depth: int) -> Any:
    return _pick(
        rng,
        [{"type": "json", "json": {"a": [1, "é"]}}, {"json": [1, None]}],
        [{"type": "json"}, {"type": "json", "json": b"raw"}],
    )


def _guard(rng: random.Random, depth: int) -> Any:
    return _pick(
        rng,
        [
            {"guard_content": {"text": "g"}},
            {"type": "guard_content", "guard_content": {"text": {"text": "inner"}}},
            {"type": "guard_content", "guard_content": {"text": 5}},
        ],
        [
            {"type": "guard_content"},
            {"guard_content": {"txt": "x"}},
            {"guard_content": "no t-e-x-t here"},
            {"guard_content": "has text"},
        ],
    )


def _media(rng: random.Random, depth: int) -> Any:
    return _pick(
        rng,
        [
            {"type": "media", "mime_type": "image/png", "data": b"\x89PNG"},
            {"type": "media", "mime_type": "image/jpeg", "data": bytes(range(5))},
        ],
        [
            {"type": "media", "mime_type": "video/mp4", "data": b"x"},
            {"type": "media", "mime_type": "image/png"},
            {"type": "media", "mime_type": "image/png", "data": "str"},
        ],
    )


def _refusal(rng: random.Random, depth: int) -> Any:
    return rng.choice(
        [
            {"type": "refusal", "refusal": "no"},
            {"type": "refusal"},
            {"type": "refusal", "refusal": ""},
        ]
    )


def _reasoning(rng: random.Random, depth: int) -> Any:
    return rng.choice(
        [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "reasoning", "summary": [], "id": "rs_1"},
        ]
    )


def _unknown(rng: random.Random, depth: int) -> Any:
    return _pick(
        rng,
        [
            {"type": "custom", "x": 1},
            {"type": "server_tool_use", "id": "s", "name": "web"},
            {"type": None},
            {"foo": "bar"},
        ],
        [{"type": ["unhashable"]}],
    )


def _hybrid(rng: random.Random, depth: int) -> Any:
    """Blocks that two rules match: the first rule in LangChain's order must win."""
    png = {"type": "base64", "media_type": "image/png", "data": "iVBOR"}
    return rng.choice(
        [
            {"type": "text", "text": "t", "image_url": {"url": "u"}},
            {"type": "image_url", "image_url": {"url": "u"}, "base64": "B"},
            {"type": "image", "url": "https://x/both", "source": png},
            {
                "type": "file",
                "file_id": "fid",
                "image": {"format": "png", "source": {"bytes": b"P"}},
            },
            {
                "type": "file",
                "file": {"file_data": "d"},
                "image": {"format": "png", "source": {"bytes": b"Q"}},
            },
            {"type": "input_audio", "input_audio": {"data": "d", "format": "wav"}, "json": 1},
            {"type": "tool_use", "id": "tu_9", "name": "n", "input": {}, "json": 2},
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": "c",
                "guard_content": {"text": 3},
            },
            {"type": "tool_result", "tool_use_id": "t", "content": "c", "json": 10},
            {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}", "json": 4},
            {"json": 5, "guard_content": {"text": "g"}},
            {"type": "media", "mime_type": "image/png", "data": b"M", "guard_content": {"text": 6}},
            {"type": "refusal", "refusal": "r", "json": 7},
            {"type": "media", "mime_type": "image/png", "data": b"M", "json": 8},
            {"type": "thinking", "thinking": "t", "json": 9},
            {
                "type": "refusal",
                "refusal": "r",
                "image": {"format": "gif", "source": {"bytes": b"R"}},
            },
        ]
    )


BLOCKS: list[tuple[Gen, int]] = [
    (_text, 12),
    (_string, 6),
    (_image_url, 4),
    (_data_image, 3),
    (_data_audio, 2),
    (_data_file, 3),
    (_anthropic_image, 3),
    (_bedrock_image, 2),
    (_openai_file, 2),
    (_input_audio, 2),
    (_tool_use, 3),
    (_function_call, 2),
    (_tool_result, 4),
    (_json, 2),
    (_guard, 2),
    (_media, 2),
    (_refusal, 2),
    (_reasoning, 2),
    (_unknown, 2),
    (_hybrid, 2),
]
# tool_use and function_call outside an AI message make LangChain fail (no tool_calls):
# rare there, so that the rest of those messages gets compared too.
CALL_BLOCKS = (_tool_use, _function_call)


def _content_list(rng: random.Random, depth: int, ai: bool) -> list[Any]:
    gens = [gen for gen, _ in BLOCKS]
    weights = [w if ai or gen not in CALL_BLOCKS else w / 15 for gen, w in BLOCKS]
    picked = rng.choices(gens, weights=weights, k=rng.randint(1, 4))
    return [gen(rng, depth) for gen in picked]


def _content(rng: random.Random, ai: bool) -> Any:
    roll = rng.random()
    if roll < 0.25:
        return rng.choice(TEXTS)
    if roll < 0.3:
        return []
    if roll < 0.45:  # text only, to reach the "\n" join
        return [
            _string(rng, 0) if _maybe(rng, 0.4) else _text(rng, 0) for _ in range(rng.randint(1, 3))
        ]
    return _content_list(rng, 2, ai)


TOOL_CALLS = [
    {"name": "get_weather", "args": {"city": "Paris", "note": "ü"}, "id": "tu_1"},
    {"name": "f", "args": {}, "id": "fc_1"},
]
KINDS = [
    "human",
    "human",
    "ai",
    "ai",
    "ai",
    "system",
    "tool",
    "function",
    "chat",
    "remove",
    "HumanMessageChunk",
    "AIMessageChunk",
    "SystemMessageChunk",
    "ToolMessageChunk",
    "FunctionMessageChunk",
    "ChatMessageChunk",
]


def _common(rng: random.Random, kind: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"content": _content(rng, ai=kind in ("ai", "AIMessageChunk"))}
    if _maybe(rng, 0.3):
        kwargs["name"] = rng.choice(["bob", ""])
    if _maybe(rng, 0.5):
        kwargs["id"] = rng.choice(["m1", "m2", ""])
    if _maybe(rng, 0.15):
        kwargs["additional_kwargs"] = {"refusal": rng.choice(["no", ""])}
    if kind in ("human", "HumanMessageChunk", "chat") and _maybe(rng, 0.2):
        kwargs["tool_calls"] = [{"id": "tu_1"}]  # an extra field, which tool_use reads
    return kwargs


def _lc_message(rng: random.Random) -> Any:
    kind = rng.choice(KINDS)
    if kind == "remove":
        return lc.RemoveMessage(id="r") if _maybe(rng, BROKEN) else _lc_message(rng)
    kwargs = _common(rng, kind)
    if kind in ("ai", "AIMessageChunk") and _maybe(rng, 0.4):
        calls = rng.sample(TOOL_CALLS, rng.randint(1, 2))
        if kind == "ai":
            kwargs["tool_calls"] = calls
        else:
            kwargs["tool_call_chunks"] = [
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": k}
                for k, c in enumerate(calls)
            ]
    if kind in ("system", "SystemMessageChunk") and _maybe(rng, 0.3):
        kwargs["additional_kwargs"] = {"__openai_role__": _pick(rng, ["developer"], [5])}
    if kind in ("tool", "ToolMessageChunk"):
        kwargs.update(tool_call_id="tu_1", status=rng.choice(["success", "error"]), artifact=[1])
    if kind in ("function", "FunctionMessageChunk"):
        kwargs["name"] = "fn"
    if kind in ("chat", "ChatMessageChunk"):
        kwargs["role"] = rng.choice(["critic", "user"])
    cls = {
        "human": lc.HumanMessage,
        "ai": lc.AIMessage,
        "system": lc.SystemMessage,
        "tool": lc.ToolMessage,
        "function": lc.FunctionMessage,
        "chat": lc.ChatMessage,
    }
    return cls.get(kind, getattr(lc, kind))(**kwargs)


def ours(message: Any) -> BaseMessage:
    """Our Struct for a LangChain message, from its ``model_dump()``."""
    dumped = message.model_dump()
    cls = CLASS_OF[dumped["type"]]
    names = set(cls.__struct_fields__)
    fields = {k: v for k, v in dumped.items() if k in names and k != "type"}
    extra = {k: v for k, v in dumped.items() if k not in names and k != "type"}
    return cls(**fields, extra=extra)


Outcome = tuple[str, ...]


def _theirs(messages: Sequence[Any], options: dict[str, Any]) -> Outcome:
    try:
        with warnings.catch_warnings():
            # LangChain warns about files without a filename; we do not
            # (see threadfold.core.openai).
            warnings.simplefilter("ignore")
            return ("ok", repr(convert_to_openai_messages(messages, **options)))
    except Exception as exc:  # every refusal LangChain makes is a case to compare
        name = type(exc).__name__
        if name == "ValidationError":
            return ("error", name)  # pydantic's text is not reproduced, only the class
        reason = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        return ("error", name, reason)


def _ours(messages: Sequence[BaseMessage], options: dict[str, Any]) -> Outcome:
    try:
        return ("ok", repr(to_openai(messages, **options)))
    except InvalidMessage as exc:
        if exc.lc_error == "ValidationError":
            return ("error", exc.lc_error)
        return ("error", exc.lc_error, exc.reason)


def _first_failing(messages: Sequence[Any], options: dict[str, Any]) -> int:
    """Which message LangChain refuses: the first that fails on its own."""
    return next(i for i, m in enumerate(messages) if _theirs([m], options)[0] == "error")


def _case(seed: int) -> tuple[list[Any], dict[str, Any]]:
    rng = random.Random(seed)
    messages = [_lc_message(rng) for _ in range(rng.randint(1, 5))]
    options = {
        "text_format": rng.choice(
            ["string", "string", "block"] + (["md"] if seed % 97 == 0 else [])
        ),
        "include_id": rng.random() < 0.5,
        "pass_through_unknown_blocks": rng.random() < 0.7,
    }
    return messages, options


def _compare(seed: int) -> tuple[Outcome, str | None]:
    """The outcome for one seed, or a description of how we differ from LangChain."""
    lc_messages, options = _case(seed)
    mine = [ours(m) for m in lc_messages]
    expected, got = _theirs(lc_messages, options), _ours(mine, options)
    if expected != got:
        return expected, f"seed {seed}: expected {expected!r}, got {got!r}"
    if expected[0] == "error" and options["text_format"] != "md":
        failing = _first_failing(lc_messages, options)
        try:
            to_openai(mine, **options)
        except InvalidMessage as exc:
            if not exc.path.startswith(f"messages[{failing}]"):
                return expected, f"seed {seed}: path {exc.path!r}, LangChain fails at {failing}"
    return expected, None


DIFFERENTIAL_CASES = 3000
# Something each block kind (and each message role) leaves in a successful conversion.
SIGNS_OF_EVERY_KIND = [
    "'role': 'user'",
    "'role': 'assistant'",
    "'role': 'system'",
    "'role': 'developer'",
    "'role': 'tool'",
    "'role': 'function'",
    "'role': 'critic'",
    "'id': 'm1'",
    "'name': 'bob'",
    "'refusal': 'no'",
    "'tool_calls'",
    "'content': []",
    "'text': 'hi'",
    "'https://x/y.png'",
    "https://x/i.png",
    "data:image/png;base64,AAA",
    "data:image/gif;base64,BBB",
    "'format': 'wav'",
    "'format': 'mpeg'",
    "'filename': 'e.pdf'",
    "'filename': 'm.pdf'",
    "'file_id': 'file-2'",
    "LC_AUTOGENERATED",
    "'filename': 'doc.pdf'",
    "data:image/png;base64,iVBOR",
    "data:image/png;base64,iVBORw0K",
    "data:image/webp;base64,AAECAwQFBg==",
    "'input_audio'",
    "'arguments': '{\"q\": \"café\"}'",
    "'function_call'",
    "'tool_call_id': '9'",
    "'tool_call_id': '2.5'",
    "'tool_call_id': 'True'",
    "\\u00e9",
    "'text': 'inner'",
    "'text': 5",
    "data:image/jpeg;base64,AAECAwQ=",
    "'type': 'refusal'",
    "'thinking'",
    "'reasoning'",
    "'custom'",
    "'foo': 'bar'",
    "'type': None",
    "'content': 'None'",
    "two\\nlines",
]


@pytest.mark.differential
def test_random_message_lists_convert_exactly_as_langchain_converts_them() -> None:
    outcomes = [_compare(seed) for seed in range(DIFFERENTIAL_CASES)]
    mismatches = [problem for _, problem in outcomes if problem is not None]
    assert mismatches == []
    # The generator must exercise both sides: plenty of successes and of refusals.
    kinds = {outcome[1] if outcome[0] == "error" else "ok" for outcome, _ in outcomes}
    assert {"ok", "ValueError", "KeyError", "TypeError", "AttributeError"} <= kinds
    successes = [outcome[1] for outcome, _ in outcomes if outcome[0] == "ok"]
    assert len(successes) >= DIFFERENTIAL_CASES // 2
    converted = "".join(successes)
    for sign in SIGNS_OF_EVERY_KIND:
        assert sign in converted, f"no successful case shows {sign!r}"
