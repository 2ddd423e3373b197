import re

from reviewapp.insights import charts
from reviewapp.insights.charts import BarRow, Series


def _labels(svg: str) -> list[str]:
    return re.findall(r'text-anchor="end"[^>]*>([^<]*)</text>', svg)


def test_long_pair_labels_that_share_a_start_stay_distinct():
    rows = [
        "customer-support-replies: accuracy × tone",
        "customer-support-replies: accuracy × policy",
        "customer-support-replies: tone × policy",
    ]
    svg = charts.bars(
        chart_id="c",
        title="t",
        desc="d",
        rows=[BarRow(label, [0.5]) for label in rows],
        series=[Series("kappa", "kappa", charts.BLUE)],
        domain=(-1.0, 1.0),
    )
    # Each pair reads whole, on two lines, instead of cut in the middle.
    assert _row_labels(svg) == [
        ["customer-support-replies:", "accuracy × tone"],
        ["customer-support-replies:", "accuracy × policy"],
        ["customer-support-replies:", "tone × policy"],
    ]
    # The full label is still there for a pointer or a screen reader.
    assert all(f"<title>{label}</title>" in svg for label in rows)


def _row_labels(svg: str) -> list[list[str]]:
    """The label column's lines, row by row."""
    groups = re.findall(r"<g><title>[^<]*</title>(.*?)</g>", svg)
    return [_labels(group) for group in groups]


def test_a_label_longer_than_two_lines_is_cut_at_its_end():
    label = "panel: " + " ".join(["word"] * 20)
    assert charts.wrapped_labels([label]) == [
        ["panel: word word word word word", "word word word word word word w…"]
    ]


def test_labels_that_two_lines_cannot_tell_apart_fall_back_to_distinct_ones():
    start, end = "a" * 40, "z" * 40
    labels = [f"{start} 1{end}", f"{start} 2{end}"]
    assert charts.wrapped_labels(labels) == [[line] for line in charts.distinct_labels(labels)]


def test_labels_alike_at_both_ends_are_numbered():
    start, end = "a" * 40, "z" * 40
    labels = charts.distinct_labels([f"{start}1{end}", f"{start}2{end}"])
    assert len(set(labels)) == 2 and labels[0].startswith("1. ") and labels[1].startswith("2. ")


def test_short_labels_are_kept_as_they_are():
    assert charts.distinct_labels(["alpha × beta", "beta × gamma"]) == [
        "alpha × beta",
        "beta × gamma",
    ]
