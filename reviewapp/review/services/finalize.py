"""The final step: run checkers, tally the panel, route to a decision or a human."""

import base64
import logging
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Value
from django.utils import timezone

from reviewapp.core import checkers as core_checkers
from reviewapp.core.guarantee.patterns import vote_pattern
from reviewapp.core.judging import FailureKind
from reviewapp.core.quorum import NoQuorum, Quorum, Reached, Verdict
from reviewapp.core.routing import Route, below_guarantee, route
from reviewapp.core.signing import Signer
from reviewapp.ledger.keys import server_signer
from reviewapp.ledger.services import ledger_append, signed_entry

from ..automatic import Ruling, automatic_outcome_ruling
from ..models import (
    CheckerConfig,
    Decision,
    Evidence,
    Judgement,
    Lens,
    LensFailure,
    Proposal,
)
from ..statements import (
    checkers_by_pk,
    evidence_insert,
    proposal_count_save,
    proposal_final_save,
    proposal_row,
)
from .audits import audit_open_maybe
from .decisions import decision_append
from .escalating import escalation_announce, escalation_open
from .in_flight import gone_from_snapshot
from .judgements import LensAnswer, answered_lens_ids, answers_write, proposal_lock_counter

log = logging.getLogger(__name__)

_FAILURE = "lens-failure"  # not a verdict: marks a lens failure among the answers


def checker_evidence(
    *, proposal: Proposal, checker: CheckerConfig, signer: Signer
) -> core_checkers.Evidence:
    """Run one checker on the proposal: its signed evidence, not yet stored."""
    check_input = core_checkers.CheckInput(
        content=proposal.content,
        thought_process=proposal.thought_process,
        metadata=proposal.metadata,
    )
    return _runnable(checker).check(check_input, signer)


def _evidence_row(proposal: Proposal, checker: CheckerConfig, evidence) -> Evidence:
    return Evidence(
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


def proposal_finalize(
    *,
    proposal_id: int,
    deadline_passed: bool = False,
    loaded: Proposal | None = None,
    answers: list[LensAnswer] = (),
) -> Proposal | None:
    """Route a proposal whose lenses have all answered (or whose deadline passed).

    Its steps, in order: run the checkers (`_run_checkers`, before the lock);
    then under the proposal's row lock, in one transaction, write the answers
    that complete the panel (`_write_answers`; past the deadline, those never
    given are failures, `_record_missing_lenses`), read them all back
    (`_panel_answers`), tally them (`_tally`), store the checkers' evidence
    (`_store_evidence`), route (`_route`), ask the guarantee about an outcome the
    panel's vote decided alone (`_ruled`), and escalate (`_escalate`: the
    escalation, its announcement, then its ledger entries) or decide (`_decide`:
    the signed decision and its ledger entries). Once that commits, a decision's
    audit is drawn (`_audit_draw`; a won draw opens it in a transaction of its
    own): it needs not the proposal's lock, which the decision's transaction holds.

    Idempotent: a proposal already final is left alone, so a re-delivered final
    step writes nothing. A proposal has evidence exactly when it is final.
    `loaded` is the proposal as the caller read it (content, snapshot); whether
    it is final and fully answered is read again under the lock.

    `answers` are lens answers the caller has just computed and expects to
    complete the panel: they are written under the same lock, in the same
    transaction (one lock and one commit per proposal, not two). If they do
    not complete it after all, they are recorded and the proposal waits.
    """
    proposal = loaded or proposal_row.first(proposal_id)
    if proposal is None or proposal.is_final:
        return None
    if not (loaded or proposal.all_lenses_answered or deadline_passed):
        return None
    signer = server_signer()
    # Checkers run before the row lock is taken: a command checker may take
    # seconds, and nothing else may wait on this proposal meanwhile.
    checked = _run_checkers(proposal, signer)
    with transaction.atomic():
        locked = proposal_lock_counter(proposal_id)
        if locked.is_final:
            return None
        # Answered before this step: none means the answers written here are all there are.
        answered_before = locked.lenses_answered
        written = _write_answers(locked, answers, deadline_passed)
        if written is None:
            return None  # the panel still waits
        proposal.lenses_answered = locked.lenses_answered
        if deadline_passed:
            _record_missing_lenses(proposal)
        judgements, failed = _panel_answers(proposal, written, answered_before, deadline_passed)
        proposal.tally, outcome = _tally(proposal.panel_snapshot, judgements)
        evidence = _store_evidence(proposal, checked)
        verdicts = _checker_verdicts(checked, evidence)
        decided = _route(proposal.panel_snapshot, verdicts, outcome, failed)
        decided, ruling = _ruled(proposal, decided, outcome, failed, verdicts)
        proposal.finalized_at = timezone.now()
        if decided.escalates:
            _escalate(proposal, decided, checked, evidence, failed, ruling)
            return proposal
        decision = _decide(proposal, decided, signer, evidence, judgements)
    _audit_draw(proposal, decision, ruling)
    return proposal


@dataclass(frozen=True)
class _Checked:
    """The checkers' signed evidence, not yet stored, and those deleted since submission."""

    evidence: list[tuple[CheckerConfig, core_checkers.Evidence]]
    gone: list[str]  # names: each counts as inconclusive, never as skipped


def _run_checkers(proposal: Proposal, signer: Signer) -> _Checked:
    snapshot = proposal.panel_snapshot
    checkers = checkers_by_pk.in_bulk(c["id"] for c in snapshot["checkers"])
    return _Checked(
        evidence=[
            (checker, checker_evidence(proposal=proposal, checker=checker, signer=signer))
            for checker in checkers.values()
        ],
        gone=[c["name"] for c in snapshot["checkers"] if c["id"] not in checkers],
    )


def _write_answers(
    locked: Proposal, answers: list[LensAnswer], deadline_passed: bool
) -> list[Judgement | LensFailure] | None:
    """Write the answers that complete the panel; None if it still waits (they are kept)."""
    written = answers_write(locked, list(answers)) if answers else []
    if not (locked.all_lenses_answered or deadline_passed):
        if written:
            proposal_count_save(locked)
        return None
    return written


def _panel_answers(
    proposal: Proposal,
    written: list[Judgement | LensFailure],
    answered_before: int,
    deadline_passed: bool,
) -> "Answers":
    """Every lens's answer: those just written if they are all there are, else as stored.

    A lens deleted since submission left no answer: it failed, by name.
    """
    if answered_before == 0 and written and not deadline_passed:
        judgements, failed = _answers_of(written)
    else:
        judgements, failed = _answers(proposal.pk)
    snapshot = proposal.panel_snapshot
    if len(judgements) + len(failed) < len(snapshot["lenses"]):
        failed = sorted({*failed, *gone_from_snapshot(snapshot)[0]})
    return judgements, failed


def _tally(snapshot: dict, judgements) -> tuple[dict, Reached | NoQuorum]:
    """The panel's quorum over the judgements: the tally as stored, and its outcome."""
    quorum = Quorum(snapshot["need"], [entry["name"] for entry in snapshot["lenses"]])
    outcome = quorum.tally([(name, Verdict(verdict)) for name, _, verdict in judgements])
    return _tally_dict(quorum, outcome), outcome


def _store_evidence(proposal: Proposal, checked: _Checked) -> list[Evidence]:
    return evidence_insert.many(
        sorted(
            (_evidence_row(proposal, checker, e) for checker, e in checked.evidence),
            key=lambda row: row.checker_name,
        )
    )


def _checker_verdicts(checked: _Checked, evidence) -> list[core_checkers.CheckVerdict]:
    """Each checker's verdict; one deleted since submission counts as inconclusive."""
    return [core_checkers.CheckVerdict(e.verdict) for e in evidence] + [
        core_checkers.CheckVerdict.INCONCLUSIVE for _ in checked.gone
    ]


def _route(snapshot: dict, verdicts, outcome, failed: list[str]) -> Route:
    """Decided or escalated, and why (core.routing)."""
    return route(
        checker_verdicts=verdicts,
        panel=outcome,
        failed_lenses=failed,
        requires_sign_off=snapshot["requires_sign_off"],
    )


def _ruled(
    proposal: Proposal, decided: Route, outcome, failed: list[str], verdicts
) -> tuple[Route, Ruling | None]:
    """The table's last row: an outcome the panel's vote decided alone is asked of the
    apps above review (the guarantee, review/automatic.py), which may hold it for a
    person; its ruling also says at what rate to audit it."""
    pattern = vote_pattern(
        routed=decided, panel=outcome, failed_lenses=failed, checker_verdicts=verdicts
    )
    ruling = automatic_outcome_ruling(proposal=proposal, pattern=pattern) if pattern else None
    if ruling is not None and ruling.hold:
        return below_guarantee(ruling.explanation), ruling
    return decided, ruling


def _escalate(
    proposal: Proposal, decided, checked: _Checked, evidence, failed, ruling: Ruling | None
) -> None:
    """Hand the proposal to people: the escalation says why; the evidence enters the
    ledger; the escalation is announced."""
    escalation = escalation_open(
        proposal=proposal,
        reasons=list(decided.reasons),
        detail={
            "explanation": decided.explanation,
            "failed_lenses": failed,
            "inconclusive_checkers": [
                {"checker": e.checker_name, "reason": e.reason}
                for e in evidence
                if e.verdict == core_checkers.CheckVerdict.INCONCLUSIVE
            ]
            + [
                {"checker": name, "reason": "deleted after submission; it never ran"}
                for name in checked.gone
            ],
            # Held by the guarantee: the pattern, its figures and the would-be outcome.
            **({"guarantee": ruling.detail} if ruling and ruling.hold else {}),
        },
    )
    proposal.status = Proposal.Status.ESCALATED
    proposal_final_save(proposal)
    escalation_announce(escalation=escalation)
    ledger_append(signed_entry("evidence", row) for row in evidence)


def _decide(proposal: Proposal, decided, signer: Signer, evidence, judgements) -> Decision:
    """The system's signed decision, entered in the ledger after its evidence."""
    proposal.status = Proposal.Status.DECIDED
    proposal_final_save(proposal)
    return decision_append(
        proposal=proposal,
        outcome=decided.outcome,
        basis="system",
        rationale=decided.explanation,
        signer=signer,
        evidence=evidence,
        lenses=[{"lens_name": n, "lens_version": v} for n, v, _ in judgements],
        evidence_is_new=True,
    )


def _audit_draw(proposal: Proposal, decision: Decision, ruling: Ruling | None) -> None:
    """After the decision commits: draw its audit, opening the audit's escalation if won.

    Not in the decision's transaction: opening an escalation (its search vector, the
    assignment rules) would hold the proposal's lock longer.
    The decision stands either way; a worker lost between the two commits loses this one
    draw (a sample at the panel's rate, never a decision or a label). A draw that fails
    is logged, as a robust on_commit callback's error is: the step itself succeeded, and
    running it again would find the proposal final.
    """
    try:
        audit_open_maybe(proposal=proposal, decision=decision, ruling=ruling)
    except Exception:
        log.exception("audit draw failed after decision %s", decision.pk)


# (lens_name, lens_version, verdict) of each judgement, and the names of failed lenses.
Answers = tuple[list[tuple[str, int, str]], list[str]]


def _answers_of(rows: list[Judgement | LensFailure]) -> Answers:
    """What `_answers` would read back, from the rows this transaction just wrote."""
    judgements = [
        (row.lens_name, row.lens_version, row.verdict) for row in rows if isinstance(row, Judgement)
    ]
    failed = [row.lens_name for row in rows if isinstance(row, LensFailure)]
    return sorted(judgements), sorted(failed)


def _answers(proposal_id: int) -> Answers:
    """The proposal's judgements and failed lenses, as stored."""
    # order_by(): neither part nor the union may carry the models' default ordering.
    rows = (
        Judgement.objects.filter(proposal_id=proposal_id)
        .order_by()
        .values_list("lens_name", "lens_version", "verdict")
    )
    failures = (
        LensFailure.objects.filter(proposal_id=proposal_id)
        .order_by()
        .values_list("lens_name", "lens_version", Value(_FAILURE))
    )
    judgements, failed = [], []
    # One round trip for both: this runs for every proposal.
    for name, version, verdict in rows.union(failures, all=True).order_by():
        if verdict == _FAILURE:
            failed.append(name)
        else:
            judgements.append((name, version, verdict))
    return sorted(judgements), sorted(failed)


def _record_missing_lenses(proposal: Proposal) -> None:
    """External lenses that did not answer by the deadline never answered."""
    answered = answered_lens_ids(proposal.pk)
    missing = [e["id"] for e in proposal.panel_snapshot["lenses"] if e["id"] not in answered]
    for lens in Lens.objects.filter(pk__in=missing):
        LensFailure.objects.create(
            proposal=proposal,
            lens=lens,
            lens_name=lens.name,
            lens_version=lens.version,
            error="no judgement arrived before the panel's external deadline",
            kind=FailureKind.DEADLINE,
            attempts=0,
        )
    proposal.lenses_answered = proposal.lenses_asked
