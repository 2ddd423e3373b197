"""When a mailbox may next send: at once with a short gap, or one digest per period.

A mailbox is one person's email, or one chat room. What it has to say waits in
it until `next_send_at`; then it all goes in one message. So a burst of a
thousand escalations is one message, not a thousand:

- "immediately": as soon as there is something, but never within `gap` of the
  mailbox's previous message (what arrives meanwhile goes together);
- "digest": at the end of each period of `period` counted from the Unix epoch
  (midnight UTC for periods that divide a day), at most one per period: what
  arrived during a period goes when it ends, and something that arrives after
  a period's digest waits for the next one.
"""

from datetime import UTC, datetime, timedelta
from enum import StrEnum

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Mode(StrEnum):
    IMMEDIATE = "immediate"
    DIGEST = "digest"
    OFF = "off"


def period_end(moment: datetime, period: timedelta) -> datetime:
    """The end of the period `moment` falls in (a moment on a boundary starts a period)."""
    elapsed = moment - EPOCH
    return EPOCH + (elapsed // period + 1) * period


def next_send_at(
    *,
    mode: Mode,
    oldest_waiting: datetime,
    last_sent_at: datetime | None,
    period: timedelta,
    gap: timedelta,
) -> datetime | None:
    """When the mailbox may send what has waited since `oldest_waiting`; None: never (off)."""
    if mode == Mode.OFF:
        return None
    if mode == Mode.IMMEDIATE:
        if last_sent_at is None:
            return oldest_waiting
        return max(oldest_waiting, last_sent_at + gap)
    due = period_end(oldest_waiting, period)
    if last_sent_at is not None:
        # One digest per period: not again before the period after the last one's.
        due = max(due, period_end(last_sent_at, period))
    return due
