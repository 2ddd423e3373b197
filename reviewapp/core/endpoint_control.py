"""How many calls an LLM endpoint gets at once: additive increase, multiplicative decrease.

A provider's own limit (calls in flight per key, requests per minute) is
unknown to the admin and answered with 429, or 503 with ``Retry-After``: a
*refusal*. The endpoint's effective limit starts at the lens's configured
maximum and follows the refusals, as TCP's congestion window follows losses
and Netflix's concurrency-limits' AIMD limit follows drops:

- A refusal of a call sent since the last round began starts a round, and
  cuts the limit to ``BACKOFF`` of itself if our calls in flight were using
  it: refusals of calls sent before were sent at the old limit and say
  nothing new (TCP cuts once per window). A sharper cut would lose a third of
  the throughput on every probe past a real cap; a softer one (Netflix's 0.9)
  takes dozens of rounds to come down from a default of 1,024. A refusal
  while we used well under the limit cuts nothing: the provider refused a
  share of fewer calls than the limit, which a cut would not prevent (TCP's
  congestion window validation, RFC 7661, has the same reasoning).
- The cut never goes below the most calls of ours in flight at which the
  provider served one since the previous round (``served_peak``, from each
  call's count when it was sent): that concurrency is proven. A provider
  that holds 8 serves calls sent at up to 8, so its limit settles at 8 and
  a probe at 9 costs one refusal, not a third of the throughput; a provider
  refusing a share of calls at random (a rate limit) serves calls sent at
  every concurrency, so its refusals cost nothing but their ``Retry-After``
  (a plain AIMD limit collapses there, as TCP does on a lossy link: every
  round has a refusal, and a cut every round outruns one call of growth).
- While refusals of that round keep coming back and fewer than
  ``MOSTLY_REFUSED`` of the calls in flight when it began remain, most of
  what we sent was refused: the provider holds about what is still in
  flight, and the limit drops to that at once. A flood of 1,024 calls at a
  provider holding 8 then converges in one round, not twenty.
- A success means the provider serves the calls in flight with it: the limit
  is never below that count (so a cut does not stop calls the provider
  demonstrably takes), and it grows by ``1 / limit`` (one call per round of
  calls), slower by ``PROBE_SLOWDOWN`` within a call of where the provider
  last refused, because every probe past a real cap costs a refusal and its
  ``Retry-After`` hold of the whole endpoint.
- ``Retry-After`` holds the whole endpoint: no call of ours starts before it
  ends, whichever call heard it.

Pure arithmetic on a ``Control`` value; the shared store that keeps it for
every worker is ``reviewapp.review.evaluation.endpoint_limits``. Times are epoch seconds
of the workers' clocks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

BACKOFF = 0.7
MOSTLY_REFUSED = 0.5
PROBE_SLOWDOWN = 32


@dataclass(frozen=True)
class Control:
    """One endpoint's effective limit and what it learnt from the provider."""

    limit: float
    # No call starts before this (the latest Retry-After heard).
    hold_until: float = 0.0
    # When the last round of refusals began: refusals of calls sent before are old news.
    cut_at: float = 0.0
    # Our calls in flight when that round began.
    round_in_flight: int = 0
    # Where the provider last refused: calls in flight then (0: never refused).
    ceiling: float = 0.0
    # The most calls in flight at which a call sent since this round began was served.
    served_peak: int = 0


@dataclass(frozen=True)
class Outcome:
    """A call's answer as the controller sees it: served, or refused (429, 503 with Retry-After)."""

    refused: bool
    sent_at: float
    retry_after: float | None = None
    # Our calls in flight at the endpoint when this one was sent, itself
    # included (0: not known).
    sent_in_flight: int = 0


def start(maximum: int) -> Control:
    return Control(limit=float(maximum))


def allowed(control: Control, maximum: int) -> int:
    """Calls that may be in flight now: the effective limit, within [1, maximum]."""
    return max(1, min(maximum, math.floor(control.limit)))


def held_for(control: Control, now: float) -> float:
    """Seconds before a call may start (a Retry-After still running), or 0."""
    return max(0.0, control.hold_until - now)


def update(
    control: Control,
    outcomes: Iterable[Outcome],
    *,
    in_flight: int,
    now: float,
    maximum: int,
) -> Control:
    """The control after ``outcomes``, reported while ``in_flight`` of our calls held slots.

    ``in_flight`` counts the reported calls too (their slots are given back after).
    """
    for outcome in outcomes:
        control = (
            _refused(control, outcome, in_flight, now)
            if outcome.refused
            else _served(control, outcome, in_flight)
        )
    return replace(control, limit=min(float(maximum), max(1.0, control.limit)))


def _refused(control: Control, outcome: Outcome, in_flight: int, now: float) -> Control:
    if outcome.retry_after is not None:
        control = replace(control, hold_until=max(control.hold_until, now + outcome.retry_after))
    if outcome.sent_at >= control.cut_at:
        used = in_flight >= BACKOFF * control.limit
        cut = max(1.0, control.limit * BACKOFF) if used else control.limit
        return replace(
            control,
            limit=max(cut, float(control.served_peak)),
            cut_at=now,
            round_in_flight=in_flight,
            ceiling=float(in_flight),
            served_peak=0,
        )
    if in_flight < MOSTLY_REFUSED * control.round_in_flight:
        return replace(
            control,
            limit=max(1.0, min(control.limit, in_flight)),
            ceiling=max(1.0, min(control.ceiling, in_flight)),
        )
    return control


def _served(control: Control, outcome: Outcome, in_flight: int) -> Control:
    limit = max(control.limit, float(in_flight))
    step = 1 / limit
    if control.ceiling and abs(limit - control.ceiling) <= 1:
        step /= PROBE_SLOWDOWN
    return replace(
        control,
        limit=limit + step,
        served_peak=max(control.served_peak, outcome.sent_in_flight),
    )


def refusals_for(seconds: float) -> str:
    """How long a provider has refused, for people: seconds under a minute, else whole minutes."""
    if seconds < 60:
        whole = max(1, round(seconds))
        return f"{whole} second{'s' if whole != 1 else ''}"
    minutes = round(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"
