import socket
from pathlib import Path

from tests.support.ports import restartable_port


def test_a_restartable_port_lies_below_the_ephemeral_range_and_is_free():
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    port = restartable_port()
    assert 1024 <= port < low
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
