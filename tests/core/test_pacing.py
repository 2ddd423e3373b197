from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from reviewapp.core.pacing import Mode, next_send_at, period_end

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


def at(hh, mm=0, ss=0):
    return datetime(2026, 12, 7, hh, mm, ss, tzinfo=UTC)


def test_immediately_sends_at_once_when_nothing_was_sent_recently():
    assert next_send_at(mode=Mode.IMMEDIATE, oldest_waiting=at(9, 5), last_sent_at=at(8),
                        period=HOUR, gap=MINUTE) == at(9, 5)  # fmt: skip


def test_immediately_waits_out_the_gap_after_the_last_message():
    assert next_send_at(mode=Mode.IMMEDIATE, oldest_waiting=at(9, 5, 10), last_sent_at=at(9, 5),
                        period=HOUR, gap=MINUTE) == at(9, 6)  # fmt: skip


def test_a_digest_goes_at_the_end_of_the_period_something_arrived_in():
    assert next_send_at(mode=Mode.DIGEST, oldest_waiting=at(9, 5), last_sent_at=None,
                        period=HOUR, gap=MINUTE) == at(10)  # fmt: skip


def test_a_digest_already_sent_this_period_puts_the_next_one_a_period_on():
    # The 10:00 digest went at 10:00:02; something from 09:59:59 committed after it.
    assert next_send_at(mode=Mode.DIGEST, oldest_waiting=at(9, 59, 59), last_sent_at=at(10, 0, 2),
                        period=HOUR, gap=MINUTE) == at(11)  # fmt: skip


def test_off_never_sends():
    assert next_send_at(mode=Mode.OFF, oldest_waiting=at(9), last_sent_at=None,
                        period=HOUR, gap=MINUTE) is None  # fmt: skip


def test_a_boundary_starts_a_period():
    assert period_end(at(10), HOUR) == at(11)


@given(
    arrivals=st.lists(st.integers(min_value=0, max_value=6 * 3600), min_size=1, max_size=200),
    period_minutes=st.sampled_from([1, 5, 15, 60]),
)
def test_digests_never_come_twice_in_one_period(arrivals, period_minutes):
    """A mailbox that sends each time it is due, with arrivals at any moments, sends at most
    one digest per period, and everything that arrived goes out."""
    period = timedelta(minutes=period_minutes)
    start = at(0)
    waiting: list[datetime] = []
    sent_at: list[datetime] = []
    delivered = 0
    events = sorted(start + timedelta(seconds=s) for s in arrivals)
    clock = start
    end = start + timedelta(hours=8)
    while clock <= end:
        while events and events[0] <= clock:
            waiting.append(events.pop(0))
        if waiting:
            due = next_send_at(mode=Mode.DIGEST, oldest_waiting=min(waiting),
                               last_sent_at=sent_at[-1] if sent_at else None,
                               period=period, gap=MINUTE)  # fmt: skip
            if due <= clock:
                sent_at.append(clock)
                delivered += len(waiting)
                waiting = []
        clock += timedelta(seconds=7)
    periods = [(t - start) // period for t in sent_at]
    assert len(periods) == len(set(periods))
    assert delivered == len(arrivals)
