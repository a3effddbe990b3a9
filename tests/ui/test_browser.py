"""The page at /ui in a real browser (Debian's Chromium, headless, through Playwright)
against a real stack: a redis-server, the API process (with an API key) and a Celery
worker. What is checked is what a person sees: the threads list, a delta appearing
live without a reload, a removal going, a streamed chunk growing, a tool call with its
result, the slider showing an older version, the key entered once, each thread's
metadata, pin and expiry, and the list filtered by a metadata value.

Screenshots go to THREADFOLD_UI_ARTIFACTS (default: a folder under pytest's tmp dir,
printed at the start).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.infra.redis_server import RedisServer
from tests.ui.browser import artifacts, browser_context, chromium
from tests.workers.harness import make_settings, start_api, start_worker

#: In the serial run, with no other test on the two cores: "within a second" is a timed
#: claim (the issue's), and a browser, a worker and the API next to the rest of the
#: suite's processes wait for a core.
pytestmark = pytest.mark.serial

KEY = "ui-tests-key-0123456789abcdef"
AUTH = {"authorization": f"Bearer {KEY}"}
#: Appears within a second of its POST, as the issue asks (the page does not reload).
LIVE_MS = 1000
#: Everything else the page shows on its own schedule (the list is read every 2 s).
SHOWN_MS = 10_000


@dataclass(frozen=True)
class Stack:
    url: str
    shots: Path
    headers: dict[str, str]

    def post(self, thread: str, messages: list[Any], metadata: dict[str, Any] | None = None) -> str:
        """Append ``messages``; ``metadata`` is the thread's if this delta creates it."""
        body: dict[str, Any] = {"messages": messages}
        if metadata is not None:
            body["metadata"] = metadata
        response = httpx.post(
            f"{self.url}/threads/{thread}/deltas", json=body, headers=self.headers
        )
        assert response.status_code == 202, response.text
        version: str = response.json()["version"]
        return version

    def patch(self, thread: str, change: dict[str, Any]) -> None:
        """``PATCH /threads/{thread}``: metadata, ttl_seconds, pinned."""
        response = httpx.patch(f"{self.url}/threads/{thread}", json=change, headers=self.headers)
        assert response.status_code == 200, response.text

    def applied(self, thread: str, version: str) -> dict[str, Any]:
        """The state once ``version`` is folded (read-your-writes)."""
        response = httpx.get(
            f"{self.url}/threads/{thread}/state",
            params={"min_version": version, "wait": 20},
            headers=self.headers,
            timeout=30,
        )
        assert response.status_code == 200, response.text
        state: dict[str, Any] = response.json()
        return state


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chromium()  # fail (CI) or skip before starting anything
    return artifacts(tmp_path_factory)


@contextmanager
def _running(logs: Path, shots: Path, *, keyed: bool, retention: float) -> Iterator[Stack]:
    """A redis-server, an API process (with the key when ``keyed``) and a worker."""
    with RedisServer() as server:
        # merged chunks make a streamed message grow in place.
        settings = make_settings(server.url, retention_seconds=retention, merge_chunks=True)
        if keyed:
            api, url = start_api(settings, logs, THREADFOLD_API_KEYS=json.dumps({KEY: None}))
        else:
            api, url = start_api(settings, logs)
        worker = start_worker(settings, "ui", logs)
        try:
            yield Stack(url, shots, AUTH if keyed else {})
        finally:
            api.kill()
            worker.kill()
    for log in logs.iterdir():
        assert "Traceback" not in log.read_text(), log


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, shots: Path) -> Iterator[Stack]:
    """With an API key, and a retention that keeps the log: time travel serves the
    slider's older versions."""
    with _running(tmp_path_factory.mktemp("ui-stack"), shots, keyed=True, retention=600) as s:
        yield s


@pytest.fixture(scope="module")
def open_stack(tmp_path_factory: pytest.TempPathFactory, shots: Path) -> Iterator[Stack]:
    """No keys, and the default retention (0: applied entries are trimmed at once)."""
    with _running(tmp_path_factory.mktemp("ui-open"), shots, keyed=False, retention=0) as s:
        yield s


@pytest.fixture(scope="module")
def context(shots: Path) -> Iterator[BrowserContext]:
    with browser_context(chromium()) as opened:
        yield opened


@pytest.fixture
def page(context: BrowserContext, stack: Stack) -> Iterator[Page]:
    """A new tab on the page, the key entered once."""
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(f"{stack.url}/ui")
    tab.fill("#key-input", KEY)
    tab.click("#key-save")
    expect(tab.locator("#key-state")).to_have_attribute("data-state", "set")
    yield tab
    tab.close()
    assert not errors, f"the page's scripts failed: {errors}"


def _open(page: Page, thread: str) -> None:
    """Open ``thread`` from the list, as a person would: click its row."""
    row = page.locator(f'#threads tr[data-thread="{thread}"]')
    expect(row).to_be_visible(timeout=SHOWN_MS)
    row.click()
    expect(page.locator("#thread-title")).to_have_text(thread)
    expect(page.locator("#live")).to_have_attribute("data-state", "live", timeout=SHOWN_MS)


def _message(page: Page, message_id: str) -> Any:
    return page.locator(f'#transcript li[data-id="{message_id}"]')


def test_the_page_lists_threads_and_shows_changes_live(stack: Stack, page: Page) -> None:
    first = stack.post("ui-live", [{"role": "user", "content": "What is 6 x 7?", "id": "q1"}])
    stack.applied("ui-live", first)
    _open(page, "ui-live")
    expect(_message(page, "q1")).to_contain_text("What is 6 x 7?")
    page.evaluate("window.loadedOnce = true")  # gone if the page reloads

    call = {"name": "multiply", "args": {"a": 6, "b": 7}, "id": "call-1"}
    stack.post("ui-live", [{"role": "assistant", "content": "", "id": "a1", "tool_calls": [call]}])
    expect(_message(page, "a1")).to_contain_text("multiply", timeout=LIVE_MS)
    expect(_message(page, "a1").locator(".result")).to_contain_text("awaiting")
    stack.post("ui-live", [{"role": "tool", "content": "42", "tool_call_id": "call-1", "id": "t1"}])
    expect(_message(page, "t1")).to_contain_text("42", timeout=LIVE_MS)
    expect(_message(page, "a1").locator(".result")).to_contain_text("result: 42")

    stack.post("ui-live", [{"type": "AIMessageChunk", "content": "The answer", "id": "s1"}])
    expect(_message(page, "s1")).to_contain_text("The answer", timeout=LIVE_MS)
    stack.post("ui-live", [{"type": "AIMessageChunk", "content": " is 42.", "id": "s1"}])
    expect(_message(page, "s1").locator(".content")).to_have_text(
        "The answer is 42.", timeout=LIVE_MS
    )
    expect(_message(page, "s1")).to_have_class("msg ai updated")

    stack.post("ui-live", [{"role": "user", "content": "thanks!", "id": "q2"}])
    expect(_message(page, "q2")).to_be_visible(timeout=LIVE_MS)
    page.screenshot(path=str(stack.shots / "live-thread.png"))

    stack.post("ui-live", [{"type": "remove", "id": "q2", "content": ""}])
    removed = _message(page, "q2")
    expect(removed).to_have_attribute("data-removed", "true", timeout=LIVE_MS)
    page.screenshot(path=str(stack.shots / "removal.png"))
    expect(removed).to_have_count(0, timeout=SHOWN_MS)
    assert page.evaluate("window.loadedOnce") is True, "the page reloaded"
    expect(page.locator("#transcript li")).to_have_count(4)  # q1 a1 t1 s1
    state = httpx.get(f"{stack.url}/threads/ui-live/state", headers=AUTH).json()
    assert [i for i, _ in _shown(page)] == [m["id"] for m in state["messages"]]


def test_the_model_window_dims_what_a_model_would_not_be_sent(
    stack: Stack, page: Page
) -> None:
    turns: list[dict[str, Any]] = [{"role": "system", "content": "Be brief.", "id": "w-sys"}]
    for i in range(6):
        turns += [{"role": "user", "content": f"question {i} " * 4, "id": f"w-q{i}"},
                  {"role": "assistant", "content": f"answer {i} " * 4, "id": f"w-a{i}"}]
    stack.applied("ui-window", stack.post("ui-window", turns))
    _open(page, "ui-window")
    expect(_message(page, "w-a5")).to_be_visible(timeout=SHOWN_MS)

    def window() -> list[str]:
        found = httpx.get(f"{stack.url}/threads/ui-window/context", headers=AUTH,
                          params={"max_tokens": 60, "include_system": "true"}).json()
        return [m["id"] for m in found["messages"]]

    def undimmed() -> list[str]:
        ids: list[str] = page.locator("#transcript li:not(.outside):not(.removed)").evaluate_all(
            "items => items.map(li => li.dataset.id)")
        return ids

    page.fill("#window-input", "60")
    page.press("#window-input", "Enter")
    expected = window()
    expect(page.locator("#window-label")).to_contain_text(
        f"{len(expected)} of 13 messages", timeout=SHOWN_MS)
    assert undimmed() == expected and expected[0] == "w-sys" and len(expected) < 13
    page.screenshot(path=str(stack.shots / "model-window.png"))
    # A new message moves the window: it follows the thread live.
    stack.applied("ui-window", stack.post("ui-window", [
        {"role": "user", "content": "one more question " * 3, "id": "w-q6"}]))
    expect(_message(page, "w-q6")).to_be_visible(timeout=LIVE_MS)
    expect(page.locator("#window-label")).to_contain_text("of 14 messages", timeout=LIVE_MS)
    assert undimmed() == window() and "w-q6" in undimmed()


def _shown(page: Page) -> list[tuple[str, str]]:
    """The transcript as the page shows it: each message's id and text, in order."""
    shown: list[list[str]] = page.locator("#transcript li:not(.removed)").evaluate_all(
        "items => items.map(li => [li.dataset.id, li.querySelector('.content').textContent])"
    )
    return [(message_id, text) for message_id, text in shown]


def test_random_changes_end_as_the_state_shows_them(stack: Stack, page: Page) -> None:
    """Appends, updates in place, removals and remove-alls, posted in a burst while the
    page follows: it ends with exactly GET state's messages, in order."""
    rng = random.Random(17)
    first = stack.post("ui-random", [{"role": "user", "content": "start", "id": "m0"}])
    stack.applied("ui-random", first)
    _open(page, "ui-random")
    ids = ["m0"]
    for n in range(60):
        roll = rng.random()
        if roll < 0.05:
            messages: list[Any] = [{"type": "remove", "id": "__remove_all__", "content": ""}]
            ids = []
        elif roll < 0.25 and ids:
            messages = [{"type": "remove", "id": ids.pop(rng.randrange(len(ids))), "content": ""}]
        elif roll < 0.5 and ids:
            messages = [{"role": "user", "content": f"edit {n}", "id": rng.choice(ids)}]
        else:
            ids.append(f"m{n + 1}")
            messages = [{"role": "user", "content": f"message {n}", "id": ids[-1]}]
        version = stack.post("ui-random", messages)
    state = stack.applied("ui-random", version)
    expect(page.locator("#thread-version")).to_have_text(f"version {state['version']}",
                                                         timeout=SHOWN_MS)
    assert _shown(page) == [(m["id"], m["content"]) for m in state["messages"]]


def test_the_list_shows_backlog_and_activity(stack: Stack, page: Page) -> None:
    version = stack.post("ui-list", ["listed"])
    stack.applied("ui-list", version)
    row = page.locator('#threads tr[data-thread="ui-list"]')
    expect(row).to_be_visible(timeout=SHOWN_MS)
    expect(row.locator("td").nth(1)).to_have_text("1")  # messages
    expect(row.locator("td.backlog")).to_have_text("0")
    expect(page.locator("#p-backlog")).to_have_text(re.compile(r"^[0-9,]+$"), timeout=SHOWN_MS)
    expect(page.locator("#pipeline-note")).to_contain_text("over the last", timeout=SHOWN_MS)


def test_the_slider_shows_an_older_version_and_returns_to_live(stack: Stack, page: Page) -> None:
    older = stack.post("ui-history", [{"role": "user", "content": "first", "id": "h1"}])
    stack.applied("ui-history", older)
    _open(page, "ui-history")
    for n in (2, 3):
        stack.post("ui-history", [{"role": "user", "content": f"message {n}", "id": f"h{n}"}])
        expect(_message(page, f"h{n}")).to_be_visible(timeout=LIVE_MS)

    page.locator("#slider").focus()
    page.keyboard.press("Home")  # the first version this page saw: only h1
    expect(page.locator("#thread")).to_have_attribute("data-showing", older, timeout=SHOWN_MS)
    expect(page.locator("#live")).to_have_attribute("data-state", "history")
    expect(_message(page, "h1")).to_be_visible()
    expect(page.locator("#transcript li")).to_have_count(1)
    page.screenshot(path=str(stack.shots / "history.png"))

    stack.post("ui-history", [{"role": "user", "content": "while away", "id": "h4"}])
    expect(page.locator("#slider")).to_have_attribute("max", "3", timeout=SHOWN_MS)
    expect(page.locator("#transcript li")).to_have_count(1)  # history holds still

    page.click("#to-live")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    expect(page.locator("#transcript li")).to_have_count(4)


def test_the_key_is_entered_once_for_the_tab(
    stack: Stack, page: Page, context: BrowserContext
) -> None:
    version = stack.post("ui-key", ["keyed"])
    stack.applied("ui-key", version)
    _open(page, "ui-key")
    page.goto(f"{stack.url}/ui/#/")  # a navigation: the page loads again, same tab
    expect(page.locator("#key-state")).to_have_attribute("data-state", "set")
    _open(page, "ui-key")
    expect(page.locator("#transcript li")).to_have_count(1)
    page.screenshot(path=str(stack.shots / "page.png"))

    other = context.new_page()  # another tab starts without the key
    try:
        other.goto(f"{stack.url}/ui")
        expect(other.locator("#key-state")).to_have_attribute("data-state", "needed")
        expect(other.locator("#threads-note")).to_have_text("API key needed")
    finally:
        other.close()


def test_without_retention_the_slider_rebuilds_from_the_feed(
    open_stack: Stack, context: BrowserContext
) -> None:
    """Time travel answers 410 once the log is trimmed: the page rebuilds a version it
    saw from the feed events it received (no key needed on this stack)."""
    page = context.new_page()
    try:
        older = open_stack.post("ui-trimmed", [{"role": "user", "content": "one", "id": "r1"}])
        open_stack.applied("ui-trimmed", older)
        page.goto(f"{open_stack.url}/ui/#/t/ui-trimmed")
        expect(page.locator("#key-state")).to_have_attribute("data-state", "none")
        expect(_message(page, "r1")).to_be_visible(timeout=SHOWN_MS)
        open_stack.post("ui-trimmed", [{"role": "user", "content": "two", "id": "r2"}])
        expect(_message(page, "r2")).to_be_visible(timeout=LIVE_MS)
        page.locator("#slider").focus()
        page.keyboard.press("Home")
        expect(page.locator("#thread")).to_have_attribute("data-showing", older, timeout=SHOWN_MS)
        expect(page.locator("#banner")).to_contain_text("rebuilt from the feed")
        expect(page.locator("#transcript li")).to_have_count(1)
        expect(_message(page, "r1")).to_be_visible()
    finally:
        page.close()


def test_a_thread_not_written_yet_appears_with_its_first_delta(stack: Stack, page: Page) -> None:
    page.fill("#open-input", "ui-unborn")
    page.press("#open-input", "Enter")
    expect(page.locator("#live")).to_have_attribute("data-state", "live", timeout=SHOWN_MS)
    expect(page.locator("#banner")).to_contain_text("not been written yet")
    stack.post("ui-unborn", [{"role": "user", "content": "hello", "id": "u1"}])
    expect(_message(page, "u1")).to_contain_text("hello", timeout=LIVE_MS)
    expect(page.locator("#banner")).to_be_hidden()


def test_a_removed_thread_empties_and_takes_its_next_incarnation(
    stack: Stack, page: Page
) -> None:
    stack.post("ui-removed", [{"role": "user", "content": "before", "id": "b1"}])
    _open(page, "ui-removed")
    expect(_message(page, "b1")).to_contain_text("before", timeout=LIVE_MS)
    response = httpx.delete(f"{stack.url}/threads/ui-removed", headers=AUTH)
    assert response.status_code == 204
    expect(page.locator("#banner")).to_contain_text("This thread was deleted", timeout=LIVE_MS)
    # Each message is struck through, then gone (the ghost of a removal fades).
    expect(page.locator("#transcript li[data-id]")).to_have_count(0, timeout=LIVE_MS + 5000)
    stack.post("ui-removed", [{"role": "user", "content": "after", "id": "a1"}])
    expect(_message(page, "a1")).to_contain_text("after", timeout=LIVE_MS)
    expect(_message(page, "b1")).to_have_count(0)


def _row(page: Page, thread: str) -> Any:
    return page.locator(f'#threads tr[data-thread="{thread}"]')


def _listed(page: Page) -> Any:
    """The thread ids the list shows, in order."""
    return page.locator("#threads tbody tr").evaluate_all(
        "rows => rows.map(row => row.dataset.thread)"
    )


def _filter(page: Page, key: str, value: str) -> None:
    page.fill("#filter-key", key)
    page.fill("#filter-value", value)
    page.press("#filter-value", "Enter")


def test_the_list_shows_metadata_pin_and_expiry(stack: Stack, page: Page) -> None:
    # Values of their own (not user=u1): the filter test counts the u1 threads.
    plain = stack.post("ui-meta", ["hello"], metadata={"owner": "ada", "n": 5, "html": "<b>x</b>"})
    expiring = stack.post("ui-meta-ttl", ["hello"], metadata={"owner": "bob"})
    stack.applied("ui-meta", plain)
    stack.applied("ui-meta-ttl", expiring)
    stack.patch("ui-meta-ttl", {"ttl_seconds": 600})

    row = _row(page, "ui-meta")
    expect(row).to_be_visible(timeout=SHOWN_MS)
    # Every value as text (one that looks like HTML stays text), in the API's key
    # order; a number unquoted (the filter reads it back as a number).
    expect(row.locator(".chip")).to_have_text(["html=<b>x</b>", "n=5", "owner=ada"])
    assert row.locator("b").count() == 0, "metadata was parsed as HTML"
    expect(row.locator(".expiry")).to_have_text("never expires")
    expect(row.locator(".badge.pinned")).to_have_count(0)

    ttl = _row(page, "ui-meta-ttl")
    expect(ttl.locator(".chip")).to_have_text(["owner=bob"], timeout=SHOWN_MS)
    expect(ttl.locator(".expiry")).to_have_text(
        re.compile(r"^expires in (9|10) min$"), timeout=SHOWN_MS
    )
    expect(ttl.locator(".expiry")).to_have_attribute("title", re.compile("its own TTL of 600 s"))

    stack.patch("ui-meta", {"pinned": True})  # shown on the list's next read, no reload
    expect(row.locator(".badge.pinned")).to_have_text("pinned", timeout=SHOWN_MS)
    expect(row).to_have_attribute("data-pinned", "true")
    expect(row.locator(".expiry")).to_have_attribute("title", re.compile("^pinned"))
    stack.patch("ui-meta-ttl", {"pinned": True})
    expect(ttl.locator(".expiry")).to_have_text("never expires", timeout=SHOWN_MS)
    page.screenshot(path=str(stack.shots / "metadata.png"))


def test_the_list_filters_by_a_metadata_value(stack: Stack, page: Page) -> None:
    threads: list[tuple[str, dict[str, Any]]] = [
        ("ui-u1-a", {"user": "u1", "rank": 5}),
        ("ui-u1-b", {"user": "u1", "rank": "5"}),
        ("ui-u2", {"user": "u2"}),
    ]
    for thread, metadata in threads:
        stack.applied(thread, stack.post(thread, ["hi"], metadata=metadata))
    expect(_row(page, "ui-u2")).to_be_visible(timeout=SHOWN_MS)

    _filter(page, "user", "u1")
    expect(page.locator("#filter-clear")).to_be_visible()
    expect(page.locator("#threads tbody tr")).to_have_count(2, timeout=SHOWN_MS)
    assert sorted(_listed(page)) == ["ui-u1-a", "ui-u1-b"]
    expect(page.locator("#threads-note")).to_have_text("2 threads with user=u1, latest first")
    page.screenshot(path=str(stack.shots / "filtered.png"))

    # The filtered list is read again like the unfiltered one: a new match appears, a
    # thread of another user does not.
    stack.post("ui-u1-c", ["later"], metadata={"user": "u1"})
    stack.post("ui-u2-b", ["later"], metadata={"user": "u2"})
    expect(_row(page, "ui-u1-c")).to_be_visible(timeout=SHOWN_MS)
    assert sorted(_listed(page)) == ["ui-u1-a", "ui-u1-b", "ui-u1-c"]

    # A number typed is the number; quoted, the text (as the help text says).
    _filter(page, "rank", "5")
    expect(page.locator("#threads-note")).to_have_text(
        "1 thread with rank=5, latest first", timeout=SHOWN_MS
    )
    assert _listed(page) == ["ui-u1-a"]
    _filter(page, "rank", '"5"')
    expect(page.locator("#threads-note")).to_have_text(
        '1 thread with rank="5", latest first', timeout=SHOWN_MS
    )
    assert _listed(page) == ["ui-u1-b"]
    # A chip filters by its own value, written as the filter reads it.
    _row(page, "ui-u1-b").locator(".chip", has_text="user=u1").click()
    expect(page.locator("#filter-value")).to_have_value("u1")
    expect(page.locator("#threads tbody tr")).to_have_count(3, timeout=SHOWN_MS)

    _filter(page, "user", "nobody")
    expect(page.locator("#threads-none")).to_have_text(
        "No thread has user=nobody.", timeout=SHOWN_MS
    )
    expect(page.locator("#threads-empty")).to_be_hidden()

    page.click("#filter-clear")  # back to GET /threads: every thread
    expect(page.locator("#filter-clear")).to_be_hidden()
    expect(page.locator("#filter-key")).to_have_value("")
    expect(_row(page, "ui-u2-b")).to_be_visible(timeout=SHOWN_MS)
    expect(_row(page, "ui-u1-a")).to_be_visible()
    expect(page.locator("#threads-note")).to_contain_text("latest first")
    assert "with" not in (page.locator("#threads-note").text_content() or "")


def test_a_refused_filter_shows_the_api_s_message(stack: Stack, page: Page) -> None:
    stack.applied("ui-refused", stack.post("ui-refused", ["hi"]))
    expect(_row(page, "ui-refused")).to_be_visible(timeout=SHOWN_MS)
    _filter(page, "no spaces", "x")  # a key the API refuses: 422, naming the field
    refusal = page.locator("#filter-error")
    expect(refusal).to_contain_text('metadata["no spaces"]: a metadata key is', timeout=SHOWN_MS)
    expect(page.locator("#threads-note")).to_have_text("filter refused")
    expect(page.locator("#threads tbody tr")).to_have_count(0)  # not the unfiltered rows
    expect(page.locator("#threads-none")).to_be_hidden()
    page.wait_for_timeout(2500)  # a refresh later, the message still stands
    expect(refusal).to_be_visible()

    page.click("#filter-clear")
    expect(refusal).to_be_hidden()
    expect(_row(page, "ui-refused")).to_be_visible(timeout=SHOWN_MS)


def test_a_filter_value_is_typed_as_the_help_text_says(page: Page) -> None:
    """Text, except a JSON number or boolean; a quoted JSON string is its text. A chip
    writes its value so that the filter reads it back as the same value."""
    typed, round_trips = page.evaluate(
        """async () => {
          const { typedValue, shownValue } = await import("./panels.js");
          const typed = ["u1", " u1 ", "5", "-1.5e3", "true", "false", '"5"', '" a "',
                         "null", "1e999", "05", '"a"b"', ""].map(typedValue);
          const values = ["5", "true", " a ", '"q"', "", "x=y", 5, 1.5, false];
          return [typed, values.map((v) => typedValue(shownValue(v)) === v)];
        }"""
    )
    assert typed == [
        "u1", "u1", 5, -1500, True, False, "5", " a ", "null", "1e999", "05", '"a"b"', ""
    ]
    assert all(round_trips), round_trips
