"""The client's models read every field the API's OpenAPI schema documents."""

import dataclasses
import json

import pytest
import reviewapp_client as models
from reviewapp_client.models import ShapeError

from reviewapp.api import api
from tests.clients.hostile import proposal_body

# Schema → the dataclass that reads it.
READERS = {
    "SubmittedOut": models.Submitted,
    "ProposalOut": models.Proposal,
    "ProposalSummaryOut": models.ProposalSummary,
    "ProgressOut": models.Progress,
    "TallyOut": models.Tally,
    "JudgementOut": models.Judgement,
    "ClaimOut": models.Claim,
    "AnswerBodyAnchorOut": models.Anchor,
    "ThoughtWindowAnchorOut": models.Anchor,
    "UnresolvedCiteOut": models.UnresolvedCite,
    "EvidenceOut": models.Evidence,
    "LensFailureOut": models.LensFailure,
    "InconclusiveCheckerOut": models.InconclusiveChecker,
    "EscalationBriefOut": models.EscalationBrief,
    "EscalationOut": models.Escalation,
    "DecisionOut": models.Decision,
    "FallbackOut": models.Fallback,
    "PanelOut": models.Panel,
    "PanelLensOut": models.PanelLens,
    "ReviewOut": models.Review,
    "ReviewStatusOut": models.ReviewStatus,
    "WebhookOut": models.Webhook,
    "WebhookCreatedOut": models.Webhook,
    "GuaranteeSummaryOut": models.GuaranteeSummary,
    "GuaranteeOut": models.Guarantee,
    "PatternOut": models.GuaranteePattern,
    "ConfigurationOut": models.GuaranteeConfiguration,
    "OverallOut": models.GuaranteeOverall,
}


@pytest.mark.parametrize("schema", list(READERS))
def test_every_documented_field_has_a_place_in_the_model(schema):
    documented = api.get_openapi_schema()["components"]["schemas"][schema]["properties"]
    fields = {f.name for f in dataclasses.fields(READERS[schema])}
    assert set(documented) <= fields, f"{schema}: the client drops {set(documented) - fields}"


def test_lens_failures_are_read_where_a_server_sends_them_and_new_fields_are_ignored():
    answer = json.loads(proposal_body("escalated"))
    answer["lens_failures"] = [
        {"lens": "legal", "kind": "timeout", "message": "no answer in 60 s", "at": "2026-03-01"}
    ]
    answer["a_field_from_the_future"] = {"nested": [1, 2]}
    proposal = models.Proposal.from_api(answer)
    assert proposal.lens_failures == [
        models.LensFailure("legal", "timeout", "no answer in 60 s", "2026-03-01")
    ]
    assert proposal.raw["a_field_from_the_future"] == {"nested": [1, 2]}
    assert models.Proposal.from_api(json.loads(proposal_body())).lens_failures == []


def test_an_escalation_reads_why_it_was_raised_and_an_older_servers_reads_empty():
    listed = {
        "id": 7,
        "proposal": 3,
        "status": "open",
        "reasons": ["lens_failed", "inconclusive"],
        "claimed_by": None,
        "created_at": "2026-03-01T12:00:00Z",
    }
    said = {
        "explanation": "Gave no judgement: lens legal (rate limited).",
        "lens_failures": [
            {
                "lens": "legal",
                "lens_version": 2,
                "kind": "rate_limited",
                "message": "the provider answered 429 for 60 s",
                "attempts": 3,
                "at": "2026-03-01T11:59:00Z",
            }
        ],
        "inconclusive_checkers": [{"checker": "schema", "reason": "unresolvable $ref"}],
    }

    escalation = models.Escalation.from_api({**listed, **said})

    assert escalation.explanation == said["explanation"]
    assert escalation.lens_failures == [
        models.LensFailure(
            "legal",
            "rate_limited",
            "the provider answered 429 for 60 s",
            "2026-03-01T11:59:00Z",
            lens_version=2,
            attempts=3,
        )
    ]
    assert escalation.inconclusive_checkers == [
        models.InconclusiveChecker("schema", "unresolvable $ref")
    ]
    older = models.Escalation.from_api(listed)
    assert (older.explanation, older.lens_failures, older.inconclusive_checkers) == ("", [], [])


@pytest.mark.parametrize(
    ("text", "micro"),
    [
        ("2026-03-01T12:00:00Z", 0),
        ("2026-03-01T12:00:00.4Z", 400000),
        ("2026-03-01T12:00:00.123+00:00", 123000),
        ("2026-03-01T12:00:00.123456789Z", 123456),
    ],
)
def test_times_are_read_in_every_iso_form_a_server_may_write(text, micro):
    read = models.ProposalSummary.from_api(
        {
            "id": 1,
            "status": "queued",
            "panel": "p",
            "title": "",
            "content_sha256": "",
            "created_at": text,
            "url": "/",
        }
    ).created_at
    assert (read.microsecond, read.utcoffset().total_seconds()) == (micro, 0)


def test_a_time_that_is_not_iso_8601_is_a_shape_error():
    with pytest.raises(ShapeError, match="created_at: not an ISO 8601 time"):
        models.Escalation.from_api(
            {
                "id": 1,
                "proposal": 1,
                "status": "open",
                "reasons": [],
                "claimed_by": None,
                "created_at": "yesterday",
            }
        )


def test_an_escalation_reads_its_deadline_and_an_older_servers_reads_none():
    listed = {
        "id": 7,
        "proposal": 3,
        "status": "open",
        "reasons": ["sign_off"],
        "claimed_by": None,
        "created_at": "2026-03-01T12:00:00Z",
    }

    due = models.Escalation.from_api(
        {**listed, "due_at": "2026-03-01T16:00:00.123Z", "on_deadline": "reject"}
    )
    old = models.Escalation.from_api(listed)

    assert due.due_at.isoformat() == "2026-03-01T16:00:00.123000+00:00"
    assert due.on_deadline == "reject"
    assert old.due_at is None and old.on_deadline is None


FALLBACK_DECISION = {
    "id": 9,
    "proposal": 7,
    "outcome": "rejected",
    "basis": "fallback",
    "decided_by": "deadline fallback",
    "rationale": "No one decided this escalation by its deadline.",
    "payload": "{}",
    "signature": "c2ln",
    "key_id": "ed25519:abc",
    "hash": "0" * 64,
}


def test_a_fallback_decision_reads_what_made_it():
    answer = json.loads(proposal_body("decided"))
    answer["decision"] = dict(FALLBACK_DECISION)
    answer["decision"]["fallback"] = {
        "on_deadline": "reject",
        "due_at": "2026-03-01T16:00:00Z",
        "review_deadline_seconds": 14400,
    }

    decision = models.Proposal.from_api(answer).decision

    assert decision.is_fallback
    assert decision.fallback.on_deadline == "reject"
    assert decision.fallback.review_deadline_seconds == 14400


def test_a_fallback_with_the_wrong_shape_is_a_shape_error_naming_it():
    answer = json.loads(proposal_body("decided"))
    answer["decision"] = {
        **FALLBACK_DECISION,
        "fallback": {"on_deadline": "reject", "due_at": "2026-03-01T16:00:00Z"},
    }

    with pytest.raises(ShapeError, match="decision.fallback.review_deadline_seconds is missing"):
        models.Proposal.from_api(answer)
