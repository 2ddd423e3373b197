"""Outgoing webhooks, as plain logic: Standard Webhooks signing, which addresses we
may call, and when to try again.

Standard Webhooks (https://www.standardwebhooks.com): the signed content is
`{webhook-id}.{webhook-timestamp}.{body}`, HMAC-SHA256 under the secret's
base64-decoded bytes (after the `whsec_` prefix), sent as `v1,<base64>`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

SECRET_PREFIX = "whsec_"
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def secret_text(secret: bytes) -> str:
    return SECRET_PREFIX + base64.b64encode(secret).decode()


def secret_bytes(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def signature(*, secret: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header value for one attempt."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


# IPv6 ranges whose addresses carry an IPv4 address (IPv4-mapped ::ffff:0:0/96 and
# Teredo 2001::/32 come with the ipaddress module). The host reached is that IPv4
# address: through the kernel, a NAT64 translator, or a tunnel relay.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052's well-known prefix
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215, local use
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 (SIIT)
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # RFC 4291, deprecated


@dataclass(frozen=True)
class Carried:
    """The IPv4 addresses an IPv6 address carries, and the form that carries them.

    `in_use`: a form networks hand out today for a real IPv4 receiver (a dual-stack
    socket's mapped address, DNS64's 64:ff9b::/96), so a public address inside it
    is a receiver like any other. The other forms are deprecated tunnels (6to4,
    Teredo, IPv4-compatible, SIIT) or a translator into the operator's own network
    (64:ff9b:1::/48): no receiver needs them, and where their relays deliver is not
    ours to predict, so they are refused whatever they carry.
    """

    form: str
    ipv4: tuple[ipaddress.IPv4Address, ...]
    in_use: bool


def carried_ipv4(ip: ipaddress.IPv6Address) -> Carried | None:
    """The IPv4 addresses `ip` carries, or None: a plain IPv6 address."""
    last_32 = ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    if ip.ipv4_mapped is not None:
        return Carried("an IPv4-mapped address", (ip.ipv4_mapped,), in_use=True)
    if ip in _NAT64:
        return Carried("a NAT64 address (64:ff9b::/96)", (last_32,), in_use=True)
    if ip in _NAT64_LOCAL:
        # Where the IPv4 bits sit depends on a prefix length only the operator knows.
        return Carried("a local-use NAT64 address (64:ff9b:1::/48)", (), in_use=False)
    if ip in _IPV4_TRANSLATED:
        return Carried("an IPv4-translated address (::ffff:0:0:0/96)", (last_32,), in_use=False)
    if ip in _IPV4_COMPATIBLE and int(ip) > 1:  # :: and ::1 are IPv6's own
        return Carried("an IPv4-compatible address (::/96)", (last_32,), in_use=False)
    if ip.sixtofour is not None:
        return Carried("a 6to4 address (2002::/16)", (ip.sixtofour,), in_use=False)
    if ip.teredo is not None:
        server, client = ip.teredo  # the client's bits are stored inverted; ipaddress undoes it
        return Carried("a Teredo address (2001::/32)", (client, server), in_use=False)
    return None


@dataclass(frozen=True)
class AddressPolicy:
    """Which resolved addresses a webhook may connect to.

    Only globally routable unicast addresses, unless `allow_loopback` (the
    one-command run and the tests) or an address falls in one of the
    explicitly `allowed_networks` (an operator's named private ranges). An IPv6
    address that carries an IPv4 address is judged as that IPv4 address, and
    only in the forms networks use today (see `Carried`).
    """

    allow_loopback: bool = False
    allowed_networks: tuple[IpNetwork, ...] = ()

    @classmethod
    def from_names(cls, *, allow_loopback: bool, networks: Iterable[str]) -> AddressPolicy:
        return cls(
            allow_loopback=allow_loopback,
            allowed_networks=tuple(ipaddress.ip_network(n, strict=False) for n in networks),
        )

    def refusal(self, address: str) -> str | None:
        """Why `address` may not be called, or None."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if any(ip in network for network in self.allowed_networks):
            return None
        if isinstance(ip, ipaddress.IPv6Address) and (carried := carried_ipv4(ip)):
            return self._carried_refusal(ip, carried)
        if ip.is_loopback:
            return None if self.allow_loopback else f"{ip} is a loopback address"
        if ip.is_unspecified:
            return f"{ip} is the unspecified address"
        if ip.is_multicast:
            return f"{ip} is a multicast address"
        if ip.is_link_local:  # 169.254.169.254, the cloud metadata service, is here
            return f"{ip} is a link-local address (cloud metadata lives there)"
        if not ip.is_global:  # private, CGNAT, reserved, documentation ranges
            return f"{ip} is a private or reserved address"
        return None

    def _carried_refusal(self, ip: ipaddress.IPv6Address, carried: Carried) -> str | None:
        for ipv4 in carried.ipv4:
            if problem := self.refusal(str(ipv4)):
                return f"{ip} is {carried.form} carrying {ipv4}, and {problem}"
        if carried.in_use:
            return None
        inside = f" carrying {', '.join(map(str, carried.ipv4))}" if carried.ipv4 else ""
        return (
            f"{ip} is {carried.form}{inside}: a tunnel or translator form no receiver needs; "
            "register the receiver's own address"
        )


def url_refusal(url: str, *, allow_http: bool) -> str | None:
    """Why `url` cannot be a webhook endpoint (before any address is resolved), or None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"not a URL: {exc}"
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes:
        return "the URL must start with " + " or ".join(f"{s}://" for s in schemes)
    if not parts.hostname:
        return "the URL names no host"
    if parts.username or parts.password:
        return "the URL must not carry credentials; authenticate with the webhook signature"
    if parts.fragment:
        return "the URL must not have a #fragment"
    if port == 0:
        return "port 0 cannot be called"
    return None


def retry_delay(
    attempts: int, delays: Sequence[float], *, rng: random.Random | None = None
) -> float | None:
    """Seconds to wait after the `attempts`-th failed attempt, or None: give up.

    Exponential-ish steps (the schedule) with ±20 % jitter, so endpoints that
    failed together do not all come back at the same instant.
    """
    if attempts < 1 or attempts > len(delays):
        return None
    base = delays[attempts - 1]
    return max(0.0, base * (rng or random).uniform(0.8, 1.2))


def excerpt(data: bytes, limit: int = 300) -> str:
    """A short, printable beginning of a receiver's answer: never the whole body."""
    text = data[:limit].decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    return text + ("…" if len(data) > limit else "")
