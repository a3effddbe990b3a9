"""The ``threadfold`` subcommands (argument parsing is in :mod:`threadfold.workers.ops.cli`)."""

from __future__ import annotations

import argparse
import functools
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from pydantic import ValidationError

from threadfold.core.errors import InvalidInput, ThreadfoldError
from threadfold.core.keys import InvalidName
from threadfold.workers import wiring
from threadfold.workers.ops import demo, recompute_job
from threadfold.workers.ops.processes import API_ARGV, celery_argv
from threadfold.workers.ops.progress import Progress
from threadfold.workers.ops.stack import LocalStack, StackError, start_stack
from threadfold.workers.redact import mask, settings_error
from threadfold.workers.redisio import maxmemory
from threadfold.workers.runtime import recompute
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store
from threadfold.workers.threads import lifecycle
from threadfold.workers.threads._sync.listing import prune_threads


class CommandError(ThreadfoldError):
    """Raised for a failure the user can act on; printed without a traceback."""


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        # Not pydantic's own text: it quotes the values given (a URL with its password).
        raise CommandError(f"bad THREADFOLD_* setting: {settings_error(exc)}") from None


def _store(settings: Settings) -> Store:
    # A few reconnects: a command should fail soon, not ride out a long outage.
    return wiring.store(settings, wiring.redis(settings, retries=3))


def _exec(argv: list[str]) -> int:
    os.execvp(argv[0], argv)  # noqa: S606  # replaces this process: signals reach the server


def cmd_api(args: argparse.Namespace) -> int:
    return _exec(API_ARGV)


def cmd_worker(args: argparse.Namespace) -> int:
    return _exec(celery_argv("worker", _settings(), f"--concurrency={args.concurrency}"))


def cmd_beat(args: argparse.Namespace) -> int:
    return _exec(celery_argv("beat", _settings()))


def _redis_url_override() -> str | None:
    return os.environ.get("REDIS_URL") or os.environ.get("THREADFOLD_REDIS_URL")


def _run_demo(settings: Settings, api_url: str) -> None:
    app = wiring.celery(settings)
    store = _store(settings)
    producer = wiring.producer(settings, store.client, wiring.waker(settings, app))
    demo.run(producer, store, api_url)
    app.close()


def cmd_up(args: argparse.Namespace) -> int:
    settings = _settings()
    url = _redis_url_override()
    print(
        "threadfold: starting "
        + ("with Redis at REDIS_URL" if url else "a private redis-server")
        + f", a Celery worker of {args.workers} pool process(es), beat and the API ..."
    )
    try:
        stack = start_stack(
            settings,
            redis_url=url,
            workers=args.workers,
            port=args.port,
            data_dir=args.data_dir.resolve(),
        )
    except StackError as exc:
        raise CommandError(str(exc)) from exc
    _print_urls(stack, _write_client_env(stack, settings))
    try:
        if args.demo:
            _run_demo(stack.client_settings(settings), stack.api_url)
        if not args.exit:
            print("\nRunning. Ctrl-C stops every process.", flush=True)
            _wait_for_signal(stack)
    except StackError as exc:
        raise CommandError(str(exc)) from exc
    finally:
        print("threadfold: stopping ...")
        stack.stop()
    return 0


def _write_client_env(stack: LocalStack, settings: Settings) -> Path:
    """The settings a ``threadfold.Client`` of this stack needs, as a file to ``source``.

    The private Redis and broker listen on free ports, so ``Client()`` in another shell
    cannot guess them. The file is made 0600 before anything is written to it: a Redis
    given by ``REDIS_URL`` may carry a password, which is never printed.
    """
    client = stack.client_settings(settings)
    values = {
        "THREADFOLD_REDIS_URL": client.redis_url.get_secret_value(),
        "THREADFOLD_BROKER_URL": client.broker,
        "THREADFOLD_QUEUE": client.queue,
        "THREADFOLD_KEY_PREFIX": client.key_prefix,
    }
    path = stack.data_dir / "env"
    path.unlink(missing_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
        out.writelines(f"export {name}={shlex.quote(value)}\n" for name, value in values.items())
    return path


def _print_urls(stack: LocalStack, env: Path) -> None:
    print(f"  API       {stack.api_url}   (OpenAPI: {stack.api_url}/openapi.json)")
    print(f"  watch     {stack.api_url}/ui   (threads, live transcripts, the pipeline)")
    print(f"  metrics   {stack.api_url}/metrics")
    print(f"  Redis     {mask(stack.redis_url)}")
    if stack.broker_url:
        print(f"  broker    {mask(stack.broker_url)}")
    print(f"  clients   source {env}   (then threadfold.Client() finds this stack)")
    # Flushed: when stdout is a pipe or a file, the lines are read as the stack runs.
    print(f"  logs      {stack.data_dir / 'logs'}", flush=True)


def _wait_for_signal(stack: LocalStack) -> None:
    stop = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, handler)
    say = functools.partial(print, flush=True)
    try:
        while not stop:
            stack.supervise(say)  # a part that exited is started again, and said so
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass


def cmd_demo(args: argparse.Namespace) -> int:
    _run_demo(_settings(), args.api)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    settings = _settings()
    store = _store(settings)
    if args.thread:
        found = store.status(f"{args.tenant}/{args.thread}")
        if found is None:
            raise CommandError(f"no such thread: {args.thread!r} (never written, or deleted)")
        for name in found.__struct_fields__:
            if name not in ("thread_id", "skipped"):
                print(f"{name:<18} {getattr(found, name)}")
        print(f"{'skipped':<18} {len(found.skipped)}")
        for skipped in found.skipped:
            print(f"  entry {skipped.entry}: {skipped.reason}")
        return 0
    memory = maxmemory.read(store.client)
    for node in memory:
        print(f"{'redis memory:':<24}{maxmemory.describe(node)}")
    # One read per bucket lists each thread with the backlog it had as it was listed.
    listing = store.listing(range(settings.buckets), limit=_LISTED)
    print(f"threads with a backlog: {listing.with_backlog}")
    for t in listing.backlog:
        print(f"  {t.ref:<40} backlog {t.backlog:>7}  version {t.version}")
    _more(listing.with_backlog, len(listing.backlog))
    print(f"quarantined threads:    {listing.quarantined}")
    for t in listing.quarantine:
        print(f"  {t.ref:<40} backlog {t.backlog:>7}  entry {t.entry}: {t.reason}")
    _more(listing.quarantined, len(listing.quarantine))
    unfit = any(node.evicting or node.full for node in memory)
    return 1 if listing.quarantined or unfit else 0


_LISTED = 20  # threads of each kind the listing names (the oldest first)


def _more(total: int, shown: int) -> None:
    if total > shown:
        print(f"  ... and {total - shown} more")


def cmd_retry(args: argparse.Namespace) -> int:
    settings = _settings()
    ref = f"{args.tenant}/{args.thread}"
    done = _store(settings).retry(ref, settings.wake_ttl_ms, skip=args.skip)
    if done is None:
        raise CommandError(f"no such thread: {args.thread!r} (never written, or deleted)")
    if done.woke:
        app = wiring.celery(settings)
        wiring.waker(settings, app).wake([ref])
        app.close()
    said = ["quarantine lifted" if done.was_quarantined else "the thread was not quarantined"]
    if done.skipped:
        said.append(f"skipped entry {done.skipped}")
    elif args.skip:
        said.append(f"nothing skipped ({done.not_skipped})")
    if done.backlog:
        said.append("drain scheduled" if done.woke else "a drain was already scheduled")
    else:
        said.append("no backlog")
    print("; ".join(said))
    return 0 if done.skipped or not args.skip else 1


def cmd_recompute(args: argparse.Namespace) -> int:
    settings = _settings()
    store = _store(settings)
    if args.dry_run and not args.rebuild:
        raise CommandError("--dry-run goes with --rebuild (an audit writes nothing anyway)")
    mode: recompute.Mode = (
        "audit" if args.audit else "dry-run" if args.dry_run else "rebuild"
    )
    try:
        refs = recompute_job.select(
            store,
            [t for t in args.threads.split(",") if t] if args.threads is not None else [],
            tenant=args.tenant,
            prefix=args.prefix,
            every=args.all,
        )
    except recompute_job.SelectionError as exc:
        raise CommandError(str(exc)) from None
    if not refs:
        print(f"{mode}: no threads selected")
        return 0
    app = wiring.celery(settings)
    job = recompute_job.start(app, settings, refs, mode)
    app.close()
    progress = Progress("threads")
    summary = recompute_job.wait(store, settings, job, refs, progress, args.timeout)
    progress.close()
    print("\n".join(recompute_job.report(summary, mode, args.timeout)))
    return recompute_job.exit_code(summary, mode)


def _metadata_args(given: list[str]) -> dict[str, object]:
    """``KEY=VALUE`` pairs; a value that is a JSON number or boolean is that value (as the
    API would have been sent it), anything else a string."""
    found: dict[str, object] = {}
    for pair in given:
        key, sep, value = pair.partition("=")
        if not sep:
            raise CommandError(f"--metadata takes KEY=VALUE; got {pair!r}")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        found[key] = parsed if isinstance(parsed, bool | int | float) else value
    return found


def cmd_prune(args: argparse.Namespace) -> int:
    settings = _settings()
    store = _store(settings)
    try:
        asked = lifecycle.pruned(
            tenant=args.tenant,
            prefix=args.prefix,
            metadata=_metadata_args(args.metadata) or None,
            idle_seconds=args.idle,
            dry_run=args.dry_run,
        )
    except (InvalidInput, InvalidName) as exc:
        raise CommandError(str(exc)) from None
    progress = Progress("buckets")
    done = 0

    def advanced(n: int) -> None:
        nonlocal done
        done += n
        progress(done, settings.buckets)

    removed = prune_threads(store.client, settings.keyspace, asked, advanced)
    progress.close()
    print(f"{'would remove' if args.dry_run else 'removed'} {removed} thread(s)")
    return 0


def cmd_loadtest(args: argparse.Namespace) -> int:
    run = [
        sys.executable,
        "-m",
        # The installed package's name: `loadtests` is only importable from a checkout.
        "threadfold.loadtests",
        "--users",
        str(args.users),
        "--spawn-rate",
        str(args.spawn_rate),
        "--duration",
        str(args.duration),
        "--out",
        str(args.out),
    ]
    if args.host:
        return subprocess.call([*run, "--host", args.host])  # noqa: S603
    settings = _settings()
    try:
        stack = start_stack(
            settings,
            redis_url=_redis_url_override(),
            workers=args.workers,
            port=0,
            data_dir=Path(".threadfold").resolve(),
        )
    except StackError as exc:
        raise CommandError(str(exc)) from exc
    try:
        return subprocess.call([*run, "--host", stack.api_url])  # noqa: S603
    finally:
        stack.stop()


def cmd_bench(args: argparse.Namespace) -> int:
    if not Path("bench").is_dir():
        raise CommandError("the benchmarks run from a source checkout (no bench/ folder here)")
    extra = ["--quick"] if args.quick and "--quick" not in args.args else []
    argv = [sys.executable, "-m", f"bench.{args.which}", *extra, *args.args]
    return subprocess.call(argv)  # noqa: S603
