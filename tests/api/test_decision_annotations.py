"""Claim marks, tags and "right for the wrong reason" on a reviewer's decision, through the API."""

import json

import pytest

from reviewapp.review.models import Claim, ClaimMark, Decision, Escalation, Tag
from tests.ledger.helpers import public_key_b64, write_jsonl
from tests.ledger.test_offline_verifier import fails, run


@pytest.fixture
def escalation(escalated) -> Escalation:
    return Escalation.objects.get(proposal=escalated)


@pytest.fixture
def claim(escalated) -> Claim:
    return Claim.objects.get(judgement__proposal=escalated)


@pytest.fixture
def tags(db):
    return [Tag.objects.create(name=n) for n in ("hallucination", "tone")]


def decide(api, escalation, **fields):
    body = {"outcome": "approved", "rationale": "Read it; sound.", **fields}
    return api.post(f"/api/escalations/{escalation.pk}/decision", body)


def test_marks_and_tags_are_signed_in_the_payload(api, escalation, claim, tags):
    response = decide(
        api, escalation, claims=[{"claim": claim.pk, "mark": "incorrect"}], tags=["tone"]
    )

    assert response.status_code == 201, response.content
    signed = json.loads(response.json()["payload"])
    assert signed["claims"] == [
        {"claim": claim.pk, "lens": claim.judgement.lens_name, "mark": "incorrect"}
    ]
    assert signed["tags"] == ["tone"]


def test_marks_are_stored_one_per_claim(api, escalation, claim, tags):
    decide(api, escalation, claims=[{"claim": claim.pk, "mark": "irrelevant"}])

    mark = ClaimMark.objects.get()
    assert (mark.decision, mark.claim, mark.mark) == (Decision.objects.get(), claim, "irrelevant")


def test_decision_list_shows_marks_tags_and_wrong_reason(api, escalation, claim, tags):
    decide(
        api,
        escalation,
        claims=[{"claim": claim.pk, "mark": "incorrect"}],
        tags=["tone", "hallucination"],
        wrong_reason=[claim.judgement.lens_name],
    )

    (item,) = api.get("/api/decisions").json()["items"]
    assert item["claims"] == [
        {"claim": claim.pk, "lens": claim.judgement.lens_name, "mark": "incorrect"}
    ]
    assert item["tags"] == ["hallucination", "tone"]
    assert item["wrong_reason"] == [claim.judgement.lens_name]


def test_a_decision_without_annotations_signs_no_annotation_keys(api, escalation):
    signed = json.loads(decide(api, escalation).json()["payload"])

    assert not {"claims", "tags", "wrong_reason"} & signed.keys()


def test_unknown_claim_ids_are_422_naming_them(api, escalation, claim):
    response = decide(
        api,
        escalation,
        claims=[{"claim": claim.pk, "mark": "correct"}, {"claim": 999999, "mark": "correct"}],
    )

    assert response.status_code == 422
    assert "unknown claim id(s)" in response.json()["detail"]
    assert "999999" in response.json()["detail"]


def test_a_refused_decision_writes_nothing(api, escalation, claim):
    decide(api, escalation, claims=[{"claim": claim.pk, "mark": "correct"}], tags=["nope"])

    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.OPEN
    assert not Decision.objects.exists()
    assert not ClaimMark.objects.exists()


def test_unknown_tags_are_422_naming_them(api, escalation, tags):
    response = decide(api, escalation, tags=["tone", "made-up", "other"])

    assert response.status_code == 422
    assert response.json()["detail"] == "unknown tag(s): made-up, other"


def test_an_inactive_tag_is_refused(api, escalation, tags):
    Tag.objects.filter(name="tone").update(active=False)

    response = decide(api, escalation, tags=["tone"])

    assert response.status_code == 422
    assert "tone" in response.json()["detail"]


def test_a_mark_outside_the_three_is_422(api, escalation, claim):
    response = decide(api, escalation, claims=[{"claim": claim.pk, "mark": "maybe"}])

    assert response.status_code == 422


def test_a_claim_of_another_proposal_is_refused(api, escalation, decided):
    other = Claim.objects.get(judgement__proposal=decided)

    response = decide(api, escalation, claims=[{"claim": other.pk, "mark": "correct"}])

    assert response.status_code == 422
    assert str(other.pk) in response.json()["detail"]


def test_wrong_reason_needs_a_verdict_matching_the_outcome(api, escalation, claim):
    lens = claim.judgement.lens_name  # it passed; a rejection disagrees with it

    response = decide(api, escalation, outcome="rejected", wrong_reason=[lens])

    assert response.status_code == 422
    assert lens in response.json()["detail"]


def test_wrong_reason_names_an_unknown_lens(api, escalation):
    response = decide(api, escalation, wrong_reason=["no-such-lens"])

    assert response.status_code == 422
    assert "no-such-lens" in response.json()["detail"]


def test_annotated_decisions_verify_offline(api, escalation, claim, tags, tmp_path):
    decide(api, escalation, claims=[{"claim": claim.pk, "mark": "incorrect"}], tags=["tone"])
    items = api.get("/api/decisions").json()["items"]

    code, out, err = run(write_jsonl(tmp_path / "d.jsonl", items), "--public-key", public_key_b64())

    assert code == 0, err


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tags", ["hallucination"]),
        ("claims", []),
        ("wrong_reason", ["someone"]),
    ],
)
def test_an_edited_annotation_fails_the_offline_check(
    api, escalation, claim, tags, tmp_path, field, value
):
    decide(api, escalation, claims=[{"claim": claim.pk, "mark": "incorrect"}], tags=["tone"])
    (item,) = api.get("/api/decisions").json()["items"]
    item[field] = value

    fails(
        write_jsonl(tmp_path / "d.jsonl", [item]),
        match=rf"differs from its signed bytes in {field}",
    )


@pytest.mark.django_db(transaction=True)
def test_the_python_client_sends_and_reads_annotations(live_server, token, escalation, claim, tags):
    from reviewapp_client import ClaimMark, Client

    with Client(live_server.url, token) as client:
        decision = client.decide(
            escalation.pk,
            "approved",
            "Sound.",
            claims={claim.pk: "correct"},
            tags=["tone"],
        )

    assert decision.claims == [ClaimMark(claim.pk, claim.judgement.lens_name, "correct")]
    assert (decision.tags, decision.wrong_reason) == (["tone"], [])


@pytest.mark.parametrize("field", ["tags", "wrong_reason"])
def test_an_unbounded_list_of_names_is_a_422_not_a_query_the_database_refuses(
    api, escalation, field
):
    # 70,000 names made one IN (...) past PostgreSQL's 65,535 parameters: the API answered
    # 503 "the database is unavailable" to a crafted body, and echoed every name on SQLite.
    response = decide(api, escalation, **{field: [f"n{i}" for i in range(70_000)]})

    assert response.status_code == 422
    assert "at most" in response.content.decode()
    assert len(response.content) < 10_000
    escalation.refresh_from_db()
    assert escalation.status == Escalation.Status.OPEN
