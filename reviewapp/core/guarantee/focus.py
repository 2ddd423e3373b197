"""Audits where they teach the most: the audit budget, spent where bounds are nearest the target.

A flat audit rate labels every trusted pattern alike, but a pattern whose
bound sits far above the target has little to learn from one more label, while
one just above it is where a drift would first cost trust. This spends the
audit budget of the flat rate (the same expected number of audits over the
decisions counted) in inverse proportion to each trusted pattern's margin
above the target. Which decision is audited still depends only on its pattern
and what came before, never on the verdict the audit will give, so the bound
stays valid.
"""

from collections.abc import Mapping

from .patterns import VotePattern

# Added to every margin so a pattern exactly at the target gets a finite share.
MARGIN_FLOOR = 0.01


def audit_factors(
    margins: Mapping[VotePattern, float], decisions: Mapping[VotePattern, int]
) -> dict[VotePattern, float]:
    """Per trusted pattern, the multiple of the flat rate its decisions are audited at.

    `margins`: each trusted pattern's lower bound minus the target (≥ 0);
    `decisions`: how many automatic decisions each has made, the weights that
    keep the budget: Σ decisions × factor = Σ decisions.
    """
    weights = {p: 1 / (max(margin, 0.0) + MARGIN_FLOOR) for p, margin in margins.items()}
    counted = sum(decisions.get(p, 0) for p in weights)
    spent = sum(decisions.get(p, 0) * w for p, w in weights.items())
    if not counted or not spent:
        return {p: 1.0 for p in weights}
    return {p: w * counted / spent for p, w in weights.items()}


def audit_rate(flat_percent: float, factor: float | None) -> float:
    """The percent of this pattern's automatic decisions to audit (at most all of them)."""
    if factor is None:
        return flat_percent
    return min(100.0, flat_percent * factor)
