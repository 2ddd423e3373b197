"""Retries and Retry-After against a hostile loopback server: never a sleep past the
caller's timeout or the cap, never a raw exception from a header, jitter between tries."""

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime

import pytest
from reviewapp_client import (
    APITimeoutError,
    InternalServerError,
    Proposal,
    RateLimitError,
    WaitTimeout,
)

from tests.clients.hostile import Hostile, Reply, call, proposal_body

KINDS = ["sync", "async"]


def http_date(seconds_from_now: float) -> str:
    return format_datetime(datetime.now(UTC) + timedelta(seconds=seconds_from_now), usegmt=True)


def retrying(**options):
    return {"max_retries": 3, **options}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("retry_after", ["86400", "9" * 40, "http-date a day away"])
def test_a_retry_after_past_the_timeout_raises_at_once_instead_of_sleeping(kind, retry_after):
    if retry_after.startswith("http-date"):
        retry_after = http_date(86400)
    took = []
    with Hostile(Reply(503, '{"detail": "down"}', {"Retry-After": retry_after})) as server:
        with pytest.raises(InternalServerError) as raised:
            call(kind, server.url, "get", 7, timeout=2, client_options=retrying(), took=took)
    assert took[0] < 1
    assert raised.value.status == 503 and raised.value.retry_after > 80000
    assert len(server.arrivals) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_wait_gives_up_within_its_timeout_when_the_server_asks_for_a_day(kind):
    took = []
    with Hostile(Reply(503, '{"detail": "down"}', {"Retry-After": "86400"})) as server:
        with pytest.raises(InternalServerError):
            call(kind, server.url, "wait", 7, timeout=2, client_options=retrying(), took=took)
    assert took[0] < 1  # the server said a day: there is no point waiting the 2 s


@pytest.mark.parametrize("kind", KINDS)
def test_a_retry_after_beyond_the_cap_raises_even_with_time_left(kind):
    took = []
    with Hostile(Reply(429, '{"detail": "slow down"}', {"Retry-After": "40"})) as server:
        with pytest.raises(RateLimitError) as raised:
            call(kind, server.url, "get", 7, timeout=300, client_options=retrying(), took=took)
    assert took[0] < 1
    assert raised.value.retry_after == 40


@pytest.mark.parametrize("kind", KINDS)
def test_a_retry_after_as_an_http_date_is_waited_for(kind):
    date = http_date(3)
    with Hostile(Reply(503, "{}", {"Retry-After": date}), Reply(200, proposal_body())) as server:
        proposal = call(kind, server.url, "get", 7, timeout=10, client_options=retrying())
    asked = server.arrivals[0]
    asked_for = parsedate_to_datetime(date).timestamp() - asked.wall
    assert isinstance(proposal, Proposal)
    assert asked_for > 1 and server.arrivals[1].at - asked.at > asked_for - 0.1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("garbage", ["nan", "inf", "-5", "1e400", "soon", "", "Fri, 99 Foo 2024"])
def test_a_garbage_retry_after_falls_back_to_backoff(kind, garbage):
    with Hostile(Reply(503, "{}", {"Retry-After": garbage}), Reply(200, proposal_body())) as server:
        proposal = call(kind, server.url, "get", 7, timeout=10, client_options=retrying())
    assert proposal.id == 7
    assert server.gaps()[0] < 1  # the first backoff is at most half a second


@pytest.mark.parametrize("kind", KINDS)
def test_the_sleeps_between_tries_are_drawn_from_the_injected_random_source(kind):
    with Hostile(Reply(502, "{}")) as server:
        with pytest.raises(InternalServerError):
            options = retrying(max_retries=2, rng=random.Random(4))
            call(kind, server.url, "get", 7, timeout=10, client_options=options)
    replica = random.Random(4)
    expected = [replica.uniform(0, 0.5), replica.uniform(0, 1.0)]
    assert len(server.arrivals) == 3
    for gap, drawn in zip(server.gaps(), expected, strict=True):
        assert drawn <= gap < drawn + 0.3


@pytest.mark.parametrize("kind", KINDS)
def test_a_non_idempotent_request_is_not_retried_after_an_answer(kind):
    with Hostile(Reply(503, "{}"), Reply(201, "{}")) as server:
        with pytest.raises(InternalServerError):
            call(
                kind,
                server.url,
                "decide",
                3,
                "approved",
                "Checked.",
                client_options=retrying(),
            )
    assert len(server.arrivals) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_wait_polls_through_a_short_outage(kind):
    with Hostile(
        Reply(503, "{}", {"Retry-After": "0"}),
        Reply(200, proposal_body("queued")),
        Reply(200, proposal_body("escalated")),
    ) as server:
        proposal = call(kind, server.url, "wait", 7, timeout=10, poll=0.05)
    assert proposal.status == "escalated" and len(server.arrivals) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_wait_times_out_with_the_last_state_seen(kind):
    took = []
    with Hostile(Reply(200, proposal_body("evaluating"))) as server:
        with pytest.raises(WaitTimeout) as timeout:
            call(kind, server.url, "wait", 7, timeout=1, poll=0.1, took=took)
    assert 1 <= took[0] < 1.5
    assert timeout.value.proposal.status == "evaluating"


@pytest.mark.parametrize("kind", KINDS)
def test_a_slow_answer_counts_against_the_calls_timeout(kind):
    took = []
    with Hostile(Reply(200, proposal_body(), delay=3)) as server:
        with pytest.raises(APITimeoutError):
            call(kind, server.url, "get", 7, timeout=0.5, took=took)
    assert took[0] < 1.5
