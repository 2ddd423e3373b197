"""The final step: run checkers, tally the panel, route to a decision or a human."""

import base64

from django.db import IntegrityError, transaction
from django.utils import timezone

from reviewapp.core import checkers as core_checkers
from reviewapp.core.quorum import NoQuorum, Quorum, Reached, Verdict
from reviewapp.core.routing import route
from reviewapp.ledger.services import ledger_append_evidence

from ..keys import server_signer
from ..models import CheckerConfig, Escalation, Evidence, Lens, LensFailure, Proposal
from .decisions import decision_append


def evidence_record(*, proposal: Proposal, checker: CheckerConfig) -> Evidence:
    """Run one checker on the proposal and store its signed evidence (once)."""
    existing = Evidence.objects.filter(proposal=proposal, checker=checker).first()
    if existing is not None:
        return existing
    check_input = core_checkers.CheckInput(
        content=proposal.content,
        thought_process=proposal.thought_process,
        metadata=proposal.metadata,
    )
    evidence = _runnable(checker).check(check_input, server_signer())
    try:
        with transaction.atomic():
            stored = Evidence.objects.create(
                proposal=proposal,
                checker=checker,
                checker_name=evidence.checker,
                checker_version=evidence.version,
                verdict=evidence.verdict.value,
                reason=evidence.reason,
                digests=evidence.digests,
                unenforced=list(evidence.details.get("unenforced", [])),
                payload=evidence.payload_bytes.decode(),
                signature=base64.b64encode(evidence.signature).decode(),
                key_id=evidence.key_id,
            )
            # Same transaction: evidence exists exactly when its ledger entry does.
            ledger_append_evidence(stored)
            return stored
    except IntegrityError:
        # Another delivery of the final step stored it first; checkers are
        # deterministic, so its evidence is byte-identical to ours.
        return Evidence.objects.get(proposal=proposal, checker=checker)


class _RefusedChecker(core_checkers.Checker):
    """Stands in for a configuration the core now refuses: its verdict is Inconclusive."""

    def __init__(self, name: str, version: int, refusal: str) -> None:
        super().__init__(name, version, settings={"refused": refusal})
        self.refusal = refusal

    def judge(self, inputs):
        return core_checkers.Judgement.inconclusive(f"refused before running: {self.refusal}")


def _runnable(config: CheckerConfig) -> core_checkers.Checker:
    try:
        return config.build()
    except (core_checkers.CheckError, ValueError, TypeError) as exc:
        return _RefusedChecker(config.name, config.version, str(exc))


def _tally_dict(quorum: Quorum, outcome: Reached | NoQuorum) -> dict:
    tally = outcome.tally
    if isinstance(outcome, NoQuorum):
        label = "no_quorum"
    else:
        label = "reached_pass" if outcome.verdict is Verdict.PASS else "reached_fail"
    return {
        "passed": tally.passed,
        "failed": tally.failed,
        "asked": tally.asked,
        "need": quorum.need,
        "outcome": label,
    }


def proposal_finalize(*, proposal_id: int, deadline_passed: bool = False) -> Proposal | None:
    """Route a proposal whose lenses have all answered (or whose deadline passed).

    Idempotent: a proposal already decided or escalated is left alone, so a
    re-delivered final step writes nothing.
    """
    proposal = Proposal.objects.filter(pk=proposal_id).first()
    if proposal is None or proposal.is_final:
        return None
    if proposal.lenses_answered < proposal.lenses_asked and not deadline_passed:
        return None
    snapshot = proposal.panel_snapshot
    # Checkers run before the row lock is taken: a command checker may take
    # seconds, and nothing else may wait on this proposal meanwhile.
    checkers = CheckerConfig.objects.in_bulk([c["id"] for c in snapshot["checkers"]])
    evidence = [evidence_record(proposal=proposal, checker=c) for c in checkers.values()]

    with transaction.atomic():
        proposal = Proposal.objects.select_for_update().get(pk=proposal_id)
        if proposal.is_final:
            return None
        if deadline_passed:
            _record_missing_lenses(proposal)
        judgements = list(proposal.judgements.all())
        failed = list(proposal.lens_failures.values_list("lens_name", flat=True))
        quorum = Quorum(snapshot["need"], [entry["name"] for entry in snapshot["lenses"]])
        outcome = quorum.tally([(j.lens_name, Verdict(j.verdict)) for j in judgements])
        proposal.tally = _tally_dict(quorum, outcome)
        decided = route(
            checker_verdicts=[core_checkers.CheckVerdict(e.verdict) for e in evidence],
            panel=outcome,
            failed_lenses=failed,
            requires_sign_off=snapshot["requires_sign_off"],
        )
        proposal.finalized_at = timezone.now()
        if decided.escalates:
            Escalation.objects.create(
                proposal=proposal,
                reasons=list(decided.reasons),
                detail={
                    "explanation": decided.explanation,
                    "failed_lenses": failed,
                    "inconclusive_checkers": [
                        {"checker": e.checker_name, "reason": e.reason}
                        for e in evidence
                        if e.verdict == core_checkers.CheckVerdict.INCONCLUSIVE
                    ],
                },
            )
            proposal.status = Proposal.Status.ESCALATED
        else:
            proposal.status = Proposal.Status.DECIDED
        proposal.save(
            update_fields=["tally", "finalized_at", "status", "lenses_answered", "updated_at"]
        )
        if not decided.escalates:
            decision_append(
                proposal=proposal,
                outcome=decided.outcome,
                basis="system",
                rationale=decided.explanation,
            )
    return proposal


def _record_missing_lenses(proposal: Proposal) -> None:
    """External lenses that did not answer by the deadline never answered."""
    answered = set(proposal.judgements.values_list("lens_id", flat=True)) | set(
        proposal.lens_failures.values_list("lens_id", flat=True)
    )
    missing = [e["id"] for e in proposal.panel_snapshot["lenses"] if e["id"] not in answered]
    for lens in Lens.objects.filter(pk__in=missing):
        LensFailure.objects.create(
            proposal=proposal,
            lens=lens,
            lens_name=lens.name,
            lens_version=lens.version,
            error="no judgement arrived before the panel's external deadline",
            attempts=0,
        )
    proposal.lenses_answered = proposal.lenses_asked
