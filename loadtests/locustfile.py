"""Locust users that behave like threadfold's clients, a step-load shape, and the check.

* :class:`AgentWriter`: multi-agent frameworks writing to shared threads: chat turns,
  assistant tool calls then their results, edits and removals of earlier messages by id,
  bursts of streamed chunks of one run id, and, rarely, ``__remove_all__``.
* :class:`ChatReader`: a chat UI, read-your-writes: post, then read the state with
  ``min_version`` = the answered version; its conversation is its own, so the read is
  compared exactly with what it wrote.
* :class:`BatchJob`: a batch job posting ``/deltas`` with many deltas across threads.

A sample of writes is followed by a probe (``min_version`` + ``wait``, no messages) whose
time from the 202 to the state reaching the version is reported as ``VISIBLE
enqueue->visible``, beside the HTTP entries. When the test stops, every thread this
process wrote is checked (:mod:`threadfold.loadtests.check`); a difference fails the run.

Thread ids start with a per-process tag, so processes of a distributed run (or runs
against the same deployment) never check each other's threads.
"""

from __future__ import annotations

import itertools
import logging
import random
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import gevent  # type: ignore[import-untyped]  # Locust's own dependency; no type hints
from locust import FastHttpUser, LoadTestShape, events, task
from locust.env import Environment
from locust.runners import MasterRunner

from threadfold.loadtests import workload
from threadfold.loadtests.check import Api, check_threads
from threadfold.loadtests.config import LoadConfig, options, parse_stages, stage_at, step_stages
from threadfold.testing import Ledger, Outgoing, describe

log = logging.getLogger("loadtests")
TAG = f"lt{secrets.token_hex(4)}"
DELTAS = "POST /threads/[id]/deltas"
BULK = "POST /deltas"
_CSV_TICK_S = 1.5  # Locust writes the stats CSV every second: let it record the CHECK row
_REFUSED = range(400, 500)
_RETRYABLE = {408, 429}
T = TypeVar("T")


def loose(value: object) -> Any:
    """Locust's API is partly untyped: calls go through this, checked at run time only."""
    return value


@dataclass
class RunState:
    """This process's knobs and record of what it sent."""

    config: LoadConfig = field(default_factory=LoadConfig)
    ledger: Ledger = field(default_factory=lambda: Ledger(compact=True))
    book: workload.IdBook = field(default_factory=workload.IdBook)
    sequence: itertools.count[int] = field(default_factory=itertools.count)
    in_flight: set[Any] = field(default_factory=set)
    checked: bool = False

    def shielded(self, job: Callable[[], T]) -> T:
        """Run ``job`` (a write and its ledger entry) in a greenlet of its own, to its end.

        Locust's graceful stop can kill a user that has just woken from its wait and is
        mid-request; the write would be stored with its answer lost. A killed user only
        stops waiting here; the check first waits for every write still running.
        """
        greenlet = gevent.spawn(job)
        self.in_flight.add(greenlet)
        greenlet.link(self.in_flight.discard)
        result: T = greenlet.get()
        return result

    def finish_writes(self, timeout: float) -> None:
        gevent.joinall(list(self.in_flight), timeout=timeout)


STATE = RunState()


def _add_options(parser: Any) -> None:
    for flag, env_var, kind, default, text in options():
        parser.add_argument(flag, type=kind, env_var=env_var, default=default, help=text)


def _configure(environment: Environment, **_: Any) -> None:
    STATE.config = config = LoadConfig.from_options(environment.parsed_options)
    STATE.ledger = Ledger(merge_chunks=config.merge_chunks, compact=True)
    parse_stages(config.stages)  # a malformed --stages fails now, not mid-run
    # Locust reads the weights when it spawns users, after this event.
    AgentWriter.weight = config.writer_weight
    ChatReader.weight = config.reader_weight
    BatchJob.weight = config.bulk_weight
    # With a shape, Locust installs its SIGTERM handler only once the shape has ended, so
    # a SIGTERM (CI cancel, docker stop) would end the run with no check: make it Ctrl+C.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    log.info("load test tag %s: threads %s-*", TAG, TAG)


class ThreadfoldUser(FastHttpUser):
    """Sending deltas with the ledger kept exact, and the enqueue->visible probe."""

    abstract = True
    think = (0.1, 1.0)

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        self.rng = random.Random(secrets.randbits(64))  # noqa: S311  # workload, not secrets

    def on_start(self) -> None:
        if STATE.config.token:
            self.client.auth_header = f"Bearer {STATE.config.token}"

    def wait_time(self) -> float:
        low, high = self.think
        return self.rng.uniform(low, high) * STATE.config.think_scale

    def shared_thread(self) -> str:
        return f"{TAG}-s{self.rng.randrange(max(1, STATE.config.threads))}"

    def delta_id(self) -> str | None:
        if self.rng.random() < STATE.config.delta_id_fraction:
            return f"{TAG}-d{next(STATE.sequence)}"
        return None

    def send(
        self, thread_id: str, messages: list[Any], name: str = DELTAS
    ) -> dict[str, Any] | None:
        """POST one delta; its answer once the ledger has it, else None."""
        delta_id = self.delta_id()
        out = STATE.ledger.begin(thread_id, messages, delta_id)
        body: dict[str, Any] = {"messages": messages}
        if delta_id is not None:
            body["delta_id"] = delta_id
        path = f"/threads/{thread_id}/deltas"

        def post() -> list[dict[str, Any]] | None:
            with self.client.post(path, json=body, name=name, catch_response=True) as response:
                return self._settle(response, [out])

        results = STATE.shielded(post)
        if results is None:
            return None
        STATE.book.learn(thread_id, messages, results[0]["ids"])
        return results[0]

    def send_bulk(self, items: list[tuple[str, list[Any]]]) -> list[dict[str, Any]]:
        """POST /deltas; the answers once the ledger has them (none when it failed)."""
        outs = [STATE.ledger.begin(t, m, self.delta_id()) for t, m in items]
        body = {"deltas": [_bulk_item(out) for out in outs]}

        def post() -> list[dict[str, Any]] | None:
            with self.client.post("/deltas", json=body, name=BULK, catch_response=True) as rsp:
                return self._settle(rsp, outs)

        results = STATE.shielded(post) or []
        for (thread_id, messages), accepted in zip(items, results, strict=True):
            STATE.book.learn(thread_id, messages, accepted["ids"])
        return results

    def _settle(self, response: Any, outs: list[Outgoing]) -> list[dict[str, Any]] | None:
        """Record the outcome of a write in the ledger and in Locust's stats; the answers
        (each with the moment it arrived, where enqueue->visible starts) or None."""
        status = response.status_code
        if status == 202:
            answered_at = time.perf_counter()
            body = response.json()
            results: list[dict[str, Any]] = body.get("results", [body])
            for out, accepted in zip(outs, results, strict=True):
                STATE.ledger.accept(out, accepted["version"], accepted["ids"])
                accepted["answered_at"] = answered_at
            response.success()
            return results
        if status in _REFUSED and status not in _RETRYABLE:
            for out in outs:  # validated before anything is appended: nothing was stored
                STATE.ledger.abandon(out)
        # Otherwise the outcome is unknown: the outs stay pending and are settled (re-sent
        # with their delta_id, or the thread marked unverifiable) before the check.
        response.failure(f"HTTP {status}: {(response.text or '')[:200]}")
        return None

    def maybe_probe(self, accepted: dict[str, Any]) -> None:
        """For a sample of writes: time from the 202 until the state reaches its version."""
        if self.rng.random() >= STATE.config.visible_sample:
            return
        wait, version = STATE.config.wait_seconds, accepted["version"]
        path = f"/threads/{accepted['thread_id']}/state?min_version={version}&wait={wait:g}"
        name = "GET /threads/[id]/state (visibility probe)"
        # limit=0: the version only, so the probe costs the same on any thread size.
        with self.client.get(path + "&limit=0", name=name, catch_response=True) as response:
            error = None if response.status_code == 200 else _http_error(response)
            if error is None:
                response.success()
            else:
                response.failure(error)
        # The API polls the version at 2, 4, 8, ... 50 ms intervals while it waits: this is
        # the latency a read-your-writes client sees, a little above the commit's own.
        loose(self.environment.events.request).fire(
            request_type="VISIBLE",
            name="enqueue->visible",
            response_time=(time.perf_counter() - accepted["answered_at"]) * 1000,
            response_length=0,
            exception=error,
            context={},
        )


def _bulk_item(out: Outgoing) -> dict[str, Any]:
    item: dict[str, Any] = {"thread_id": out.thread_id, "messages": out.messages}
    if out.delta_id is not None:
        item["delta_id"] = out.delta_id
    return item


def _http_error(response: Any) -> Exception:
    return RuntimeError(f"HTTP {response.status_code}: {(response.text or '')[:200]}")


class AgentWriter(ThreadfoldUser):
    """Agents of a multi-agent system appending to, editing and streaming into threads."""

    weight = 6
    think = (0.05, 0.5)

    def on_start(self) -> None:
        super().on_start()
        self.thread = self.shared_thread()

    def chars(self) -> int:
        return STATE.config.message_chars

    def next_thread(self) -> str:
        """Agents stay on a conversation for a while, then move to another."""
        if self.rng.random() < 0.3:
            self.thread = self.shared_thread()
        return self.thread

    def write(self, messages: list[Any], name: str = DELTAS) -> dict[str, Any] | None:
        accepted = self.send(self.thread, messages, name)
        if accepted is not None:
            self.maybe_probe(accepted)
        return accepted

    @task(10)
    def chat_turn(self) -> None:
        self.next_thread()
        self.write(workload.turn(self.rng, self.chars(), TAG))

    @task(4)
    def tool_round(self) -> None:
        """The assistant calls tools, then their results arrive as a second delta."""
        self.next_thread()
        assistant, results = workload.tool_call(self.rng, self.chars(), TAG)
        if self.write([assistant]) is not None:
            self.write(results)

    @task(3)
    def stream(self) -> None:
        """Chunks of one run id, each its own delta, then (mostly) the final message."""
        self.next_thread()
        parts = workload.chunks(self.rng, self.chars(), STATE.config.chunks)
        for part in parts:
            self.send(self.thread, [part], f"{DELTAS} (chunk)")
        if self.rng.random() < STATE.config.stream_final:
            final = workload.chat("assistant", parts[-1]["content"], parts[-1]["id"])
            self.write([final])

    @task(3)
    def edit_earlier(self) -> None:
        picked = STATE.book.pick(self.rng, self.next_thread())
        if picked is not None:
            ident, role = picked
            self.write([workload.edit(self.rng, self.chars(), ident, role)])

    @task(2)
    def remove_earlier(self) -> None:
        picked = STATE.book.pick(self.rng, self.next_thread())
        if picked is not None:
            STATE.book.forget(self.thread, picked[0])
            self.write([workload.removal(picked[0])])

    @task(1)
    def start_over(self) -> None:
        """Rarely (about 1 task in 100), a thread is cleared and re-seeded."""
        self.next_thread()
        if self.rng.random() < 0.25:
            STATE.book.forget(self.thread)
            system = workload.chat("system", workload.text(self.rng, self.chars()))
            self.write([workload.removal(workload.REMOVE_ALL), system])
        else:
            self.write(workload.turn(self.rng, self.chars(), TAG))


class ChatReader(ThreadfoldUser):
    """A chat UI: posts the user's message, reads the thread at that version, answers."""

    weight = 3
    think = (0.5, 2.0)

    def on_start(self) -> None:
        super().on_start()
        self.uid = next(STATE.sequence)
        self.conversation = 0
        self.turns = 0

    def thread(self) -> str:
        if self.turns >= STATE.config.conversation_turns:
            self.conversation, self.turns = self.conversation + 1, 0
        return f"{TAG}-c{self.uid}-{self.conversation}"

    @task
    def read_your_writes(self) -> None:
        thread, chars = self.thread(), STATE.config.message_chars
        self.turns += 1
        accepted = self.send(thread, [workload.chat("user", workload.text(self.rng, chars))])
        if accepted is None:
            return
        self.read(thread, accepted["version"])
        self.send(thread, [workload.chat("assistant", workload.text(self.rng, chars))])

    def read(self, thread: str, version: str) -> None:
        """The state at ``version``, compared exactly with what this user wrote to it."""
        wait = STATE.config.wait_seconds
        path = f"/threads/{thread}/state?min_version={version}&wait={wait:g}"
        name = "GET /threads/[id]/state (read-your-writes)"
        with self.client.get(path, name=name, catch_response=True) as response:
            if response.status_code != 200:
                response.failure(_http_error(response))
                return
            problem = _own_thread_problem(thread, response.json()["messages"])
            if problem is None:
                response.success()
            else:
                log.error("read-your-writes on %s: %s", thread, problem)
                response.failure(f"read-your-writes: {problem}")


def _own_thread_problem(thread: str, messages: list[Any]) -> str | None:
    """How the read differs from the fold of this user's writes (only it writes there)."""
    if not STATE.ledger.settled(thread):  # a lost write: the fold would be a guess
        return None
    expected = STATE.ledger.expected_dump(thread)
    return None if messages == expected else describe(expected, messages)


class BatchJob(ThreadfoldUser):
    """A batch job importing many deltas across threads in one request."""

    weight = 1
    think = (1.0, 3.0)

    @task
    def import_batch(self) -> None:
        chars = STATE.config.message_chars
        items = [
            (self.shared_thread(), self.batch_messages(chars))
            for _ in range(STATE.config.bulk_size)
        ]
        results = self.send_bulk(items)
        if results:
            self.maybe_probe(self.rng.choice(results))

    def batch_messages(self, chars: int) -> list[Any]:
        if self.rng.random() < 0.2:
            assistant, results = workload.tool_call(self.rng, chars, TAG)
            return [assistant, *results]
        return workload.turn(self.rng, chars, TAG)


class StepLoadShape(LoadTestShape):
    """``--stages`` as given, or ``-u`` reached in ``--steps`` equal steps over ``-t``.

    With a shape Locust does not enforce ``-t`` itself (its timer starts only once the
    shape has finished), so the shape stops the test at the run time too.
    """

    use_common_options = True

    def tick(self) -> tuple[int, float] | None:
        assert self.runner is not None
        options = self.runner.environment.parsed_options
        run_time = float(getattr(options, "run_time", 0) or 0) or None
        stages = parse_stages(STATE.config.stages) or step_stages(
            int(getattr(options, "num_users", 0) or 1),
            float(getattr(options, "spawn_rate", 0) or 1),
            run_time,
            STATE.config.steps,
        )
        return stage_at(stages, loose(self).get_run_time(), run_time)


def _test_started(environment: Environment, **_: Any) -> None:
    STATE.checked = False


def _test_stopped(environment: Environment, **_: Any) -> None:
    """Users are stopped: check every thread this process wrote (once per test)."""
    if STATE.checked or isinstance(environment.runner, MasterRunner):
        return
    STATE.checked = True
    STATE.finish_writes(STATE.config.wait_seconds + 30)
    try:
        run_check(environment)
    except Exception:  # a check that could not run has not passed
        log.exception("the correctness check failed to run")
        environment.process_exit_code = 1


def _quitting(environment: Environment, **_: Any) -> None:
    # On Ctrl+C or SIGTERM Locust stops the runner only after it chose the exit code;
    # stopping it here first runs the check while its verdict can still count.
    if environment.runner is not None:
        environment.runner.stop()


def run_check(environment: Environment) -> None:
    """Check, report it as a CHECK entry and in the summary file; fail the run on a diff."""
    config = STATE.config
    api = Api(environment.host or "", config.token, timeout=config.wait_seconds + 30)
    started = time.perf_counter()
    report = check_threads(api, STATE.ledger, config.wait_seconds, config.check_concurrency)
    failure = (
        None
        if report.ok
        else AssertionError(
            f"{len(report.differences)} of {report.threads_checked} threads differ from the fold"
        )
    )
    loose(environment.events.request).fire(
        request_type="CHECK",
        name="state == fold of sent deltas",
        response_time=(time.perf_counter() - started) * 1000,
        response_length=report.threads_checked,
        exception=failure,
        context={},
    )
    if config.check_summary:
        report.write(Path(config.check_summary.replace("{tag}", TAG)), tag=TAG)
    if failure is not None:
        environment.process_exit_code = 1
    time.sleep(_CSV_TICK_S)


for _hook, _handler in [
    (events.init_command_line_parser, _add_options),
    (events.init, _configure),
    (events.test_start, _test_started),
    (events.test_stop, _test_stopped),
    (events.quitting, _quitting),
]:
    loose(_hook).add_listener(_handler)
