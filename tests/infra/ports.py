"""Free loopback ports, chosen by the kernel."""

from __future__ import annotations

import socket

HOST = "127.0.0.1"
CLUSTER_BUS_OFFSET = 10000
_MAX_PORT = 65535
_ATTEMPTS = 200


def free_port(*, cluster_bus: bool = False) -> int:
    """A loopback port nothing is bound to right now.

    With `cluster_bus`, port + 10000 (where a Redis Cluster node listens for its peers) is
    free too. The port is released before returning, so another process can still take
    it; services started on it retry with a fresh port when that race is lost.
    """
    for _ in range(_ATTEMPTS):
        port = _bind_and_release(0)
        if not cluster_bus or _is_free(port + CLUSTER_BUS_OFFSET):
            return port
    raise OSError(f"no free loopback port found in {_ATTEMPTS} attempts")


def _is_free(port: int) -> bool:
    if port > _MAX_PORT:
        return False
    try:
        _bind_and_release(port)
    except OSError:
        return False
    return True


def _bind_and_release(port: int) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, port))
        bound: int = sock.getsockname()[1]
        return bound
