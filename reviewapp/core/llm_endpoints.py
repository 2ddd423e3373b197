"""Where an LLM lens may send its prompts, and its API key with them.

Refused at configuration (the lens, a replay's drafted endpoint) and again
for every address a call connects to:

- credentials in the URL: the URL is stored, shown in the admin and logged,
  and the key has its own place (an environment variable the lens names);
- link-local addresses and the cloud metadata services, always: a key sent
  there is handed to whoever answers on the instance (169.254.169.254);
- not globally routable addresses other than private and loopback ranges
  (shared address space, reserved, documentation ranges, tunnels), unless an
  operator lists their network. Private ranges and loopback stay allowed:
  local model servers are common.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from .judging.transport import EndpointRefused
from .webhooks import carried_ipv4

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

KEY_GOES = (
    "put the key in an environment variable on the workers and name that variable in "
    "'API key variable' (it is sent as 'Authorization: Bearer')"
)
# Cloud metadata services outside the link-local ranges (those are refused whole):
# AWS's IPv6 one, and Alibaba Cloud's in the shared address space.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("fd00:ec2::254", "100.100.100.200")
)
# Private ranges a local model server may sit in (RFC 1918, IPv6 unique local); loopback
# is allowed too. Python's `is_private` also holds reserved and documentation ranges.
PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)


# The metadata services' names (they resolve to the addresses refused below, on the cloud).
METADATA_HOSTNAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata", "instance-data"}
)


def base_url_problem(url: str, policy: EndpointPolicy | None = None) -> str | None:
    """Why `url` cannot be an LLM endpoint's base URL: its form, and its host when it is
    an address or a metadata service's name (a name's addresses are checked at each call,
    `PolicyResolver`)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as exc:
        return f"not a URL: {exc}"
    if parts.scheme not in ("http", "https"):
        return "the base URL must start with http:// or https://"
    if parts.username or parts.password:
        return (
            "the base URL must not carry credentials (user:password@): it is stored and shown "
            f"in the admin; remove them, and {KEY_GOES}"
        )
    if not parts.hostname:
        return "the base URL names no host"
    problem = host_problem(parts.hostname, policy or EndpointPolicy())
    if problem:
        return f"{problem}: an LLM endpoint may not be called there"
    return None


def host_problem(host: str, policy: EndpointPolicy) -> str | None:
    """Why `host` (an address or a name, before resolving it) may not be called, or None."""
    if host.rstrip(".").lower() in METADATA_HOSTNAMES:
        return f"{host} is a cloud metadata service"
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None  # a name: its addresses are checked when it is resolved
    return policy.refusal(host.strip("[]"))


@dataclass(frozen=True)
class EndpointPolicy:
    """Which resolved addresses an LLM call may connect to (see the module's docstring)."""

    allowed_networks: tuple[IpNetwork, ...] = ()

    @classmethod
    def from_names(cls, networks: Iterable[str]) -> EndpointPolicy:
        return cls(tuple(ipaddress.ip_network(n, strict=False) for n in networks))

    def refusal(self, address: str) -> str | None:
        """Why `address` may not be called with a lens's key, or None."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        carried = carried_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
        for inner in carried.ipv4 if carried else ():
            problem = self._always_refused(inner)
            if problem:
                return f"{ip} is {carried.form} carrying {inner}, and {problem}"
        problem = self._always_refused(ip)
        if problem:
            return problem
        if any(ip in network for network in self.allowed_networks):
            return None
        private = any(ip in network for network in PRIVATE_NETWORKS)
        if ip.is_loopback or private or ip.is_global:
            if carried is not None and not carried.in_use:
                return f"{ip} is {carried.form}: a tunnel or translator form, not an endpoint"
            return None
        return f"{ip} is a reserved or shared address (neither public nor private)"

    @staticmethod
    def _always_refused(ip) -> str | None:
        if ip in METADATA_ADDRESSES:
            return f"{ip} is a cloud metadata service"
        if ip.is_link_local:  # 169.254.169.254, the usual metadata service, is here
            return f"{ip} is a link-local address (cloud metadata services live there)"
        if ip.is_unspecified:
            return f"{ip} is the unspecified address"
        if ip.is_multicast:
            return f"{ip} is a multicast address"
        return None


class PolicyResolver(AbstractResolver):
    """aiohttp's resolver, refusing a name any of whose addresses the policy refuses: the
    addresses checked are the ones the connection then uses (no second lookup to fool)."""

    def __init__(self, policy: EndpointPolicy, inner: AbstractResolver | None = None) -> None:
        self.policy = policy
        self.inner = inner or aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if problem := host_problem(host, self.policy):
            raise EndpointRefused(problem)
        resolved = await self.inner.resolve(host, port, family)
        for result in resolved:
            if problem := self.policy.refusal(result["host"]):
                raise EndpointRefused(f"{host} resolves to {problem}")
        return resolved

    async def close(self) -> None:
        await self.inner.close()


def resolved_problem(url: str, policy: EndpointPolicy) -> str | None:
    """Why `url`'s host may not be called, resolving a name here (the in-process path,
    whose HTTP client resolves it again: what `PolicyResolver` avoids on the loop)."""
    host = urlsplit(url).hostname or ""
    if problem := host_problem(host, policy):
        return problem
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return None  # unresolvable: the call fails on its own, saying so
    for address in dict.fromkeys(info[4][0] for info in infos):
        if problem := policy.refusal(address):
            return f"{host} resolves to {problem}"
    return None
