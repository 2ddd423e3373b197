"""Inter-rater agreement between lenses: Cohen's kappa for a pair, Fleiss' kappa for a panel.

Both return None where kappa is undefined (chance agreement of 1: every rating
fell in one category), rather than a number the data does not support.
"""

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PairTable:
    """Counts of items both lenses judged, by (first verdict, second verdict)."""

    pass_pass: int = 0
    pass_fail: int = 0
    fail_pass: int = 0
    fail_fail: int = 0

    @property
    def items(self) -> int:
        return self.pass_pass + self.pass_fail + self.fail_pass + self.fail_fail


def chance_agreement(table: PairTable) -> float:
    """p_e: how often the two would agree by chance, from each one's own pass rate."""
    n = table.items
    first_pass = (table.pass_pass + table.pass_fail) / n
    second_pass = (table.pass_pass + table.fail_pass) / n
    return first_pass * second_pass + (1 - first_pass) * (1 - second_pass)


def cohen_kappa(table: PairTable) -> float | None:
    """Cohen's kappa, the one implementation: two lenses here, a lens against the
    reviewers in `core.calibration` (which adds its interval)."""
    n = table.items
    if n == 0:
        return None
    observed = (table.pass_pass + table.fail_fail) / n
    expected = chance_agreement(table)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class FleissSums:
    """What Fleiss' kappa needs, summable in the database.

    Over N items each rated by the same n raters: `sum_squares` is
    Σ_i Σ_j n_ij², and `category_totals` is Σ_i n_ij per category j.
    """

    items: int
    raters: int
    sum_squares: int
    category_totals: tuple[int, ...]


def fleiss_kappa(sums: FleissSums) -> float | None:
    n, raters = sums.items, sums.raters
    if n == 0 or raters < 2:
        return None
    mean_agreement = (sums.sum_squares - n * raters) / (n * raters * (raters - 1))
    shares = [total / (n * raters) for total in sums.category_totals]
    expected = sum(p * p for p in shares)
    if expected == 1:
        return None
    return (mean_agreement - expected) / (1 - expected)


def fleiss_sums(items: Sequence[Sequence[int]]) -> FleissSums:
    """Sums from per-item category counts, e.g. [[2, 1], [3, 0]] for (pass, fail)."""
    raters = {sum(row) for row in items}
    if len(raters) > 1:
        raise ValueError("every item must be rated by the same number of raters")
    categories = len(items[0]) if items else 0
    return FleissSums(
        items=len(items),
        raters=raters.pop() if raters else 0,
        sum_squares=sum(c * c for row in items for c in row),
        category_totals=tuple(sum(row[j] for row in items) for j in range(categories)),
    )
