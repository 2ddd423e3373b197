"""The pipeline through its services, in-process: every route of SPEC §4."""

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction

from reviewapp.ledger.models import LedgerEntry
from reviewapp.review.evaluation.tasks import evaluate_proposal, finalize_proposal
from reviewapp.review.models import (
    CheckerConfig,
    Claim,
    Decision,
    Escalation,
    Judgement,
    Lens,
    LensFailure,
    Proposal,
)
from reviewapp.review.services.judgements import (
    judgement_answer,
    judgement_record,
    lens_answers_record,
)
from reviewapp.review.services.proposals import proposals_past_external_deadline
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, submit
from tests.support.tamper import tampering

pytestmark = pytest.mark.django_db

CONTENT = "The algorithm sorts in O(n log n) time and is stable. 🚀 Done."


def three_lens_panel(verdicts, *, need=3, checkers=(), content=CONTENT, **panel_kwargs):
    lenses = [LensFactory() for _ in verdicts]
    for lens, verdict in zip(lenses, verdicts, strict=True):
        recorded(lens, content, judgement(verdict, "sorts in O(n log n) time"))
    return PanelFactory(lenses=lenses, need=need, checkers=list(checkers), **panel_kwargs)


def test_unanimous_pass_with_passing_checker_is_approved_and_signed():
    panel = three_lens_panel(["pass", "pass", "pass"], checkers=[CheckerFactory()])
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.status == Proposal.Status.DECIDED
    assert proposal.decision.outcome == "approved"
    assert proposal.decision.basis == "system"
    assert proposal.tally == {
        "passed": 3,
        "failed": 0,
        "asked": 3,
        "need": 3,
        "outcome": "reached_pass",
    }


def test_a_failing_checker_rejects_a_unanimous_pass():
    checker = CheckerFactory(settings={"pattern": "constant time", "must_match": True})
    panel = three_lens_panel(["pass", "pass", "pass"], checkers=[checker])
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.decision.outcome == "rejected"
    assert proposal.evidence.get().verdict == "fail"


def test_an_inconclusive_command_checker_escalates(tmp_path):
    checker = CheckerConfig.objects.create(
        name="slow-command",
        kind=CheckerConfig.Kind.COMMAND,
        settings={"argv": ["/bin/sleep", "5"], "timeout_seconds": 0.3},
        grants=["proc:exec:/bin/sleep"],
    )
    panel = three_lens_panel(["pass", "pass", "pass"], checkers=[checker])
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.status == Proposal.Status.ESCALATED
    escalation = proposal.escalations.get()
    assert escalation.reasons == ["inconclusive"]
    assert escalation.detail["inconclusive_checkers"][0]["checker"] == "slow-command"
    assert not Decision.objects.exists()


def test_a_split_panel_escalates_with_no_quorum():
    panel = three_lens_panel(["pass", "pass", "fail"])
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.status == Proposal.Status.ESCALATED
    assert proposal.escalations.get().reasons == ["no_quorum"]
    assert proposal.tally["outcome"] == "no_quorum"


def test_a_panel_reaching_fail_is_rejected():
    panel = three_lens_panel(["fail", "fail", "pass"], need=2)
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.decision.outcome == "rejected"
    assert proposal.tally["outcome"] == "reached_fail"


def test_a_sign_off_panel_escalates_a_reached_pass():
    panel = three_lens_panel(["pass", "pass", "pass"], requires_sign_off=True)
    proposal = evaluate_in_process(submit(panel, CONTENT))
    assert proposal.escalations.get().reasons == ["sign_off"]


def test_a_lens_that_fails_is_recorded_and_named_on_the_escalation():
    good = [LensFactory(), LensFactory()]
    for lens in good:
        recorded(lens, CONTENT, judgement("pass", "sorts in O(n log n) time"))
    broken = LensFactory(name="garbled")
    recorded(broken, CONTENT, "not json at all", "still not json")
    panel = PanelFactory(lenses=[*good, broken], need=2)
    proposal = evaluate_in_process(submit(panel, CONTENT))
    failure = LensFailure.objects.get(proposal=proposal)
    assert failure.lens_name == "garbled" and "malformed" in failure.error
    assert not Judgement.objects.filter(proposal=proposal, lens=broken).exists()
    assert proposal.escalations.get().reasons == ["lens_failed"]
    assert proposal.escalations.get().detail["failed_lenses"] == ["garbled"]


def test_grounded_claims_carry_utf16_anchors_into_the_answer_body():
    panel = three_lens_panel(["pass"], need=1, content="🚀 sorts in O(n log n) time")
    proposal = evaluate_in_process(submit(panel, "🚀 sorts in O(n log n) time"))
    claim = Claim.objects.get(judgement__proposal=proposal)
    assert (claim.anchor_kind, claim.start_utf16, claim.end_utf16) == ("answer_body", 3, 27)
    assert claim.text == "sorts in O(n log n) time"
    assert len(claim.claim_id) == 6


def awaiting_external(verdicts, *, external="outside"):
    """A proposal whose task ran: recorded lenses answering `verdicts`, all of them needed,
    and an external lens that has not answered, so the panel waits."""
    inside = [LensFactory() for _ in verdicts]
    for lens, verdict in zip(inside, verdicts, strict=True):
        recorded(lens, CONTENT, judgement(verdict, "sorts in O(n log n) time"))
    outside = LensFactory(backend=Lens.Backend.EXTERNAL, name=external)
    panel = PanelFactory(lenses=[*inside, outside], need=len(inside) + 1)
    proposal = submit(panel, CONTENT)
    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    return proposal, outside


def external_answers(proposal, lens, verdict="pass") -> None:
    """The external lens's judgement arrives (the final step it enqueues is not run here)."""
    judgement_record(
        proposal_id=proposal.pk, lens=lens, verdict=verdict, rationale="Judged.", claims=[]
    )


def test_a_re_delivered_task_stores_each_judgement_once():
    proposal, _ = awaiting_external(["pass"])
    evaluate_proposal(proposal.pk)  # the broker hands the task back
    assert Judgement.objects.filter(proposal=proposal).count() == 1
    proposal.refresh_from_db()
    assert proposal.lenses_answered == 1


def test_running_the_final_step_twice_writes_one_decision():
    panel = three_lens_panel(["pass"], need=1)
    proposal = submit(panel, CONTENT)
    evaluate_proposal(proposal.pk)
    finalize_proposal(proposal.pk)
    finalize_proposal(proposal.pk)
    assert Decision.objects.filter(proposal=proposal).count() == 1


def test_running_the_final_step_twice_on_an_escalation_opens_one_escalation():
    panel = three_lens_panel(["pass", "fail", "pass"])
    proposal = submit(panel, CONTENT)
    evaluate_in_process(proposal)
    finalize_proposal(proposal.pk, deadline_passed=True)
    assert Escalation.objects.filter(proposal=proposal).count() == 1


def test_the_final_step_waits_until_every_lens_answered():
    proposal, _ = awaiting_external(["pass", "pass"])
    finalize_proposal(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.EVALUATING
    assert proposal.lenses_answered == 2


def test_the_lens_that_answers_last_has_the_final_step_run(
    monkeypatch, django_capture_on_commit_callbacks
):
    proposal, outside = awaiting_external(["pass", "pass"])
    # What a worker does with the final step the last answer enqueues: run it.
    monkeypatch.setattr(finalize_proposal, "delay", finalize_proposal)
    with django_capture_on_commit_callbacks(execute=True):
        external_answers(proposal, outside)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.DECIDED
    assert proposal.decision.outcome == "approved"


def test_the_proposals_task_marks_it_evaluating_once():
    inside = LensFactory()
    recorded(inside, CONTENT, judgement("pass"))
    outside = LensFactory(backend=Lens.Backend.EXTERNAL)
    proposal = submit(PanelFactory(lenses=[inside, outside], need=2), CONTENT)
    assert (proposal.status, proposal.evaluation_started_at) == (Proposal.Status.QUEUED, None)
    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    started = proposal.evaluation_started_at
    assert proposal.status == Proposal.Status.EVALUATING and started is not None
    evaluate_proposal(proposal.pk)  # the sweeper's, or a re-delivery
    proposal.refresh_from_db()
    assert proposal.evaluation_started_at == started


def _messages_sent_on_submission(monkeypatch, django_capture_on_commit_callbacks, panel):
    """Every task message submitting to ``panel`` sends, as (task name, args, queue)."""
    sent = []

    def send_task(name, args=None, kwargs=None, **options):
        queue = evaluate_proposal.app.amqp.router.route(options, name, args, kwargs)["queue"]
        sent.append((name, tuple(args), queue.name))

    monkeypatch.setattr(evaluate_proposal.app, "send_task", send_task)
    with django_capture_on_commit_callbacks(execute=True):
        proposal = submit(panel, CONTENT)
    return proposal, sent


def test_submission_sends_a_proposal_without_llm_lenses_as_its_one_task(
    monkeypatch, django_capture_on_commit_callbacks
):
    panel = PanelFactory(
        lenses=[LensFactory(), LensFactory(), LensFactory(backend=Lens.Backend.EXTERNAL)], need=3
    )
    proposal, sent = _messages_sent_on_submission(
        monkeypatch, django_capture_on_commit_callbacks, panel
    )
    assert sent == [(evaluate_proposal.name, (proposal.pk,), "celery")]


def test_submission_sends_a_proposal_with_llm_lenses_as_its_one_task(
    monkeypatch, django_capture_on_commit_callbacks
):
    llm = [LensFactory(backend=Lens.Backend.LLM, base_url="http://127.0.0.1:9/v1", model="m")]
    panel = PanelFactory(lenses=[*llm, LensFactory(), LensFactory()], need=3)
    proposal, sent = _messages_sent_on_submission(
        monkeypatch, django_capture_on_commit_callbacks, panel
    )
    # The same task and queue as any proposal: its LLM lenses go on from there to the loop.
    assert sent == [(evaluate_proposal.name, (proposal.pk,), "celery")]


def test_one_task_runs_every_cpu_lens_inline_and_ends_the_proposal():
    panel = three_lens_panel(["pass", "pass", "pass"])
    proposal = submit(panel, CONTENT)
    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.DECIDED
    assert proposal.judgements.count() == 3


def test_a_re_delivered_task_runs_the_final_step_its_first_delivery_never_reached():
    proposal, outside = awaiting_external(["pass"])
    # The last answer's enqueued final step was lost (the broker restarted before it ran).
    external_answers(proposal, outside)
    evaluate_proposal(proposal.pk)  # the proposal's task, handed back by the broker
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.DECIDED
    assert Judgement.objects.filter(proposal=proposal).count() == 2


def _answered_already(proposal, lens) -> None:
    """`lens`'s answer recorded before the proposal's task was lost."""
    answer = judgement_answer(lens=lens, verdict="pass", rationale="Reasoned.", claims=[])
    lens_answers_record(proposal_id=proposal.pk, answers=[answer])


def test_the_sweepers_evaluation_runs_the_cpu_lenses_yet_to_answer_and_ends_the_proposal():
    panel = three_lens_panel(["pass", "pass", "pass"])
    proposal = submit(panel, CONTENT)
    _answered_already(proposal, panel.lenses.order_by("pk").first())
    evaluate_proposal(proposal.pk, swept=True)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.DECIDED
    assert Judgement.objects.filter(proposal=proposal).count() == 3


def test_the_sweepers_evaluation_hands_only_the_unanswered_llm_lenses_to_the_loop(monkeypatch):
    def llm_lens():
        return LensFactory(backend=Lens.Backend.LLM, base_url="http://127.0.0.1:9/v1", model="m")

    answered, unanswered = llm_lens(), llm_lens()
    cpu = LensFactory()
    recorded(cpu, CONTENT, judgement("pass"))
    proposal = submit(PanelFactory(lenses=[answered, unanswered, cpu], need=3), CONTENT)
    _answered_already(proposal, answered)
    handed = []
    monkeypatch.setattr(
        "reviewapp.review.evaluation.tasks.llm_loop.judge_in_background", handed.append
    )
    evaluate_proposal(proposal.pk, swept=True)
    [job] = handed
    assert (job.proposal_id, [lens.pk for lens in job.lenses]) == (proposal.pk, [unanswered.pk])
    assert (job.content, job.policy.value) == (CONTENT, proposal.panel_snapshot["grounding_policy"])
    assert Judgement.objects.filter(proposal=proposal, lens=cpu).count() == 1
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.EVALUATING  # the final step waits for the loop


def test_the_sweepers_evaluation_runs_the_final_step_once_every_lens_answered():
    proposal, outside = awaiting_external(["pass"])
    # A worker died between the last answer and the final step.
    external_answers(proposal, outside)
    evaluate_proposal(proposal.pk, swept=True)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.DECIDED
    assert proposal.final_step_attempts == 1


def test_progress_counts_answered_lenses():
    inside = [LensFactory(), LensFactory()]
    for lens in inside:
        recorded(lens, CONTENT, judgement("pass"))
    outside = LensFactory(backend=Lens.Backend.EXTERNAL)
    proposal = submit(PanelFactory(lenses=[*inside, outside], need=3), CONTENT)
    assert (proposal.lenses_answered, proposal.lenses_asked) == (0, 3)
    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    assert (proposal.lenses_answered, proposal.lenses_asked) == (2, 3)


def test_a_constraints_lens_passes_when_every_checkable_constraint_holds():
    lens = LensFactory(backend=Lens.Backend.CONSTRAINTS, mandate="must not contain 'guaranteed'")
    panel = PanelFactory(lenses=[lens], need=1)
    proposal = evaluate_in_process(submit(panel, "A careful answer."))
    assert proposal.decision.outcome == "approved"


def test_a_constraints_lens_fails_listing_violations_and_unenforced_clauses():
    lens = LensFactory(
        backend=Lens.Backend.CONSTRAINTS,
        mandate="must not contain 'guaranteed'; be polite to everyone",
    )
    panel = PanelFactory(lenses=[lens], need=1)
    proposal = evaluate_in_process(submit(panel, "Delivery is guaranteed."))
    judged = proposal.judgements.get()
    assert judged.verdict == "fail"
    assert "guaranteed" in judged.rationale
    assert "Unenforced" in judged.rationale and "be polite" in judged.rationale


def test_external_lenses_wait_then_the_deadline_records_them_as_failed():
    outside = LensFactory(backend=Lens.Backend.EXTERNAL, name="human-panel")
    inside = LensFactory()
    recorded(inside, CONTENT, judgement("pass"))
    panel = PanelFactory(lenses=[inside, outside], need=2)
    proposal = submit(panel, CONTENT)
    evaluate_in_process(proposal)
    assert proposal.status == Proposal.Status.EVALUATING  # still waiting for the external lens
    finalize_proposal(proposal.pk, deadline_passed=True)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.ESCALATED
    failure = LensFailure.objects.get(proposal=proposal)
    assert (failure.lens_name, failure.kind) == ("human-panel", "deadline")


def test_verify_decisions_passes_on_an_untouched_chain():
    for _ in range(3):
        evaluate_in_process(submit(three_lens_panel(["pass"], need=1), CONTENT))
    call_command("verify_decisions")


def test_verify_decisions_names_an_edited_outcome():
    proposals = [
        evaluate_in_process(submit(three_lens_panel(["pass"], need=1), CONTENT)) for _ in range(3)
    ]
    edited = proposals[1].decision
    with tampering():
        Decision.objects.filter(pk=edited.pk).update(outcome="rejected")
    with pytest.raises(CommandError, match=f"decision {edited.pk} .*outcome"):
        call_command("verify_decisions")


def test_verify_decisions_names_an_edited_decider():
    decision = evaluate_in_process(submit(three_lens_panel(["pass"], need=1), CONTENT)).decision
    with tampering():
        Decision.objects.filter(pk=decision.pk).update(decided_by_name="a reviewer")
    with pytest.raises(CommandError, match=f"decision {decision.pk} .*decided_by_name"):
        call_command("verify_decisions")


def test_verify_decisions_catches_edited_signed_bytes():
    decision = evaluate_in_process(submit(three_lens_panel(["pass"], need=1), CONTENT)).decision
    with tampering():
        Decision.objects.filter(pk=decision.pk).update(
            payload=decision.payload.replace('"approved"', '"rejected"')
        )
    with pytest.raises(CommandError, match=f"decision {decision.pk}"):
        call_command("verify_decisions")


def test_verify_decisions_catches_a_deleted_decision():
    decisions = [
        evaluate_in_process(submit(three_lens_panel(["pass"], need=1), CONTENT)).decision
        for _ in range(3)
    ]
    with tampering():
        # The ledger entry holds on to the decision; a DBA has to remove both.
        LedgerEntry.objects.filter(decision_id=decisions[1].pk).delete()
        Decision.objects.filter(pk=decisions[1].pk).delete()
    # Signed alone, the decisions name no predecessor: the gap in the log shows it.
    with pytest.raises(CommandError, match=r"ledger entry 1 is missing"):
        call_command("verify_decisions")


def test_the_database_refuses_to_edit_or_delete_a_decision():
    decision = evaluate_in_process(submit(three_lens_panel(["pass"], need=1), CONTENT)).decision
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.filter(pk=decision.pk).update(outcome="rejected")
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM review_decision WHERE id = %s", [decision.pk])
    decision.refresh_from_db()
    assert decision.outcome == "approved"


def test_a_proposal_waiting_on_an_external_lens_is_due_once_its_deadline_passes():
    outside = LensFactory(backend=Lens.Backend.EXTERNAL)
    panel = PanelFactory(lenses=[outside], need=1, external_deadline_seconds=0)
    waiting = submit(panel, CONTENT)
    assert waiting.status == Proposal.Status.EVALUATING  # nothing for the worker to start
    assert proposals_past_external_deadline() == [waiting.pk]


def test_a_proposal_without_external_lenses_has_no_deadline():
    proposal = submit(three_lens_panel(["pass"], need=1), CONTENT)
    assert proposal.external_deadline_at is None
    assert proposals_past_external_deadline() == []


def test_a_time_limit_reached_in_an_inline_lens_records_lens_failures_and_ends_the_proposal(
    monkeypatch,
):
    from celery.exceptions import SoftTimeLimitExceeded

    panel = three_lens_panel(["pass", "pass", "pass"], need=2)
    proposal = submit(panel, CONTENT)

    def out_of_time(**kwargs):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr("reviewapp.review.evaluation.tasks.evaluate_lens", out_of_time)
    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.ESCALATED
    failures = LensFailure.objects.filter(proposal=proposal)
    assert failures.count() == 3
    assert all("time limit was reached" in f.error for f in failures)


def _answered_but_final_step_broken(monkeypatch, error):
    panel = three_lens_panel(["pass"], need=1)
    proposal = submit(panel, CONTENT)

    def broken(**kwargs):
        raise error

    monkeypatch.setattr("reviewapp.review.evaluation.tasks.proposal_finalize", broken)
    with pytest.raises(type(error)):
        evaluate_proposal(proposal.pk)
    return proposal


def test_a_final_step_that_keeps_failing_escalates_after_the_bounded_attempts(
    monkeypatch, settings
):
    from django.db import DataError

    settings.REVIEWAPP_FINAL_STEP_ATTEMPTS = 3
    proposal = _answered_but_final_step_broken(
        monkeypatch, DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes \x00")
    )
    for _ in range(2):  # the sweeper's retries, each failing again
        with pytest.raises(DataError):
            evaluate_proposal(proposal.pk, swept=True)
    evaluate_proposal(proposal.pk, swept=True)  # the third: no more retries
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.ESCALATED
    escalation = proposal.escalations.get()
    assert escalation.reasons == ["final_step_failed"]
    explanation = escalation.detail["explanation"]
    assert "after 3 attempts" in explanation and "DataError" in explanation
    assert "\x00" not in explanation
    # Escalated once: the sweeper's next visit finds it final and writes nothing.
    evaluate_proposal(proposal.pk, swept=True)
    assert proposal.escalations.count() == 1


def test_a_final_step_that_succeeds_on_a_retry_is_not_escalated(monkeypatch, settings):
    settings.REVIEWAPP_FINAL_STEP_ATTEMPTS = 3
    with monkeypatch.context() as broken:
        proposal = _answered_but_final_step_broken(broken, RuntimeError("checker crashed"))
    evaluate_proposal(proposal.pk, swept=True)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.DECIDED
    assert not proposal.escalations.exists()


def _statements_evaluating(proposal) -> list[str]:
    """The SQL of one run of the proposal's task, in order."""
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    return [q["sql"] for q in queries.captured_queries]


def test_a_proposal_of_cpu_lenses_writes_its_answers_and_its_outcome_in_one_transaction():
    panel = three_lens_panel(["pass", "pass", "pass"], need=2)
    # The first decision registers the key.
    evaluate_proposal(submit(panel, CONTENT).pk)
    proposal = submit(panel, CONTENT)
    statements = _statements_evaluating(proposal)
    assert proposal.status == Proposal.Status.DECIDED
    # Inside the test's own transaction a transaction shows as a savepoint.
    assert sum(s.startswith("SAVEPOINT") for s in statements) == 1
    # The three judgements in one INSERT, their claims in another.
    assert sum(s.startswith('INSERT INTO "review_judgement"') for s in statements) == 1
    assert sum(s.startswith('INSERT INTO "review_claim"') for s in statements) == 1


def test_answers_are_kept_when_the_final_step_fails_inside_their_transaction(monkeypatch, settings):
    settings.REVIEWAPP_FINAL_STEP_ATTEMPTS = 3
    panel = three_lens_panel(["pass", "pass", "pass"], need=2)
    proposal = submit(panel, CONTENT)
    with monkeypatch.context() as broken:

        def signing_fails(**kwargs):
            raise RuntimeError("the decision could not be signed")

        broken.setattr("reviewapp.review.services.finalize.decision_append", signing_fails)
        with pytest.raises(RuntimeError):
            evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    # The answers rolled back with the step, and were then recorded on their own.
    assert (proposal.status, proposal.lenses_answered) == (Proposal.Status.EVALUATING, 3)
    assert Judgement.objects.filter(proposal=proposal).count() == 3
    assert not proposal.evidence.exists()
    assert "could not be signed" in proposal.final_step_error
    # The sweeper's bounded retry of the final step finishes it.
    evaluate_proposal(proposal.pk, swept=True)
    proposal.refresh_from_db()
    assert proposal.status == Proposal.Status.DECIDED
    assert proposal.final_step_attempts == 1


def _handed_to_the_loop(monkeypatch, panel):
    proposal = submit(panel, CONTENT)
    handed = []
    monkeypatch.setattr(
        "reviewapp.review.evaluation.tasks.llm_loop.judge_in_background", handed.append
    )
    evaluate_proposal(proposal.pk)
    [job] = handed
    return proposal, job


def _llm_pass(lens) -> dict:
    """An LLM lens's answer as the loop hands it back (``llm_loop.answer_json``)."""
    return {
        "lens": lens.pk,
        "verdict": "pass",
        "rationale": "Reasoned.",
        "claims": [],
        "unresolved": [],
        "raw_response": judgement("pass"),
        "attempts": 1,
        "requote_rounds": 0,
    }


def test_llm_answers_handed_back_end_a_panel_whose_cpu_lenses_answered_first(monkeypatch):
    llm = LensFactory(backend=Lens.Backend.LLM, base_url="http://127.0.0.1:9/v1", model="m")
    cpu = LensFactory()
    recorded(cpu, CONTENT, judgement("pass", "sorts in O(n log n) time"))
    proposal, job = _handed_to_the_loop(monkeypatch, PanelFactory(lenses=[llm, cpu], need=2))
    assert Proposal.objects.get(pk=proposal.pk).lenses_answered == 1  # the CPU lens, already
    job.finish_here([_llm_pass(llm)])
    proposal.refresh_from_db()
    assert (proposal.status, proposal.lenses_answered) == (Proposal.Status.DECIDED, 2)
    assert proposal.decision.outcome == "approved"


def test_llm_answers_handed_back_wait_for_an_external_lens_still_to_answer(monkeypatch):
    llm = LensFactory(backend=Lens.Backend.LLM, base_url="http://127.0.0.1:9/v1", model="m")
    external = LensFactory(backend=Lens.Backend.EXTERNAL)
    proposal, job = _handed_to_the_loop(monkeypatch, PanelFactory(lenses=[llm, external], need=2))
    job.finish_here([_llm_pass(llm)])
    proposal.refresh_from_db()
    assert (proposal.status, proposal.lenses_answered) == (Proposal.Status.EVALUATING, 1)
    assert not proposal.evidence.exists()  # no final step ran
