"""The regularized incomplete beta function, in logs, for the guarantee's bound.

One special function is all the bound needs, so it is written here rather than
bringing SciPy into the server: the continued fraction of DiDonato & Morris
(1992, ACM TOMS 18(3), "Algorithm 708") evaluated by the modified Lentz method
(Press et al., *Numerical Recipes*, 3rd ed., §6.4). The tests check it against
`scipy.special.betainc`.
"""

import math

_TINY = 1e-300
_EPSILON = 1e-15
# The fraction converges in O(sqrt(max(a, b))) terms where it is used; a million
# labels need a few thousand. Past this, something is wrong: say so, never guess.
_MAX_TERMS = 100_000


def log_beta(a: float, b: float) -> float:
    """log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a + b)."""
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def log_betainc(a: float, b: float, x: float) -> float:
    """log I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 ≤ x ≤ 1.

    Accurate in logs when I_x(a, b) is tiny (a far tail) as well as near 1.
    """
    if not (a > 0 and b > 0):
        raise ValueError(f"a and b must be positive, not {a!r} and {b!r}")
    if not 0 <= x <= 1:
        raise ValueError(f"x must lie in [0, 1], not {x!r}")
    if x == 0:
        return -math.inf
    if x == 1:
        return 0.0
    # The fraction converges fast below the mean; above it, use I_x(a, b) = 1 − I_{1−x}(b, a).
    if x < (a + 1) / (a + b + 2):
        return _log_front(a, b, x) + math.log(_fraction(a, b, x))
    other = math.exp(_log_front(b, a, 1 - x)) * _fraction(b, a, 1 - x)
    return math.log1p(-other) if other < 1 else -math.inf


def _log_front(a: float, b: float, x: float) -> float:
    """log of x^a (1 − x)^b / (a B(a, b)), the factor before the continued fraction."""
    return a * math.log(x) + b * math.log1p(-x) - math.log(a) - log_beta(a, b)


def _fraction(a: float, b: float, x: float) -> float:
    """The continued fraction for I_x(a, b), by the modified Lentz method."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, _MAX_TERMS + 1):
        two_m = 2 * m
        # The even step, then the odd one.
        for numerator in (
            m * (b - m) * x / ((a + two_m - 1) * (a + two_m)),
            -(a + m) * (a + b + m) * x / ((a + two_m) * (a + two_m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            step = c * d
            result *= step
        if abs(step - 1.0) < _EPSILON:
            return result
    raise ArithmeticError(f"the incomplete beta fraction did not converge for {a}, {b}, {x}")
