"""The guarantee in words: the promise, and why a proposal went to a person because of it."""

from reviewapp.core.guarantee.patterns import VotePattern


def percent(value: float | None) -> str:
    """0.95 → "95 %", 0.9125 → "91.2 %" (at most one decimal, none when whole)."""
    if value is None:
        return "—"
    shown = f"{value * 100:.1f}".removesuffix(".0")
    return f"{shown} %"


def promise(*, target: float | None, confidence: float) -> str:
    """The sentence the panel's page shows."""
    if target is None:
        return (
            "No guarantee: this panel decides whenever its quorum is reached, "
            "however often reviewers agree with it."
        )
    return (
        f"With {percent(confidence)} confidence, at least {percent(target)} of this panel's "
        "automatic decisions match what a reviewer would decide."
    )


def labels_text(labels: int, agreed: int) -> str:
    if not labels:
        return "no human label yet"
    return f"{agreed} of {labels} human label{'s' if labels != 1 else ''} agreed"


def held_reason(detail: dict) -> str:
    """Why a proposal went to a person, without the pattern's figures: the escalation's
    stored explanation, which the API and webhooks give to the client that submitted it.
    The figures sum every client's labels, so only reviewers' pages show them."""
    return (
        f"The panel's vote ({detail['votes']}) would have {detail['would_be']} it, but the "
        "panel's guarantee does not trust that vote pattern yet, so a reviewer decides."
    )


def held_explanation(detail: dict) -> str:
    """Why a proposal the panel's vote decided went to a person, with its pattern's figures
    (for reviewers' pages)."""
    labelled = labels_text(detail["labels"], detail["agreed"])
    said = [
        f"The panel's vote ({detail['votes']}) would have {detail['would_be']} it, but the "
        f"panel's guarantee does not trust that vote pattern yet: {labelled}, a lower bound "
        f"of {percent(detail['lower_bound'])} against a target of {percent(detail['target'])}."
    ]
    more = detail.get("labels_to_trust")
    if more:
        said.append(f"It needs {more} more agreeing label{'s' if more != 1 else ''}.")
    if detail.get("waits_on"):
        stronger = VotePattern.from_key(detail["waits_on"]).votes
        said.append(f"It also waits on a stronger pattern ({stronger}) to be trusted first.")
    return " ".join(said)


def held_summary(detail: dict) -> str:
    """The same, in one line for the inbox: "would be approved · 3 of 3 pass, … · …"."""
    parts = [
        f"would be {detail['would_be']}",
        detail["votes"],
        labels_text(detail["labels"], detail["agreed"]),
        f"lower bound {percent(detail['lower_bound'])} of a {percent(detail['target'])} target",
    ]
    if detail.get("labels_to_trust"):
        parts.append(f"{detail['labels_to_trust']} more agreeing labels to go")
    return " · ".join(parts)
