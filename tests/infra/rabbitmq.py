"""RabbitMQ for tests: a vhost of a test's own on the machine's broker.

Unlike Redis, RabbitMQ is not started by the tests: it is a service of the machine (and
of CI's, on 127.0.0.1:5672 with the ``guest`` administrator), administered with
``rabbitmqctl``. Each test gets a fresh vhost, deleted afterwards, so the queues,
unacknowledged messages and connections of one test never reach another test, nor
pytest-xdist's other process.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from tests.infra.processes import pid_alive

HOST, PORT = "127.0.0.1", 5672
#: RabbitMQ's default administrator, which may log in from the loopback only.
USER = PASSWORD = "guest"  # noqa: S105  # a well-known default, not a secret
#: Where the Debian package puts it; the PATH's is taken first.
RABBITMQCTL = "/usr/sbin/rabbitmqctl"
#: ``threadfold-test-<pid of the pytest process>-<random>``: the pid lets a later session
#: delete the vhosts of a session that was killed before its teardown.
PREFIX = "threadfold-test-"
_OURS = re.compile(rf"^{PREFIX}(\d+)-[0-9a-f]+$")


class RabbitMQUnavailable(Exception):
    """The machine's RabbitMQ cannot serve a test (the message says why)."""


def rabbitmqctl() -> str:
    found = shutil.which("rabbitmqctl") or RABBITMQCTL
    if not os.access(found, os.X_OK):
        raise RabbitMQUnavailable(f"no rabbitmqctl (looked on the PATH and at {RABBITMQCTL})")
    return found


def _ctl(*args: str) -> str:
    """Run ``rabbitmqctl args``; its output, or RabbitMQUnavailable with its error."""
    try:
        done = subprocess.run(
            [rabbitmqctl(), "--quiet", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RabbitMQUnavailable(f"rabbitmqctl {args[0]} did not answer in 60 s") from exc
    if done.returncode != 0:
        error = (done.stderr or done.stdout).strip()
        raise RabbitMQUnavailable(f"rabbitmqctl {' '.join(args)}: {error}")
    return done.stdout


def check_reachable(port: int = PORT) -> None:
    """Raise RabbitMQUnavailable unless the broker listens and ``rabbitmqctl`` reaches it."""
    try:
        socket.create_connection((HOST, port), timeout=2).close()
    except OSError as exc:
        raise RabbitMQUnavailable(f"nothing listens on {HOST}:{port} ({exc})") from exc
    _ctl("list_vhosts")


def vhosts() -> list[str]:
    return _ctl("list_vhosts", "name", "--no-table-headers").split()


def delete_leftovers() -> list[str]:
    """Delete the vhosts that sessions killed before their teardown left; their names."""
    names = vhosts()
    gone = [n for n in names if (m := _OURS.match(n)) and not pid_alive(int(m.group(1)))]
    for name in gone:
        try:
            _ctl("delete_vhost", name)
        except RabbitMQUnavailable:  # pytest-xdist's other process deleted it first
            continue
    return gone


@contextmanager
def vhost() -> Iterator[str]:
    """A new vhost the guest user may use, deleted (with its queues) on exit; yields its
    ``amqp://`` URL."""
    name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    _ctl("add_vhost", name)
    try:
        _ctl("set_permissions", "-p", name, USER, ".*", ".*", ".*")
        yield f"amqp://{USER}:{PASSWORD}@{HOST}:{PORT}/{name}"
    finally:
        _ctl("delete_vhost", name)
