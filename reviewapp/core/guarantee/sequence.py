"""Which vote patterns are trusted: fixed-sequence testing over each outcome's chain.

Each pattern's bound is valid alone; routing trusts several at once, and the
promise is about all of them together. So patterns are tested as a fixed
sequence (Maurer, Hothorn & Lehmacher 1995; Westfall & Krishen 2001): in the
order `patterns.chains` fixes before any label is seen, strongest first, each at
the full level, stopping at the first that does not clear the target. A false
trust needs the first pattern that truly falls short to be trusted, so the
chance of any is at most that pattern's level, at every moment at once (its
bound is anytime-valid).

There are two chains, approvals and rejections, each at half of 1 − confidence
(Bonferroni): in one chain, a rare rejection pattern ahead of the common
approval ones would hold them all back.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from .bound import is_trusted, labels_to_trust, lower_bound, upper_bound
from .patterns import OUTCOMES, VotePattern, chains


@dataclass(frozen=True, slots=True)
class Labels:
    """What the database sums for one pattern: its human labels and how many agreed."""

    labels: int = 0
    agreed: int = 0


@dataclass(frozen=True, slots=True)
class Standing:
    pattern: VotePattern
    labels: int
    agreed: int
    lower_bound: float
    # The pattern's own bound clears the target (None: the guarantee is off).
    clears: bool | None
    # It clears, and so does every stronger pattern of its chain: the machine may decide it.
    trusted: bool
    # More labels, all agreeing, before its own bound clears (None: off).
    labels_to_trust: int | None
    # The first stronger pattern of its chain that does not clear, which holds it back.
    waits_on: VotePattern | None


def chain_alpha(confidence: float) -> float:
    """Each chain's level: 1 − confidence shared between the two chains."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence!r}")
    return (1 - confidence) / len(OUTCOMES)


def own_standing(
    pattern: VotePattern, counts: Labels, *, target: float | None, confidence: float
) -> Standing:
    """A pattern alone, before its chain is walked (`trusted` False, `waits_on` None)."""
    alpha = chain_alpha(confidence)
    clears = more = None
    if target is not None:
        clears = is_trusted(agreed=counts.agreed, labels=counts.labels, target=target, alpha=alpha)
        more = labels_to_trust(
            agreed=counts.agreed, labels=counts.labels, target=target, alpha=alpha
        )
    return Standing(
        pattern=pattern,
        labels=counts.labels,
        agreed=counts.agreed,
        lower_bound=lower_bound(agreed=counts.agreed, labels=counts.labels, alpha=alpha),
        clears=clears,
        trusted=False,
        labels_to_trust=more,
        waits_on=None,
    )


def walk_chains(own: Iterable[Standing]) -> list[Standing]:
    """Each chain in order: trusted while every pattern so far clears; strongest first."""
    by_pattern = {s.pattern: s for s in own}
    walked = []
    for chain in chains(by_pattern).values():
        blocker = None
        for pattern in chain:
            standing = by_pattern[pattern]
            trusted = blocker is None and bool(standing.clears)
            walked.append(replace(standing, trusted=trusted, waits_on=blocker))
            if not standing.clears and blocker is None:
                blocker = pattern
    return walked


def standings(
    counts: Mapping[VotePattern, Labels],
    *,
    patterns: Iterable[VotePattern],
    target: float | None,
    confidence: float,
) -> list[Standing]:
    """Every pattern of `patterns` (and any counted), each chain strongest first."""
    every = {*patterns, *counts}
    return walk_chains(
        own_standing(p, counts.get(p, Labels()), target=target, confidence=confidence)
        for p in every
    )


@dataclass(frozen=True, slots=True)
class Overall:
    """The agreement of all automatic decisions, each pattern weighted by how many it decided."""

    decisions: int
    # Σ share × observed agreement; None while a pattern that decided has no label.
    estimate: float | None
    low: float | None
    high: float | None


def overall(rows: Iterable[tuple[Labels, int]], *, confidence: float) -> Overall:
    """`rows`: per pattern, its labels and its automatic decisions.

    The interval is simultaneous: each pattern's two-sided interval at
    (1 − confidence) / (2k) for the k patterns that decided (Bonferroni), so
    the weighted sums of the bounds hold together at `confidence`. The weights
    are the decisions actually made, so they are known, not estimated.
    """
    weighted = [(counts, decided) for counts, decided in rows if decided > 0]
    total = sum(decided for _, decided in weighted)
    if not total:
        return Overall(0, None, None, None)
    alpha = (1 - confidence) / (2 * len(weighted))
    low = high = 0.0
    estimate: float | None = 0.0
    for counts, decided in weighted:
        share = decided / total
        low += share * lower_bound(agreed=counts.agreed, labels=counts.labels, alpha=alpha)
        high += share * upper_bound(agreed=counts.agreed, labels=counts.labels, alpha=alpha)
        if counts.labels and estimate is not None:
            estimate += share * counts.agreed / counts.labels
        else:
            estimate = None
    return Overall(total, estimate, low, high)
