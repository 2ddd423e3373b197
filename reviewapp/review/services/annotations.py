"""A reviewer's claim marks, tags and "right for the wrong reason": checked, signed, stored.

One place both adjudication flows call: ``annotations_validate`` turns what a
reviewer sent into ``Annotations`` (or raises ``AnnotationError`` naming every
unknown claim, tag or lens), ``annotations_payload`` is what the decision
signs (only the keys that have something, so a decision without annotations
signs exactly as before), and ``annotations_store`` writes the rows that
restate it, in the decision's transaction.
"""

from dataclasses import dataclass, field

from ..models import Claim, ClaimMark, Decision, DecisionTag, Judgement, Proposal, Tag, WrongReason

MARKS = tuple(ClaimMark.Mark.values)
# A lens's verdict that agrees with each outcome.
AGREEING_VERDICT = {Decision.Outcome.APPROVED: "pass", Decision.Outcome.REJECTED: "fail"}


class AnnotationError(ValueError):
    """What the reviewer sent names claims, tags or lenses that do not fit this proposal."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Annotations:
    # (claim, mark), in claim id order
    marks: tuple[tuple[Claim, str], ...] = ()
    tags: tuple[Tag, ...] = ()
    # the judgements of lenses right for the wrong reason, by lens name
    wrong_reason: tuple[Judgement, ...] = field(default=())

    def __bool__(self) -> bool:
        return bool(self.marks or self.tags or self.wrong_reason)


def annotations_validate(
    *,
    proposal: Proposal,
    outcome: str,
    marks: list[tuple[object, object]] | None = None,
    tags: list[object] | None = None,
    wrong_reason: list[object] | None = None,
) -> Annotations:
    """Check marks ((claim id, mark) pairs), tag names and lens names against the proposal.

    Claims must be the proposal's own grounded (not dropped) claims, tags
    active admin-defined ones, and a lens "right for the wrong reason" one
    whose verdict agrees with ``outcome``. Every problem is named at once.
    """
    problems: list[str] = []
    claims, chosen = _marks_checked(proposal, marks or [], problems)
    names, known = _tags_checked(tags or [], problems)
    judgements = _wrong_reason_checked(proposal, outcome, wrong_reason or [], problems)
    if problems:
        raise AnnotationError(problems)
    return Annotations(
        marks=tuple((claims[i], chosen[i]) for i in sorted(chosen)),
        tags=tuple(sorted({known[n] for n in names}, key=lambda t: t.name)),
        wrong_reason=tuple(sorted(judgements.values(), key=lambda j: j.lens_name)),
    )


def _marks_checked(proposal: Proposal, marks, problems: list[str]):
    """The proposal's grounded claims by id, and the mark chosen for each marked one."""
    claims = {
        c.pk: c
        for c in Claim.objects.filter(judgement__proposal=proposal, dropped=False).select_related(
            "judgement"
        )
    }
    chosen: dict[int, str] = {}
    unknown_claims, bad_marks, repeated = [], [], []
    for claim_id, mark in marks:
        if isinstance(claim_id, bool) or not isinstance(claim_id, int) or claim_id not in claims:
            unknown_claims.append(str(claim_id))
        elif mark not in MARKS:
            bad_marks.append(f"{claim_id}: {mark!r}")
        elif claim_id in chosen:
            repeated.append(str(claim_id))
        else:
            chosen[claim_id] = mark
    if unknown_claims:
        problems.append(
            f"unknown claim id(s) for proposal {proposal.pk}: {', '.join(unknown_claims)}"
        )
    if bad_marks:
        problems.append(f"mark must be one of {', '.join(MARKS)} ({'; '.join(bad_marks)})")
    if repeated:
        problems.append(f"claim(s) marked twice: {', '.join(repeated)}")
    return claims, chosen


def _tags_checked(tags, problems: list[str]):
    """The tag names given, and the active tags among them by name."""
    names = [str(t) for t in tags]
    known = {t.name: t for t in Tag.objects.filter(name__in=names, active=True)}
    unknown_tags = sorted({n for n in names if n not in known})
    if unknown_tags:
        problems.append(f"unknown tag(s): {', '.join(unknown_tags)}")
    return names, known


def _wrong_reason_checked(proposal: Proposal, outcome: str, lens_names, problems: list[str]):
    """The judgements named "right for the wrong reason", by lens name."""
    lens_names = [str(n) for n in lens_names]
    found = Judgement.objects.filter(proposal=proposal, lens_name__in=lens_names)
    judgements = {j.lens_name: j for j in found}
    unknown_lenses = sorted({n for n in lens_names if n not in judgements})
    if unknown_lenses:
        problems.append(f"no judgement on this proposal by lens(es): {', '.join(unknown_lenses)}")
    disagreeing = sorted(
        n for n, j in judgements.items() if j.verdict != AGREEING_VERDICT.get(outcome, j.verdict)
    )
    if disagreeing:
        problems.append(
            "right for the wrong reason needs a verdict that matches the outcome; "
            f"not so for: {', '.join(disagreeing)}"
        )
    return judgements


def annotations_payload(annotations: Annotations | None) -> dict:
    """The keys the decision signs; none at all when there is nothing (the payload is unchanged)."""
    if not annotations:
        return {}
    part: dict = {}
    if annotations.marks:
        part["claims"] = [
            {"claim": c.pk, "lens": c.judgement.lens_name, "mark": mark}
            for c, mark in annotations.marks
        ]
    if annotations.tags:
        part["tags"] = [t.name for t in annotations.tags]
    if annotations.wrong_reason:
        part["wrong_reason"] = [j.lens_name for j in annotations.wrong_reason]
    return part


def annotations_store(*, decision: Decision, annotations: Annotations | None) -> None:
    """The rows restating what the decision signed; call inside its transaction."""
    if not annotations:
        return
    ClaimMark.objects.bulk_create(
        ClaimMark(decision=decision, claim=c, mark=mark) for c, mark in annotations.marks
    )
    DecisionTag.objects.bulk_create(DecisionTag(decision=decision, tag=t) for t in annotations.tags)
    WrongReason.objects.bulk_create(
        WrongReason(decision=decision, judgement=j) for j in annotations.wrong_reason
    )
