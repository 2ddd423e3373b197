"""Standard Webhooks signing, address rules, retry schedule (reviewapp/core/webhooks.py)."""

import random
from datetime import UTC, datetime

import pytest
from standardwebhooks import Webhook

from reviewapp.core.webhooks import (
    AddressPolicy,
    excerpt,
    retry_delay,
    secret_bytes,
    secret_text,
    signature,
    url_refusal,
)


def test_the_signature_is_what_the_standardwebhooks_library_computes():
    secret = bytes(range(32))
    body = '{"type":"webhook.ping","data":{"ü":1}}'
    ours = signature(secret=secret, msg_id="msg_1", timestamp=1700000000, body=body.encode())
    theirs = Webhook(secret_text(secret)).sign(
        "msg_1", datetime.fromtimestamp(1700000000, tz=UTC), body
    )
    assert ours == theirs


def test_a_secret_round_trips_through_its_text():
    assert secret_bytes(secret_text(b"\x00" * 24)) == b"\x00" * 24
    assert secret_text(b"k" * 24).startswith("whsec_")


@pytest.mark.parametrize(
    "address, reason",
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.1", "private"),
        ("172.16.5.4", "private"),
        ("100.64.0.1", "private or reserved"),  # carrier-grade NAT
        ("169.254.169.254", "link-local"),  # cloud metadata
        ("fe80::1", "link-local"),
        ("fd00:ec2::254", "private"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
    ],
)
def test_non_public_addresses_are_refused(address, reason):
    assert reason in AddressPolicy().refusal(address)


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700::1111", "8.8.8.8"])
def test_public_addresses_pass(address):
    assert AddressPolicy().refusal(address) is None


@pytest.mark.parametrize(
    "address, form, reason",
    [
        ("::127.0.0.1", "IPv4-compatible", "127.0.0.1 is a loopback address"),
        ("::a9fe:a9fe", "IPv4-compatible", "169.254.169.254 is a link-local address"),
        ("::ffff:0:7f00:1", "IPv4-translated", "127.0.0.1 is a loopback address"),
        ("64:ff9b::7f00:1", "NAT64", "127.0.0.1 is a loopback address"),
        ("64:ff9b::a9fe:a9fe", "NAT64", "169.254.169.254 is a link-local address"),
        ("64:ff9b::a00:1", "NAT64", "10.0.0.1 is a private or reserved address"),
        ("64:ff9b::6440:1", "NAT64", "100.64.0.1 is a private or reserved address"),  # CGNAT
        ("64:ff9b::", "NAT64", "0.0.0.0 is the unspecified address"),
        ("64:ff9b::e000:1", "NAT64", "224.0.0.1 is a multicast address"),
        ("2002:7f00:1::", "6to4", "127.0.0.1 is a loopback address"),
        ("2002:a9fe:a9fe::1", "6to4", "169.254.169.254 is a link-local address"),
        ("2002:c0a8:101::", "6to4", "192.168.1.1 is a private or reserved address"),
        # Teredo: server 8.8.8.8, client 127.0.0.1 (stored XOR 0xffffffff).
        ("2001:0:808:808::80ff:fffe", "Teredo", "127.0.0.1 is a loopback address"),
        # Teredo: server 10.0.0.1, client 8.8.8.8.
        ("2001:0:a00:1::f7f7:f7f7", "Teredo", "10.0.0.1 is a private or reserved address"),
    ],
)
def test_an_ipv6_form_carrying_an_internal_ipv4_address_is_refused_naming_both(
    address, form, reason
):
    problem = AddressPolicy().refusal(address)
    assert form in problem and reason in problem


def test_a_local_use_nat64_address_is_refused_whatever_it_carries():
    """64:ff9b:1::/48 translates into the operator's own network (RFC 8215)."""
    assert "local-use NAT64" in AddressPolicy().refusal("64:ff9b:1::808:808")


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "::ffff:8.8.8.8"])
def test_a_nat64_or_mapped_address_carrying_a_public_ipv4_address_passes(address):
    """What DNS64 and dual-stack sockets hand out for an IPv4-only receiver: it is 8.8.8.8."""
    assert AddressPolicy().refusal(address) is None


@pytest.mark.parametrize(
    "address, form",
    [
        ("::808:808", "IPv4-compatible"),
        ("::ffff:0:808:808", "IPv4-translated"),
        ("2002:808:808::", "6to4"),
        ("2001:0:808:808::f7f7:f7f7", "Teredo"),
    ],
)
def test_a_tunnel_form_is_refused_even_carrying_a_public_ipv4_address(address, form):
    """Deprecated tunnels no receiver needs, routed by relays we cannot predict."""
    problem = AddressPolicy().refusal(address)
    assert form in problem and "8.8.8.8" in problem


def test_a_named_private_range_also_allows_it_inside_a_nat64_address():
    policy = AddressPolicy.from_names(allow_loopback=False, networks=["10.20.0.0/16"])
    assert policy.refusal("64:ff9b::a14:304") is None  # 10.20.3.4
    assert policy.refusal("64:ff9b::a15:304") is not None  # 10.21.3.4


def test_loopback_passes_only_when_allowed_and_private_stays_refused():
    policy = AddressPolicy(allow_loopback=True)
    assert policy.refusal("127.0.0.1") is None
    assert policy.refusal("10.0.0.1") is not None


def test_a_named_private_range_is_allowed_and_nothing_else():
    policy = AddressPolicy.from_names(allow_loopback=False, networks=["10.20.0.0/16"])
    assert policy.refusal("10.20.3.4") is None
    assert policy.refusal("10.21.3.4") is not None
    assert policy.refusal("169.254.169.254") is not None


@pytest.mark.parametrize(
    "url, allow_http, problem",
    [
        ("http://hooks.example.com/x", False, "must start with https://"),
        ("ftp://hooks.example.com/x", True, "https:// or http://"),
        ("https:///x", False, "names no host"),
        ("https://user:pw@hooks.example.com/x", False, "credentials"),
        ("https://hooks.example.com:99999/x", False, "not a URL"),
        ("https://hooks.example.com/x#frag", False, "fragment"),
    ],
)
def test_unusable_urls_are_refused_with_the_reason(url, allow_http, problem):
    assert problem in url_refusal(url, allow_http=allow_http)


def test_https_passes_and_http_only_when_allowed():
    assert url_refusal("https://hooks.example.com/x", allow_http=False) is None
    assert url_refusal("http://127.0.0.1:8000/x", allow_http=True) is None


def test_the_retry_schedule_backs_off_with_jitter_and_ends():
    delays = [5, 300, 3600]
    rng = random.Random(7)
    got = [retry_delay(n, delays, rng=rng) for n in (1, 2, 3, 4)]
    assert 4 <= got[0] <= 6 and 240 <= got[1] <= 360 and 2880 <= got[2] <= 4320
    assert got[3] is None
    assert len({retry_delay(1, delays) for _ in range(20)}) > 1  # jittered


def test_the_default_schedule_spans_about_a_day():
    from django.conf import settings

    total = sum(settings.REVIEWAPP_WEBHOOK_RETRY_DELAYS)
    assert 20 * 3600 <= total <= 30 * 3600


def test_an_excerpt_is_short_and_printable():
    text = excerpt(b"\x00oops" + b"x" * 5000, limit=50)
    assert len(text) <= 51 and text.endswith("…") and "\x00" not in text
