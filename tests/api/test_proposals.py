import pytest

from reviewapp.api import api as api_app
from reviewapp.core.judging import FailureKind
from reviewapp.review.evaluation.tasks import evaluate_proposal
from reviewapp.review.models import ApiClient, Judgement, Proposal
from reviewapp.review.services.proposals import proposal_submit
from tests.factories import LensFactory, PanelFactory, recorded

from .conftest import api_with, lens_answer, unexplained_escalation


def api_schema() -> dict:
    return api_app.get_openapi_schema()


def submit_body(panel, **fields) -> dict:
    return {"panel": panel.name, "content": "The answer is 42.", **fields}


# ─── POST /api/proposals ─────────────────────────────────────────────────────


def test_submission_is_accepted_as_queued(api, panel):
    response = api.post("/api/proposals", submit_body(panel))

    assert response.status_code == 202
    proposal = Proposal.objects.get()
    assert response.json() == {
        "id": proposal.pk,
        "status": "queued",
        "url": f"/api/proposals/{proposal.pk}",
    }


def test_submission_is_stored_against_the_submitting_client(api, panel):
    api.post("/api/proposals", submit_body(panel, title="T", metadata={"run": 7}))

    proposal = Proposal.objects.get()
    assert proposal.client == ApiClient.objects.get()
    assert (proposal.title, proposal.metadata) == ("T", {"run": 7})


def test_same_body_under_the_same_external_ref_answers_200_with_the_same_id(api, panel):
    first = api.post("/api/proposals", submit_body(panel, external_ref="job-1"))

    again = api.post("/api/proposals", submit_body(panel, external_ref="job-1"))

    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert Proposal.objects.count() == 1


def test_different_body_under_the_same_external_ref_is_409_and_writes_nothing(api, panel):
    api.post("/api/proposals", submit_body(panel, external_ref="job-1"))

    response = api.post("/api/proposals", submit_body(panel, external_ref="job-1", title="new"))

    assert response.status_code == 409
    assert "job-1" in response.json()["detail"]
    assert Proposal.objects.count() == 1


def test_external_refs_belong_to_each_client(api, panel):
    api.post("/api/proposals", submit_body(panel, external_ref="job-1"))

    response = api_with("submit").post("/api/proposals", submit_body(panel, external_ref="job-1"))

    assert response.status_code == 202
    assert Proposal.objects.count() == 2


def test_unknown_panel_is_422_naming_the_panel_field(api, db):
    response = api.post("/api/proposals", {"panel": "no-such-panel", "content": "x"})

    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "payload", "panel"]


def test_inactive_panel_is_422(api, panel):
    panel.active = False
    panel.save()

    assert api.post("/api/proposals", submit_body(panel)).status_code == 422


@pytest.mark.parametrize(
    "content", ["", "   \n\t", "\u200b\u200c\u200d\ufeff", " \u2060\u200b "], ids=repr
)
def test_empty_content_is_422(api, panel, content):
    response = api.post("/api/proposals", submit_body(panel, content=content))

    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "payload", "content"]


@pytest.mark.parametrize(
    "fields",
    [{"content": 42}, {"metadata": []}, {"title": None}, {"external_ref": 5}, {"colour": "red"}],
    ids=["content-int", "metadata-list", "title-null", "ref-int", "unknown-field"],
)
def test_wrong_types_and_unknown_fields_are_422(api, panel, fields):
    assert api.post("/api/proposals", submit_body(panel, **fields)).status_code == 422


# ─── GET /api/proposals/{id} ─────────────────────────────────────────────────


def test_detail_of_a_decided_proposal_has_every_part(api, decided):
    body = api.get(f"/api/proposals/{decided.pk}").json()

    assert body["status"] == "decided"
    assert body["panel"] == decided.panel.name
    assert body["content"] == decided.content
    assert body["content_sha256"] == decided.content_sha256
    assert body["progress"] == {"answered": 1, "asked": 1}
    assert body["tally"] == {
        "passed": 1,
        "failed": 0,
        "asked": 1,
        "need": 1,
        "outcome": "reached_pass",
    }
    assert [e["verdict"] for e in body["evidence"]] == ["pass"]
    assert body["escalation"] is None
    assert body["decision"]["outcome"] == "approved"


def test_detail_anchors_claims_in_utf16_units(api, decided):
    body = api.get(f"/api/proposals/{decided.pk}").json()

    (judgement,) = body["judgements"]
    (claim,) = judgement["claims"]
    # 🎉 is one code point but two UTF-16 units, which is what a DOM Range counts.
    assert claim["anchor"] == {
        "kind": "answer_body",
        "start_utf16": 0,
        "end_utf16": len(decided.content.encode("utf-16-le")) // 2,
    }
    assert claim["text"] == decided.content
    assert judgement["unresolved_cites"] == []


def test_detail_of_an_escalated_proposal_names_its_escalation(api, escalated):
    body = api.get(f"/api/proposals/{escalated.pk}").json()

    assert body["status"] == "escalated"
    assert body["escalation"]["status"] == "open"
    assert body["escalation"]["reasons"] == ["sign_off"]
    assert body["decision"] is None


def test_detail_names_each_lens_that_failed_and_why(api):
    # A recorded lens with nothing recorded for this text fails; the other one judges.
    silent = LensFactory(name="silent")
    judge = LensFactory()
    recorded(judge, "Ship it.", lens_answer("pass", "Ship it."))
    panel = PanelFactory(lenses=[silent, judge], need=2)
    proposal, _ = proposal_submit(panel_name=panel.name, content="Ship it.")
    evaluate_proposal(proposal.pk)

    body = api.get(f"/api/proposals/{proposal.pk}").json()

    assert body["status"] == "escalated"
    assert "lens_failed" in body["escalation"]["reasons"]
    [failure] = body["lens_failures"]
    assert (failure["lens"], failure["lens_version"]) == ("silent", silent.version)
    assert failure["kind"] == "misconfigured"
    assert "silent" not in [j["lens"] for j in body["judgements"]]
    assert failure["message"] and failure["at"]


def test_detail_of_an_escalated_proposal_says_why_in_its_escalation(api):
    proposal = unexplained_escalation()

    escalation = api.get(f"/api/proposals/{proposal.pk}").json()["escalation"]

    assert "lens silent (misconfigured)" in escalation["explanation"]
    assert [(f["lens"], f["kind"]) for f in escalation["lens_failures"]] == [
        ("silent", "misconfigured")
    ]
    [checker] = escalation["inconclusive_checkers"]
    assert checker["checker"] == "schema" and "schemas.invalid" in checker["reason"]


def test_each_inconclusive_checker_says_why_in_the_evidence(api):
    proposal = unexplained_escalation()

    [evidence] = api.get(f"/api/proposals/{proposal.pk}").json()["evidence"]

    assert evidence["verdict"] == "inconclusive"
    assert "schemas.invalid" in evidence["reason"]


def test_the_schema_documents_lens_failures():
    properties = api_schema()["components"]["schemas"]["ProposalOut"]["properties"]

    assert "lens_failures" in properties


def test_the_schema_documents_each_failure_kind():
    schemas = api_schema()["components"]["schemas"]

    kind = schemas["LensFailureOut"]["properties"]["kind"]
    assert set(schemas[kind["$ref"].rsplit("/", 1)[1]]["enum"]) == set(FailureKind)
    assert "rate_limited" in kind["description"]


@pytest.mark.parametrize("schema", ["EscalationBriefOut", "EscalationOut"])
def test_the_schema_documents_why_an_escalation_was_raised(schema):
    properties = api_schema()["components"]["schemas"][schema]["properties"]

    assert {"explanation", "lens_failures", "inconclusive_checkers"} <= set(properties)


def test_detail_of_a_queued_proposal_has_no_tally_yet(api, panel):
    proposal, _ = proposal_submit(panel_name=panel.name, content="x")

    body = api.get(f"/api/proposals/{proposal.pk}").json()

    assert body["tally"] is None
    assert body["judgements"] == []
    assert body["progress"] == {"answered": 0, "asked": 1}


def test_detail_of_a_missing_proposal_is_404(api, db):
    response = api.get("/api/proposals/999999")

    assert response.status_code == 404
    assert "detail" in response.json()


# ─── GET /api/proposals ──────────────────────────────────────────────────────


def queued(panel, n: int) -> list[Proposal]:
    return [proposal_submit(panel_name=panel.name, content=f"p{i}")[0] for i in range(n)]


def test_list_pages_newest_first_through_the_cursor(api, panel):
    proposals = queued(panel, 5)

    first = api.get("/api/proposals", {"limit": 2}).json()
    second = api.get("/api/proposals", {"limit": 2, "cursor": first["next_cursor"]}).json()
    last = api.get("/api/proposals", {"limit": 2, "cursor": second["next_cursor"]}).json()

    ids = [p["id"] for page in (first, second, last) for p in page["items"]]
    assert ids == [p.pk for p in reversed(proposals)]
    assert last["next_cursor"] is None


def test_list_filters_by_status_and_panel(api, panel, decided):
    queued(panel, 2)

    by_status = api.get("/api/proposals", {"status": "decided"}).json()["items"]
    by_panel = api.get("/api/proposals", {"panel": panel.name}).json()["items"]

    assert [p["id"] for p in by_status] == [decided.pk]
    assert len(by_panel) == 2


@pytest.mark.parametrize("count", [1, 20])
def test_list_takes_the_same_queries_however_many_rows(
    api, panel, count, django_assert_num_queries
):
    queued(panel, count)
    api.get("/api/proposals")  # the first use of a token records last_used_at

    # The token lookup, then the page.
    with django_assert_num_queries(2):
        response = api.get("/api/proposals")

    assert len(response.json()["items"]) == count


@pytest.mark.parametrize(
    "params", [{"cursor": "not-ours"}, {"status": "lost"}, {"limit": 0}, {"panel": "a\x00b"}]
)
def test_list_rejects_bad_query_parameters_with_422(api, db, params):
    assert api.get("/api/proposals", params).status_code == 422


# ─── POST /api/proposals/{id}/judgements ─────────────────────────────────────


@pytest.fixture
def awaiting(external_panel) -> Proposal:
    proposal, _ = proposal_submit(
        panel_name=external_panel.name,
        content="Paris is the capital of France.",
        thought_process="Recall the capital.",
    )
    return proposal


def judge(api, proposal, **fields):
    body = {"lens": "outside", "verdict": "pass", "rationale": "Checked.", "claims": [], **fields}
    return api.post(f"/api/proposals/{proposal.pk}/judgements", body)


def test_external_judgement_is_201_with_grounded_claims(api, awaiting):
    response = judge(
        api, awaiting, claims=[{"cite": "the capital of France", "assessment": "verified"}]
    )

    assert response.status_code == 201
    body = response.json()
    assert (body["lens"], body["verdict"]) == ("outside", "pass")
    (claim,) = body["claims"]
    assert claim["text"] == "the capital of France"
    assert claim["anchor"] == {"kind": "answer_body", "start_utf16": 9, "end_utf16": 30}
    assert claim["claim_id"]


def test_external_judgement_cite_from_the_thought_process_anchors_in_its_window(api, awaiting):
    response = judge(
        api, awaiting, claims=[{"cite": "Recall the capital", "assessment": "verified"}]
    )

    assert response.json()["claims"][0]["anchor"] == {"kind": "thought_window"}


def test_unresolvable_cite_is_listed_apart_from_the_claims(api, awaiting):
    response = judge(
        api,
        awaiting,
        claims=[
            {"cite": "Paris", "assessment": "verified"},
            {"cite": "Berlin is lovely", "assessment": "refuted"},
        ],
    )

    body = response.json()
    assert [c["cite"] for c in body["claims"]] == ["Paris"]
    assert body["unresolved_cites"] == [
        {"cite": "Berlin is lovely", "assessment": "refuted", "note": "", "claim_id": ""}
    ]


def test_external_judgement_keeps_an_echoed_claim_id(api, awaiting):
    response = judge(
        api, awaiting, claims=[{"cite": "Paris", "assessment": "contested", "claim_id": "c-1"}]
    )

    assert response.json()["claims"][0]["claim_id"] == "c-1"


def test_judgement_from_a_lens_not_on_the_panel_is_422(api, awaiting):
    response = judge(api, awaiting, lens="stranger")

    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "payload", "lens"]
    assert not Judgement.objects.exists()


def test_judgement_from_a_lens_that_is_not_external_is_422(api, awaiting):
    worker_lens = awaiting.panel_snapshot["lenses"][0]["name"]

    response = judge(api, awaiting, lens=worker_lens)

    assert response.status_code == 422
    assert not Judgement.objects.exists()


def test_second_judgement_from_the_same_lens_is_409(api, awaiting):
    judge(api, awaiting)

    response = judge(api, awaiting, verdict="fail")

    assert response.status_code == 409
    assert Judgement.objects.get().verdict == "pass"


def test_judgement_for_a_missing_proposal_is_404(api, db):
    response = api.post(
        "/api/proposals/999999/judgements",
        {"lens": "outside", "verdict": "pass", "rationale": "", "claims": []},
    )

    assert response.status_code == 404


@pytest.mark.parametrize(
    "fields",
    [{"verdict": "maybe"}, {"claims": [{"cite": "Paris"}]}, {"claims": "Paris"}],
    ids=["verdict", "claim-without-assessment", "claims-not-a-list"],
)
def test_malformed_judgement_is_422(api, awaiting, fields):
    assert judge(api, awaiting, **fields).status_code == 422


def test_judge_scope_is_needed_to_judge(db, awaiting):
    assert judge(api_with("submit", "read"), awaiting).status_code == 403
