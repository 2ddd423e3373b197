import math

import pytest
from scipy import special

from reviewapp.core.guarantee.special import log_beta, log_betainc

# Small shapes, the counts of a young pattern, and the large ones of an old one.
SHAPES = [0.5, 1, 2, 7.5, 30, 101, 999, 20_000, 150_000]


@pytest.mark.parametrize("a", SHAPES)
@pytest.mark.parametrize("b", SHAPES)
@pytest.mark.parametrize("x", [1e-6, 0.01, 0.3, 0.5, 0.8, 0.95, 0.999])
def test_log_betainc_matches_scipy_wherever_scipy_can_say(a, b, x):
    expected = special.betainc(a, b, x)
    if expected == 0 or expected == 1:
        return  # past double precision; the log form below covers the tails
    assert log_betainc(a, b, x) == pytest.approx(math.log(expected), rel=1e-8, abs=1e-12)


def test_log_betainc_reaches_far_tails_where_the_plain_value_underflows():
    # I_x(a, 1) = x^a exactly: a tail of e^-11513 is below any double.
    assert log_betainc(5000, 1, 0.1) == pytest.approx(5000 * math.log(0.1), rel=1e-12)
    # I_x(1, b) = 1 - (1 - x)^b: close to 1, said as a tiny negative log.
    assert log_betainc(1, 3000, 0.2) == pytest.approx(math.log1p(-(0.8**3000)), abs=1e-300)


def test_log_beta_matches_scipy():
    for a, b in [(1, 1), (0.5, 0.5), (3, 100_000), (77_777, 22_222)]:
        assert log_beta(a, b) == pytest.approx(special.betaln(a, b), rel=1e-10)


@pytest.mark.parametrize(
    ("a", "b", "x"), [(0, 1, 0.5), (1, -1, 0.5), (1, 1, -0.1), (1, 1, 1.5), (1, 1, math.nan)]
)
def test_log_betainc_refuses_what_is_outside_its_domain(a, b, x):
    with pytest.raises(ValueError):
        log_betainc(a, b, x)


def test_log_betainc_at_the_ends_of_the_interval():
    assert log_betainc(3, 4, 0.0) == -math.inf
    assert log_betainc(3, 4, 1.0) == 0.0
