import csv
import io
import json
import re

import pytest
from django.db import OperationalError, connection
from django.http import StreamingHttpResponse
from django.urls import reverse

from reviewapp.insights import exports
from reviewapp.review.models import Claim, Escalation, Proposal, Tag
from reviewapp.review.services.escalations import escalation_claim, escalation_decide
from tests.review.helpers import submit

from .builders import BAD_CITE, GOOD_CITE, decide, judged, make_panel

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.insights.urls")]

# The session, its user and the reviewers-group check.
SIGN_IN = 3


def _body(response) -> str:
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content).decode()


def _csv(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(_body(response))))


def _jsonl(response) -> list[dict]:
    return [json.loads(line) for line in _body(response).splitlines()]


@pytest.fixture
def data(reviewer):
    panel = make_panel("alpha", "beta", "gamma", need=2)
    approved = judged(
        panel,
        {"alpha": "pass", "beta": "pass", "gamma": "fail"},
        cites={"alpha": (GOOD_CITE, BAD_CITE)},
        title="Refund policy",
        external_ref="TICKET-1",
    )
    escalated = judged(panel, {"alpha": "pass", "beta": "fail"}, title="Shipping times")
    decide(escalated, reviewer, "rejected")
    pending = submit(panel, "Not yet judged.", title="Pending one", external_ref="TICKET-2")
    other_panel = make_panel("solo1", "solo2", need=2)
    other = judged(other_panel, {"solo1": "pass", "solo2": "pass"}, title="Other panel")
    return {
        "panel": panel,
        "other_panel": other_panel,
        "approved": approved,
        "escalated": escalated,
        "pending": pending,
        "other": other,
    }


def test_csv_export_streams_proposals_with_judgements_tallies_and_decisions(reviewer_client, data):
    response = reviewer_client.get(reverse("export_proposals_csv"))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(
        r'attachment; filename="proposals-\d{8}T\d{6}Z\.csv"', response["Content-Disposition"]
    )
    rows = _csv(response)
    assert [int(r["id"]) for r in rows] == sorted(
        p.pk for p in (data["approved"], data["escalated"], data["pending"], data["other"])
    )
    assert list(rows[0]) == list(exports.CSV_COLUMNS)
    by_id = {int(r["id"]): r for r in rows}

    approved = by_id[data["approved"].pk]
    assert approved["title"] == "Refund policy"
    assert approved["external_ref"] == "TICKET-1"
    assert approved["panel"] == data["panel"].name
    assert approved["status"] == "decided"
    assert (approved["tally_passed"], approved["tally_failed"], approved["tally_need"]) == (
        "2",
        "1",
        "2",
    )
    assert approved["tally_outcome"] == "reached_pass"
    assert (approved["decision_outcome"], approved["decision_basis"]) == ("approved", "system")
    assert approved["decision_hash"] == data["approved"].decision.hash
    assert json.loads(approved["judgements"]) == [
        {"lens": "alpha", "lens_version": 1, "verdict": "pass"},
        {"lens": "beta", "lens_version": 1, "verdict": "pass"},
        {"lens": "gamma", "lens_version": 1, "verdict": "fail"},
    ]

    escalated = by_id[data["escalated"].pk]
    assert escalated["tally_outcome"] == "no_quorum"
    assert (escalated["decision_outcome"], escalated["decision_basis"]) == ("rejected", "reviewer")
    assert escalated["decided_by"] == "rita"

    pending = by_id[data["pending"].pk]
    assert pending["status"] == "queued"
    assert pending["tally_outcome"] == pending["decision_outcome"] == ""
    assert json.loads(pending["judgements"]) == []


def test_jsonl_export(reviewer_client, data):
    response = reviewer_client.get(reverse("export_proposals_jsonl"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/jsonl")
    assert re.fullmatch(
        r'attachment; filename="proposals-\d{8}T\d{6}Z\.jsonl"', response["Content-Disposition"]
    )
    records = {r["id"]: r for r in _jsonl(response)}
    assert len(records) == 4
    approved = records[data["approved"].pk]
    assert approved["panel"] == {"id": data["panel"].pk, "name": data["panel"].name}
    assert approved["tally"] == {
        "passed": 2,
        "failed": 1,
        "asked": 3,
        "need": 2,
        "outcome": "reached_pass",
    }
    alpha = approved["judgements"][0]
    assert (alpha["lens"], alpha["verdict"], alpha["claims"], alpha["unresolved_claims"]) == (
        "alpha",
        "pass",
        2,
        1,
    )
    assert approved["decision"]["outcome"] == "approved"
    assert approved["decision"]["basis"] == "system"
    assert approved["decision"]["key_id"]
    escalated = records[data["escalated"].pk]
    assert escalated["decision"]["decided_by"] == "rita"
    assert [j["lens"] for j in escalated["judgements"]] == ["alpha", "beta"]
    assert records[data["pending"].pk]["decision"] is None
    assert records[data["pending"].pk]["tally"] is None
    # Large columns never leave the database.
    assert "content" not in approved and "raw_response" not in alpha


@pytest.mark.parametrize("name", ["export_proposals_csv", "export_proposals_jsonl"])
def test_exports_filter_like_the_proposals_list(reviewer_client, data, name):
    def ids(**params) -> set[int]:
        response = reviewer_client.get(reverse(name), params)
        body = _body(response)
        if name.endswith("csv"):
            return {int(r["id"]) for r in csv.DictReader(io.StringIO(body))}
        return {json.loads(line)["id"] for line in body.splitlines()}

    assert ids(status="queued") == {data["pending"].pk}
    assert ids(status="decided", panel=data["panel"].pk) == {
        data["approved"].pk,
        data["escalated"].pk,
    }
    assert ids(panel=data["other_panel"].pk) == {data["other"].pk}
    assert ids(q="refund") == {data["approved"].pk}
    assert ids(q="ticket-") == {data["approved"].pk, data["pending"].pk}
    assert ids() == {p.pk for k, p in data.items() if not k.endswith("panel")}


@pytest.mark.parametrize("name", ["export_proposals_csv", "export_proposals_jsonl"])
def test_exports_search_the_content_too(reviewer_client, data, name):
    panel = make_panel("s1", "s2", need=2)
    found = submit(panel, "Our warehouse in Rotterdam ships daily.", title="No hint here")
    response = reviewer_client.get(reverse(name), {"q": "rotterdam"})
    body = _body(response)
    assert f'"id":{found.pk},' in body or body.splitlines()[1].startswith(f"{found.pk},")
    assert len(body.strip().splitlines()) == (2 if name.endswith("csv") else 1)


@pytest.mark.parametrize("name", ["export_proposals_csv", "export_proposals_jsonl"])
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"panel": "9999999999999999999999999"}, "panel must be a panel id"),
        ({"panel": "0"}, "panel must be a panel id"),
        ({"panel": "x"}, "panel must be a panel id"),
        ({"status": "bogus"}, "status must be one of"),
        ({"start": "2024-02-30"}, "start must be a date written YYYY-MM-DD"),
        ({"end": "yesterday"}, "end must be a date written YYYY-MM-DD"),
        ({"start": "2024-03-02", "end": "2024-03-01"}, "end is before start"),
    ],
)
def test_a_filter_that_cannot_be_one_answers_400_saying_which(
    reviewer_client, data, name, params, message
):
    response = reviewer_client.get(reverse(name), params)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_csv_defuses_spreadsheet_formulas(reviewer_client):
    panel = make_panel("x1", "x2", need=2)
    submit(panel, "Formula.", title='=HYPERLINK("http://evil")', external_ref="+1")
    [row] = _csv(reviewer_client.get(reverse("export_proposals_csv")))
    assert row["title"] == '\'=HYPERLINK("http://evil")'
    assert row["external_ref"] == "'+1"


@pytest.mark.parametrize(
    "title",
    [" =1+2", "\u3000=1+2", "\uff1dSUM(A1)", "|cmd", "  @SUM(A1)", "\n=1", "\uff0b1", " -1"],
)
def test_csv_defuses_formulas_behind_blanks_full_width_and_pipes(reviewer_client, title):
    panel = make_panel("x1", "x2", need=2)
    submit(panel, "Formula.", title=title)
    [row] = _csv(reviewer_client.get(reverse("export_proposals_csv")))
    assert row["title"] == "'" + title


def test_csv_leaves_plain_text_alone(reviewer_client):
    panel = make_panel("x1", "x2", need=2)
    submit(panel, "Plain.", title="  Refund = policy")
    [row] = _csv(reviewer_client.get(reverse("export_proposals_csv")))
    assert row["title"] == "  Refund = policy"


def test_csv_carries_the_reviewer_rationale_and_the_escalation_reasons(reviewer_client, data):
    rows = {int(r["id"]): r for r in _csv(reviewer_client.get(reverse("export_proposals_csv")))}
    escalated = rows[data["escalated"].pk]
    assert escalated["decision_rationale"] == "Checked by hand."
    assert escalated["escalation_reasons"] == "no_quorum,lens_failed"
    assert rows[data["approved"].pk]["escalation_reasons"] == ""


def test_jsonl_carries_the_escalations_with_their_reasons(reviewer_client, data):
    records = {r["id"]: r for r in _jsonl(reviewer_client.get(reverse("export_proposals_jsonl")))}
    assert records[data["escalated"].pk]["escalations"] == [
        {"reasons": ["no_quorum", "lens_failed"], "status": "resolved"}
    ]
    assert records[data["escalated"].pk]["decision"]["rationale"] == "Checked by hand."
    assert records[data["approved"].pk]["escalations"] == []


def test_export_reads_in_chunks_with_a_prefetch_per_chunk(
    reviewer_client, monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr(exports, "EXPORT_CHUNK_SIZE", 2)
    panel = make_panel("c1", "c2", need=2)
    for _ in range(5):
        judged(panel, {"c1": "pass", "c2": "pass"})

    # Signing the reviewer in (3), then the first chunk before the response
    # starts: the proposals, and the chunk's judgements and escalations, and
    # its decisions' claim marks, tags and wrong-reason lenses.
    with django_assert_num_queries(SIGN_IN + 6):
        response = reviewer_client.get(reverse("export_proposals_jsonl"))
    lines = iter(response.streaming_content)
    with django_assert_num_queries(0):
        first = json.loads(next(lines))
        next(lines)  # the rest of the first chunk is already in memory
    assert len(first["judgements"]) == 2
    with django_assert_num_queries(10):  # two more chunks: the five prefetches each
        rest = list(lines)
    assert len(rest) == 3
    assert all(len(json.loads(line)["judgements"]) == 2 for line in rest)


def test_export_query_count_grows_only_with_chunks(
    reviewer_client, monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr(exports, "EXPORT_CHUNK_SIZE", 50)
    panel = make_panel("k1", "k2", need=2)
    for _ in range(12):
        judged(panel, {"k1": "pass", "k2": "fail"})
    # One chunk: the proposals, their judgements and their escalations.
    with django_assert_num_queries(SIGN_IN + 3):
        rows = list(
            csv.DictReader(io.StringIO(_body(reviewer_client.get(reverse("export_proposals_csv")))))
        )
    assert len(rows) == 12 == Proposal.objects.count()


@pytest.mark.parametrize("name", ["export_proposals_csv", "export_proposals_jsonl"])
@pytest.mark.parametrize(
    ("q", "message"),
    [
        ("x" * 100_000, "at most 500 characters (this one has 100,000)"),
        (" ".join(f"w{i}" for i in range(40)), "at most 32 (this one has 40)"),
        ("---", "no word to look for"),
    ],
)
def test_a_search_that_cannot_run_answers_400_saying_why(reviewer_client, data, name, q, message):
    response = reviewer_client.get(reverse(name), {"q": q})
    assert response.status_code == 400
    assert message in response.content.decode()


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: websearch_to_tsquery and its operator stack are PostgreSQL's",
)
@pytest.mark.parametrize("name", ["export_proposals_csv", "export_proposals_jsonl"])
@pytest.mark.parametrize("q", ["-" * 33, "- " * 2000])
def test_runs_of_dashes_answer_400_not_an_export_cut_after_its_header(
    reviewer_client, data, name, q
):
    assert reviewer_client.get(reverse(name), {"q": q}).status_code == 400


def _fails_at(monkeypatch, number: int) -> None:
    """The `number`th record cannot be read: the database goes away."""
    read = iter(range(1, 10**6))
    record = exports.proposal_record

    def flaky(proposal):
        if next(read) == number:
            raise OperationalError("server closed the connection unexpectedly")
        return record(proposal)

    monkeypatch.setattr(exports, "proposal_record", flaky)


@pytest.mark.parametrize("name", ["export_proposals_csv", "export_proposals_jsonl"])
def test_an_export_that_cannot_start_answers_503_not_an_empty_file(
    reviewer_client, data, monkeypatch, name
):
    _fails_at(monkeypatch, 1)
    response = reviewer_client.get(reverse(name))
    assert response.status_code == 503
    assert response["Retry-After"]


@pytest.mark.parametrize("name", ["export_proposals_csv", "export_proposals_jsonl"])
def test_an_export_that_fails_part_way_breaks_off_instead_of_ending(
    reviewer_client, data, monkeypatch, name
):
    monkeypatch.setattr(exports, "EXPORT_CHUNK_SIZE", 1)
    _fails_at(monkeypatch, 2)
    response = reviewer_client.get(reverse(name))
    assert response.status_code == 200  # sent before the failure
    with pytest.raises(OperationalError):
        b"".join(response.streaming_content)


def test_exports_carry_the_reviewers_marks_tags_and_wrong_reason(reviewer_client, reviewer):
    Tag.objects.create(name="tone")
    proposal = judged(make_panel("m1", "m2", need=2), {"m1": "pass", "m2": "fail"})
    claim = Claim.objects.filter(judgement__proposal=proposal, judgement__lens_name="m1").first()
    escalation = Escalation.objects.get(proposal=proposal)
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    escalation_decide(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale="Fine.",
        user=reviewer,
        decided_by_name=reviewer.get_username(),
        marks=[(claim.pk, "incorrect")],
        tags=["tone"],
        wrong_reason=["m1"],
    )

    [record] = _jsonl(reviewer_client.get(reverse("export_proposals_jsonl")))
    [row] = _csv(reviewer_client.get(reverse("export_proposals_csv")))

    marks = [{"claim": claim.pk, "lens": "m1", "mark": "incorrect"}]
    decision = record["decision"]
    assert (decision["claim_marks"], decision["tags"], decision["wrong_reason"]) == (
        marks,
        ["tone"],
        ["m1"],
    )
    assert json.loads(row["decision_claim_marks"]) == marks
    assert (row["decision_tags"], row["decision_wrong_reason"]) == ("tone", "m1")
