"""Malformed input gets a precise 4xx, never a 5xx: bodies nested too deeply (however
deep, wherever: messages, additional_kwargs, a bulk, a tool call's JSON arguments) and
query or path parameters that only look like numbers, versions or ids."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.api.client import api_client, api_settings
from tests.api.test_contract import _thread_keys
from threadfold.core.depth import pointer
from threadfold.core.versions import MAX_PART

PAST_RECURSION = 100_000  # levels: far past what any recursive decoder takes (~1,000)


def _objects(depth: int, key: str = "k") -> str:
    """JSON text of ``depth`` objects, each under ``key`` of the one around it."""
    return f'{{"{key}":' * depth + "1" + "}" * depth


def _arrays(depth: int) -> str:
    return "[" * depth + "]" * depth


def _kwargs_body(kwargs: str) -> str:
    return f'{{"messages":[{{"role":"assistant","content":"x","additional_kwargs":{kwargs}}}]}}'


# The message is level 1, additional_kwargs level 2: with the default limit of 100, the
# first object too deep is additional_kwargs' 99th descendant.
KWARGS_TOO_DEEP = "messages[0].additional_kwargs" + ".k" * 99

DEEP_BODIES: list[tuple[str, str, str, str]] = [
    # (what, path, body, the field of the error)
    (
        "arrays in messages, past recursion",
        "/threads/t/deltas",
        '{"messages":[' + _arrays(PAST_RECURSION) + "]}",
        "messages[0]" + "[0]" * 100,
    ),
    (
        "additional_kwargs, past recursion",
        "/threads/t/deltas",
        _kwargs_body(_objects(PAST_RECURSION)),
        KWARGS_TOO_DEEP,
    ),
    (
        "additional_kwargs, 1,000 levels",
        "/threads/t/deltas",
        _kwargs_body(_objects(1_000)),
        KWARGS_TOO_DEEP,
    ),
    (
        "additional_kwargs, 500 levels (decodable: the producer's walk finds it)",
        "/threads/t/deltas",
        _kwargs_body(_objects(500)),
        KWARGS_TOO_DEEP,
    ),
    (
        "additional_kwargs, one level past the limit",
        "/threads/t/deltas",
        _kwargs_body(_objects(100)),
        KWARGS_TOO_DEEP,
    ),
    (
        "a key that is not a plain name",
        "/threads/t/deltas",
        _kwargs_body('{"a.b/c~":' + _objects(PAST_RECURSION) + "}"),
        'messages[0].additional_kwargs["a.b/c~"]' + ".k" * 98,
    ),
    (
        "the second delta of a bulk, past recursion",
        "/deltas",
        '{"deltas":[{"thread_id":"a","messages":["x"]},{"thread_id":"b","messages":["y",'
        + _objects(PAST_RECURSION)
        + "]}]}",
        "deltas[1].messages[1]" + ".k" * 100,
    ),
    (
        "the second delta of a bulk, 300 levels",
        "/deltas",
        '{"deltas":[{"thread_id":"a","messages":["x"]},{"thread_id":"b","messages":['
        + _kwargs_body(_objects(300))[len('{"messages":[') : -2]
        + "]}]}",
        "deltas[1].messages[0].additional_kwargs" + ".k" * 99,
    ),
    (
        "an OpenAI tool call's JSON arguments, past recursion",
        "/threads/t/deltas",
        '{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c","type":'
        '"function","function":{"name":"f","arguments":"'
        + _objects(PAST_RECURSION).replace('"', '\\"')
        + '"}}]}]}',
        "messages[0].tool_calls[0].function.arguments",
    ),
]


@pytest.mark.parametrize(
    ("what", "path", "body", "field"), DEEP_BODIES, ids=[row[0] for row in DEEP_BODIES]
)
def test_a_body_nested_too_deeply_is_a_422_naming_where(
    redis_url: str, what: str, path: str, body: str, field: str
) -> None:
    with api_client(api_settings(redis_url)) as client:
        response = client.post(
            path, content=body.encode(), headers={"content-type": "application/json"}
        )
    assert response.status_code == 422, (what, response.text[:300])
    error = response.json()["error"]
    assert error["field"] == field, what
    assert error["pointer"] == pointer(field)
    assert error["message"].endswith("nested too deeply to parse") or error["message"] == (
        f"{field}: nested deeper than 100 levels"
    )
    assert _thread_keys(redis_url) == []


def test_a_message_at_the_depth_limit_is_accepted_and_the_limit_is_a_setting(
    redis_url: str,
) -> None:
    at_limit = _kwargs_body(_objects(99)).encode()  # levels 2-100
    with api_client(api_settings(redis_url)) as client:
        response = client.post("/threads/t/deltas", content=at_limit, headers=_JSON)
        assert response.status_code == 202, response.text
    with api_client(api_settings(redis_url, max_json_depth=20)) as client:
        response = client.post("/threads/t/deltas", content=at_limit, headers=_JSON)
        assert response.status_code == 422
        assert response.json()["error"]["field"] == "messages[0].additional_kwargs" + ".k" * 19


def test_a_pointer_escapes_a_quoted_key_as_rfc_6901_says() -> None:
    assert pointer('messages[0].additional_kwargs["a.b/c~"].k[3]') == (
        "/messages/0/additional_kwargs/a.b~1c~0/k/3"
    )
    assert pointer('x["q\\"[]"]') == '/x/q"[]'


_JSON = {"content-type": "application/json"}

TOP = "18446744073709551615"  # 2**64 - 1
MALFORMED_QUERIES: list[tuple[str, str, str]] = [
    # (query string as sent, the field of the error, a part of its message)
    ("at_version=18446744073709551616-0", "at_version", f"at most {TOP}"),
    ("at_version=0-18446744073709551616", "at_version", f"at most {TOP}"),
    ("at_version=99999999999999999999-0", "at_version", f"at most {TOP}"),
    ("at_version=%D9%A1-%D9%A0", "at_version", "ASCII digits"),
    ("at_version=1-0-0", "at_version", "expected a version like"),
    ("at_version=123456789012345678901-0", "at_version", "expected a version like"),
    ("at_version=", "at_version", "expected a version like"),
    ("min_version=18446744073709551616-0", "min_version", f"at most {TOP}"),
    ("min_version=%D9%A1-%D9%A0", "min_version", "ASCII digits"),
    ("min_version=%EF%BC%91-0", "min_version", "ASCII digits"),  # fullwidth 1
    ("limit=%D9%A3", "limit", "expected an integer in ASCII digits, got '\u0663'"),
    ("limit=3_0", "limit", "expected an integer in ASCII digits"),
    ("limit=%2B3", "limit", "expected an integer in ASCII digits"),
    ("limit=%203", "limit", "expected an integer in ASCII digits"),
    ("limit=3.0", "limit", "expected an integer in ASCII digits"),
    ("limit=1e3", "limit", "expected an integer in ASCII digits"),
    ("limit=" + "9" * 5000, "limit", "expected an integer in ASCII digits"),
    ("limit=-1", "limit", "expected a value from 0 to 10000"),
    ("limit=10001", "limit", "expected a value from 0 to 10000"),
    ("limit=", "limit", "expected an integer in ASCII digits"),
    ("wait=%D9%A3", "wait", "expected a number in ASCII digits"),
    ("wait=1_0", "wait", "expected a number in ASCII digits"),
    ("wait=nan", "wait", "expected a number in ASCII digits"),
    ("wait=inf", "wait", "expected a number in ASCII digits"),
    ("wait=1e999", "wait", "expected a value from 0 to 30"),
    ("wait=-1", "wait", "expected a value from 0 to 30"),
    ("wait=", "wait", "expected a number in ASCII digits"),
    ("format=OPENAI", "format", "expected 'langchain' or 'openai'"),
    ("format=", "format", "expected 'langchain' or 'openai'"),
    ("after=", "after", "expected a message id, got an empty string"),
    ("before=", "before", "expected a message id, got an empty string"),
    ("after=a&before=b", "before", "give either before or after"),
    ("after=a&after=b", "after", "given more than once"),
    ("limit=1&limit=1", "limit", "given more than once"),
    ("colour=red", "colour", "unknown query parameter"),
    ("a.b=1", '["a.b"]', "unknown query parameter"),
]


@pytest.mark.parametrize(
    ("query", "field", "message"), MALFORMED_QUERIES, ids=[q[0][:40] for q in MALFORMED_QUERIES]
)
def test_a_malformed_query_value_is_a_400_naming_its_parameter(
    redis_url: str, query: str, field: str, message: str
) -> None:
    with api_client(api_settings(redis_url)) as client:
        _post(client, "t")
        response = client.get(f"/threads/t/state?{query}")
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["field"], error["pointer"]) == (field, pointer(field))
    assert message in error["message"], error["message"]


def test_versions_at_the_64_bit_bounds_and_ascii_numbers_are_accepted(redis_url: str) -> None:
    with api_client(api_settings(redis_url)) as client:
        version = _post(client, "t")["version"]
        for query in (
            "min_version=0-0&wait=0.5&limit=0&format=openai",
            f"min_version={version}&wait=1e-3",
            f"at_version={TOP}-{TOP}&limit=10000",
            "limit=007&wait=.5&after=no-such-id",
        ):
            response = client.get(f"/threads/t/state?{query}")
            assert response.status_code != 400 and response.status_code < 500, (
                query,
                response.text,
            )


VALUES = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=30),
    st.text(alphabet=string.digits + "-.eE+_ ", max_size=25),
    st.integers(-3, MAX_PART * 10).map(lambda n: f"{n}-{n // 7}"),
    # Digits of other scripts (Arabic-Indic, fullwidth, superscript, a Roman numeral).
    st.sampled_from(
        ["\u0663", "\u0661-\u0660", "\u216b", "\u00b3", "\uff11\uff12", "0x10", "1e3", "nan", "-0"]
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.sampled_from(["at_version", "min_version", "limit", "wait", "after", "format"]),
    value=VALUES,
)
def test_no_query_value_gets_a_server_error_and_only_ascii_numbers_pass(
    state_client: TestClient, name: str, value: str
) -> None:
    response = state_client.get("/threads/t/state", params={name: value})
    assert response.status_code < 500, response.text
    if response.status_code == 400:
        assert response.json()["error"]["field"] == name
    elif name in ("at_version", "min_version", "limit", "wait"):
        assert value.isascii(), (name, value, response.status_code)
    if name.endswith("version") and response.status_code != 400:
        assert all(int(part) <= MAX_PART for part in value.split("-"))


@pytest.fixture(scope="module")
def state_client(redis_server_session: Any) -> Any:
    """One app over the session's Redis for the Hypothesis sweep (a thread 't' in it)."""
    with api_client(api_settings(redis_server_session.url, max_wait_seconds=0.05)) as client:
        _post(client, "t")
        yield client


THREAD_IDS: list[tuple[str, int]] = [
    ("%D9%A3", 422),  # an Arabic-Indic digit
    ("%EF%BC%A1", 422),  # a fullwidth A
    ("%F0%9F%98%80", 422),
    ("%00", 422),
    ("t%0A", 422),
    ("%FF%FE", 422),  # not UTF-8
    ("a%20b", 422),
    ("x" * 129, 422),
    ("a%2Fb", 404),  # a slash: no route matches
]


@pytest.mark.parametrize(("thread", "status"), THREAD_IDS, ids=[t for t, _ in THREAD_IDS])
def test_an_odd_thread_id_is_a_4xx_on_every_thread_route(
    redis_url: str, thread: str, status: int
) -> None:
    with api_client(api_settings(redis_url)) as client:
        answers = [
            client.post(f"/threads/{thread}/deltas", json={"messages": ["x"]}),
            client.get(f"/threads/{thread}/state"),
            client.get(f"/threads/{thread}/status"),
            client.delete(f"/threads/{thread}"),
        ]
    for response in answers:
        assert response.status_code == status, response.text
        if status == 422:
            assert response.json()["error"]["field"] == "thread_id"
    assert _thread_keys(redis_url) == []


def _post(client: TestClient, thread: str) -> dict[str, Any]:
    response = client.post(f"/threads/{thread}/deltas", json={"messages": ["x"]})
    assert response.status_code == 202, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field", "said"),
    [
        # a number msgspec cannot hold, in a free-form object it names no key of
        ("POST", "/threads/t/deltas", b'{"messages": [["user", "x"]], "metadata": {"a": 1, '
         b'"k": 1e400}}', 422, "metadata.k", "number out of range"),
        ("PATCH", "/threads/t", b'{"metadata": {"k": -1E+999}}', 422, "metadata.k",
         "number out of range"),
        ("POST", "/threads/t/deltas", b'{"messages": [{"role": "user", "content": "x", '
         b'"additional_kwargs": {"n": [1, 1e400]}}]}', 422,
         "messages[0].additional_kwargs.n[1]", "number out of range"),
        # a key that is no name: the key itself, as a pointer to it
        ("POST", "/threads/t/deltas", b'{"messages": [["user", "x"]], "metadata": {"": 1}}',
         422, 'metadata[""]', "a metadata key is"),
        ("PATCH", "/threads/t", b'{"metadata": {"a b": 1}}', 422, 'metadata["a b"]',
         "a metadata key is"),
        # a lone surrogate escape: no Unicode character, so no JSON text; named where
        ("POST", "/threads/t/deltas", b'{"messages": [["user", "\\ud800"]]}', 400,
         "messages[0][1]", "lone UTF-16 surrogate"),
        ("POST", "/deltas", b'{"deltas": [{"thread_id": "t", "messages": ["ok"]}, '
         b'{"thread_id": "\\udc00", "messages": ["x"]}]}', 400, "deltas[1].thread_id",
         "lone UTF-16 surrogate"),
        ("POST", "/threads/t/deltas", b'{"messages": ["x"], "metadata": {"\\ud83d": 1}}', 400,
         "metadata", "a key of it holds a lone UTF-16 surrogate"),
        # a null in a filter is the filter's, not a new thread's
        ("POST", "/threads/search", b'{"metadata": {"k": null}}', 422, "metadata.k",
         "a metadata filter"),
        ("POST", "/threads/count", b'{"metadata": {"k": null}}', 422, "metadata.k",
         "a metadata filter"),
        ("POST", "/threads/prune", b'{"metadata": {"k": null}}', 422, "metadata.k",
         "a metadata filter"),
    ],
)
def test_a_refusal_names_the_field_where_the_fault_is(
    redis_url: str, method: str, path: str, body: bytes, status: int, field: str, said: str
) -> None:
    with api_client(api_settings(redis_url, key_prefix="pf")) as client:
        response = client.request(
            method, path, content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == status, response.text
        error = response.json()["error"]
        assert error["field"] == field, error
        assert error["pointer"] == pointer(field), error
        assert error["message"].startswith(f"{field}: ") and said in error["message"], error
        assert "new thread" not in error["message"]
        assert client.get("/threads/t/status").status_code == 404  # nothing written


def test_a_pointer_of_an_empty_key_is_the_empty_reference_token() -> None:
    assert pointer('metadata[""]') == "/metadata/"
