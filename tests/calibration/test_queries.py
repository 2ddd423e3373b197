"""The figures, claim marks included, read the day sums in a pinned number of queries."""

import pytest

from reviewapp.calibration.queries import Window, lens_figures
from tests.calibration.builders import adjudicated, agreeing, many, panel_of

pytestmark = pytest.mark.django_db

# The lenses with their floors; the day tables (with the claims marked).
LENS_FIGURES_QUERIES = 2


@pytest.mark.parametrize("decisions", [0, 1, 12])
def test_lens_figures_cost_two_queries_however_many_decisions_and_marks(
    decisions, django_assert_num_queries
):
    panel, (a, b) = panel_of("alpha", "beta")
    for verdict, outcome in agreeing(decisions):
        adjudicated(panel, {a: verdict, b: verdict}, outcome, marks={a: ["incorrect"], b: []})
    with django_assert_num_queries(LENS_FIGURES_QUERIES):
        figures = lens_figures(Window())
    assert [f.claims_marked for f in figures] == [decisions, 0]


def test_one_lens_figures_cost_the_same_two_queries(django_assert_num_queries):
    panel, (lens,) = panel_of("alpha")
    many(panel, lens, agreeing(4), marks={lens: ["correct", "incorrect"]})
    with django_assert_num_queries(LENS_FIGURES_QUERIES):
        (figures,) = lens_figures(Window(), lens=lens)
    assert (figures.claims_marked, figures.claims_marked_incorrect) == (8, 0.5)
