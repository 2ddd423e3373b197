"""The guarantee's figures in words, for templates/guarantee/_figures.html."""

from django import template

from ..explain import percent as percent_text
from ..models import PanelGuarantee
from ..queries import GuaranteeFigures, PatternFigures

register = template.Library()


@register.filter
def percent(value: float | None) -> str:
    return percent_text(value)


@register.simple_tag
def needs(figures: PatternFigures, guarantee: PanelGuarantee) -> str:
    """What the pattern still needs before the machine may decide it."""
    standing = figures.standing
    if guarantee.target is None:
        return "— (no guarantee)"
    if standing.trusted:
        return "trusted"
    parts = []
    if standing.labels_to_trust:
        more = standing.labels_to_trust
        parts.append(f"{more} more agreeing label{'s' if more != 1 else ''}")
    if standing.waits_on is not None:
        parts.append(f"first: {standing.waits_on.votes}")
    return "; ".join(parts)


@register.simple_tag
def overall(figures: GuaranteeFigures) -> str:
    result = figures.overall
    if not result.decisions:
        return "No automatic decision under this configuration yet."
    confidence = percent_text(figures.guarantee.confidence)
    estimate = (
        f"estimated {percent_text(result.estimate)}"
        if result.estimate is not None
        else "not yet estimated (a pattern that decided has no label)"
    )
    return (
        f"Agreement of all {result.decisions} automatic decisions, each pattern weighted by "
        f"how many it made: {estimate}; between {percent_text(result.low)} and "
        f"{percent_text(result.high)} with {confidence} confidence."
    )
