"""Where an LLM call may connect: the resolver the worker's sessions use refuses a name
that resolves to a link-local or metadata address (reviewapp/core/llm_endpoints.py)."""

import asyncio
import socket

import pytest

from reviewapp.core.judging.transport import EndpointRefused
from reviewapp.core.llm_endpoints import EndpointPolicy, PolicyResolver


class Answers:
    """A resolver answering what it is told to, as DNS (or a rebinding attacker) would."""

    def __init__(self, *addresses: str):
        self.addresses = addresses

    async def resolve(self, host, port=0, family=socket.AF_INET):
        return [
            {"hostname": host, "host": a, "port": port, "family": family, "proto": 0, "flags": 0}
            for a in self.addresses
        ]

    async def close(self):
        pass


def resolve(*addresses: str, host: str = "llm.example", policy: EndpointPolicy | None = None):
    resolver = PolicyResolver(policy or EndpointPolicy(), Answers(*addresses))
    return asyncio.run(resolver.resolve(host, 443))


def test_a_name_resolving_to_the_metadata_service_is_refused():
    with pytest.raises(EndpointRefused, match="llm.example resolves to 169.254.169.254 is a link"):
        resolve("10.0.0.5", "169.254.169.254")


def test_a_name_resolving_to_private_addresses_is_used():
    assert [r["host"] for r in resolve("10.0.0.5", "fd12::1")] == ["10.0.0.5", "fd12::1"]


def test_a_metadata_name_is_refused_before_it_is_resolved():
    with pytest.raises(EndpointRefused, match="cloud metadata service"):
        resolve("10.0.0.5", host="metadata.google.internal")


def test_the_allow_list_admits_a_shared_address():
    policy = EndpointPolicy.from_names(["100.64.0.0/10"])
    assert resolve("100.64.3.4", policy=policy)
    with pytest.raises(EndpointRefused, match="neither public nor private"):
        resolve("100.64.3.4")
