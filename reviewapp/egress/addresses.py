"""Which addresses outbound HTTP may reach: the policy from settings and the resolved-address
check."""

import ipaddress
import socket

from django.conf import settings

from reviewapp.core.webhooks import AddressPolicy


class AddressRefused(Exception):
    """The host is, or resolves to, an address we must not call."""


def address_policy() -> AddressPolicy:
    """The operator's policy, from the webhook settings: they govern every sender through egress."""
    return AddressPolicy.from_names(
        allow_loopback=settings.REVIEWAPP_WEBHOOK_ALLOW_LOCAL,
        networks=settings.REVIEWAPP_WEBHOOK_ALLOWED_NETWORKS,
    )


def resolved_address(host: str, port: int, policy: AddressPolicy) -> str:
    """The address to connect to for host:port, after checking every address it resolves to.

    All of them must pass, not just the first: a name answering with both a
    public and a private address would otherwise get through half the time.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as exc:  # ValueError: a NUL in the name
        raise AddressRefused(f"{host} does not resolve ({exc})") from exc
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not addresses:
        raise AddressRefused(f"{host} does not resolve")
    for address in addresses:
        problem = policy.refusal(address)
        if problem:
            raise AddressRefused(problem if _is_address(host) else f"{host} resolves to {problem}")
    return addresses[0]


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True
