import socket
from pathlib import Path

import pytest

from tests.support.ports import refused_port, restartable_port


def test_a_restartable_port_lies_below_the_ephemeral_range_and_is_free():
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    port = restartable_port()
    assert 1024 <= port < low
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))


def test_connecting_to_the_refused_port_is_refused_and_no_one_can_take_it():
    port = refused_port()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass
    with pytest.raises(OSError), socket.socket() as server:
        server.bind(("127.0.0.1", port))
