"""Loopback ports for the servers tests start."""

import functools
import random
import socket
from pathlib import Path

# A port free now, from the kernel's ephemeral range: for a server bound at once. The
# benchmarks' own, so tests and benchmarks find one the same way.
from benchmarks.support.processes import free_port

__all__ = ["free_port", "refused_port", "restartable_port"]


def restartable_port() -> int:
    """A free port below the ephemeral range, for a server a test stops and starts again
    on the same port: between the two, the kernel hands ephemeral ports to every outgoing
    connection of the run's other processes, and one took a witness's port (CI, stop 49)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for port in random.sample(range(max(1024, low - 12000), low), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


@functools.cache
def _bound_not_listening() -> socket.socket:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    return holder


def refused_port() -> int:
    """A loopback port nothing listens on, so connecting is refused: it stays bound, never
    listening, for the whole run, so no other process's server can take it meanwhile."""
    return _bound_not_listening().getsockname()[1]
