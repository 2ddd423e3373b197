"""An anytime-valid lower confidence bound on a vote pattern's agreement with humans.

Each human label on a pattern is a Bernoulli draw: the reviewer agreed with the
machine's (would-be) outcome or did not. Routing looks at the bound after every
label, for as long as the panel runs, so a bound valid at one fixed sample size
(Clopper–Pearson, Wilson) would be broken by that looking: checked often enough,
it crosses the target by chance. This one holds at every sample size at once.

The method is the conjugate mixture martingale of Robbins (1970, "Statistical
methods related to the law of the iterated logarithm", Ann. Math. Statist. 41(5),
1397–1409), one-sided, as in Howard, Ramdas, McAuliffe & Sekhon (2021,
"Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Statist.
49(2), 1055–1080, §3, the beta-binomial mixture). For a null agreement m, mix the
likelihood ratio of every alternative p ≥ m against m, uniformly over [m, 1]:

    M_n(m) = ∫_m^1 p^S (1 − p)^F dp / ((1 − m) · m^S (1 − m)^F)

after S agreeing and F disagreeing labels. For every true agreement p₀ ≤ m each
ratio is a nonnegative supermartingale with mean at most 1, so M_n(m) is one
too (an e-process for "agreement ≤ m"), and Ville's inequality gives
P(M_n(m) ≥ 1/α for some n) ≤ α. Hence

    L_n = inf {m : M_n(m) < 1/α}

is a lower confidence sequence: P(L_n > p₀ for some n) ≤ α. It depends only on
the counts (S, F), never on their order, so the database keeps two counters per
pattern. Which proposal gets labelled may depend on everything seen before (the
routing, the audit draw), but not on the label itself, so the argument holds
under the routing's adaptive sampling too.
"""

import math

from .special import log_beta, log_betainc

# The bound is found by bisection to this width: finer than any figure shown.
_PRECISION = 1e-9
# Beyond this many more labels, "never" is the honest answer.
MAX_LABELS_TO_TRUST = 10**9


def log_e_value(*, agreed: int, labels: int, target: float) -> float:
    """log M_n(target): the evidence, after `labels` labels of which `agreed` agreed,
    that the pattern's agreement exceeds `target` (0 < target < 1).

    Closed form: M = B(S+1, F+1) · I_{1−m}(F+1, S+1) / ((1 − m)^{F+1} · m^S).
    """
    _check_counts(agreed, labels)
    if not 0 < target < 1:
        raise ValueError(f"target must lie strictly between 0 and 1, not {target!r}")
    if labels == 0:
        return 0.0
    s, f = agreed, labels - agreed
    return (
        log_beta(s + 1, f + 1)
        + log_betainc(f + 1, s + 1, 1 - target)
        - (f + 1) * math.log1p(-target)
        - s * math.log(target)
    )


def lower_bound(*, agreed: int, labels: int, alpha: float) -> float:
    """L_n: the pattern's agreement is at least this, at every n at once, with
    probability at least 1 − alpha."""
    _check_counts(agreed, labels)
    threshold = _threshold(alpha)
    if agreed == 0:
        return 0.0
    # M falls from +∞ near 0 to at most 1 at the observed share (the likelihood's
    # maximum), so the crossing lies between; the tests check it is crossed once.
    low, high = 0.0, agreed / labels
    if high == 1.0:
        high = math.nextafter(1.0, 0.0)
    if log_e_value(agreed=agreed, labels=labels, target=high) >= threshold:
        return high
    while high - low > _PRECISION:
        middle = (low + high) / 2
        if middle > 0 and log_e_value(agreed=agreed, labels=labels, target=middle) >= threshold:
            low = middle
        else:
            high = middle
    return low


def upper_bound(*, agreed: int, labels: int, alpha: float) -> float:
    """U_n: the mirror of `lower_bound` (the disagreement's lower bound, from 1)."""
    return 1.0 - lower_bound(agreed=labels - agreed, labels=labels, alpha=alpha)


def labels_to_trust(*, agreed: int, labels: int, target: float, alpha: float) -> int:
    """How many more labels, all agreeing, before the bound reaches `target` (0 if it has).

    Each agreeing label multiplies the integrand by p/m ≥ 1 on [m, 1], so the
    evidence only grows with them: an exponential search, then a binary one.
    """
    threshold = _threshold(alpha)

    def enough(more: int) -> bool:
        return log_e_value(agreed=agreed + more, labels=labels + more, target=target) >= threshold

    if enough(0):
        return 0
    high = 1
    while not enough(high):
        high *= 2
        if high > MAX_LABELS_TO_TRUST:
            return MAX_LABELS_TO_TRUST
    low = high // 2  # not enough
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def is_trusted(*, agreed: int, labels: int, target: float, alpha: float) -> bool:
    """Whether the bound clears the target: the e-process at the target reached 1/alpha."""
    _check_counts(agreed, labels)
    return log_e_value(agreed=agreed, labels=labels, target=target) >= _threshold(alpha)


def _threshold(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha!r}")
    return -math.log(alpha)


def _check_counts(agreed: int, labels: int) -> None:
    if not 0 <= agreed <= labels:
        raise ValueError(f"agreed ({agreed}) must lie between 0 and labels ({labels})")
