"""Which automatic decisions are audited: a share of them, drawn at random."""

from collections.abc import Callable


def audit_drawn(rate_percent: float, draw: Callable[[], float]) -> bool:
    """Whether this decision is audited, at `rate_percent` (0–100) of decisions.

    `draw` gives a float in [0, 1) (``random.Random().random``); injected so a
    seeded source makes the draw repeatable in tests.
    """
    if rate_percent <= 0:
        return False  # no draw: a panel without audits costs nothing
    return draw() * 100 < rate_percent
