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
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

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


def base_url_problem(url: str) -> str | None:
    """Why `url` cannot be an LLM endpoint's base URL (before any address is resolved)."""
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
    return None


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
