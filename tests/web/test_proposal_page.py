import html
import json
import re

import pytest
from django.urls import reverse

from reviewapp.review.models import Claim
from reviewapp.review.services.proposals import proposal_submit

from .builders import judgement, make_panel, mandate_checker, run_panel

pytestmark = pytest.mark.django_db

TRICKY = "Launch 🚀 at dawn.\r\nThe family 👩‍👩‍👧 waits.\r\nnon‑breaking re\u0301sume\u0301 here."


def _json_script(response, element_id: str):
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert match, f"no json_script {element_id}"
    return json.loads(match.group(1))


def _utf16_slice(text: str, start: int, end: int) -> str:
    return text.encode("utf-16-le")[2 * start : 2 * end].decode("utf-16-le")


@pytest.fixture
def tricky(db):
    panel = make_panel("alpha", "beta")
    return run_panel(
        panel,
        TRICKY,
        {
            "alpha": judgement("pass", "Launch 🚀 at dawn.", "👩‍👩‍👧 waits"),
            "beta": judgement("fail", "👩‍👩‍👧 waits", "re\u0301sume\u0301 here"),
        },
        title="Tricky",
    )


def test_answer_body_is_exactly_the_content_between_the_tags(reviewer_client, tricky):
    response = reviewer_client.get(reverse("proposal_detail", args=[tricky.pk]))
    match = re.search(r'<div id="answer-body"[^>]*>(.*?)</div>', response.content.decode(), re.S)
    assert match.group(1) == html.escape(TRICKY, quote=True)


def test_content_is_also_shipped_as_json_so_crlf_survives(reviewer_client, tricky):
    response = reviewer_client.get(reverse("proposal_detail", args=[tricky.pk]))
    assert _json_script(response, "answer-content") == TRICKY


def test_highlight_data_offsets_are_utf16_and_match_the_claim_text(reviewer_client, tricky):
    data = _json_script(
        reviewer_client.get(reverse("proposal_detail", args=[tricky.pk])), "highlight-data"
    )
    assert data["spans"]
    for span in data["spans"]:
        assert _utf16_slice(TRICKY, span["start"], span["end"]) == span["text"]
    stored = Claim.objects.filter(judgement__proposal=tricky, anchor_kind="answer_body")
    assert {(c.start_utf16, c.end_utf16) for c in stored} == {
        (s["start"], s["end"]) for s in data["spans"]
    }


def test_claims_of_two_lenses_on_the_same_span_are_grouped(reviewer_client, tricky):
    data = _json_script(
        reviewer_client.get(reverse("proposal_detail", args=[tricky.pk])), "highlight-data"
    )
    shared = [s for s in data["spans"] if s["text"] == "👩‍👩‍👧 waits"]
    assert len(shared) == 1
    assert sorted(c["lens"] for c in shared[0]["claims"]) == ["alpha", "beta"]
    assert [lens["name"] for lens in data["lenses"]] == ["alpha", "beta"]
    assert {lens["slot"] for lens in data["lenses"]} == {0, 1}


def test_side_list_shows_each_lens_with_verdict_and_rationale(reviewer_client, tricky):
    content = reviewer_client.get(reverse("proposal_detail", args=[tricky.pk])).content.decode()
    assert '<h3 class="lens-card__name">alpha</h3>' in content
    assert '<span class="verdict verdict--fail"><span aria-hidden="true">✗</span> fail</span>' in (
        content
    )
    assert "Reasoned." in content


def test_tally_is_spelled_out(reviewer_client, tricky):
    content = reviewer_client.get(reverse("proposal_detail", args=[tricky.pk])).content.decode()
    assert "1 pass · 1 fail of 2, need 2 → no quorum" in content


def test_unanchored_cites_are_listed_with_a_warning(reviewer_client):
    panel = make_panel("alpha", need=1)
    proposal = run_panel(
        panel,
        "Only this sentence exists.",
        {"alpha": judgement("pass", "Only this sentence exists.", "A sentence nobody wrote.")},
    )
    content = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    section = content.split('id="unresolved"')[1].split("</section>")[0]
    assert "quote nothing found verbatim" in section
    assert "A sentence nobody wrote." in section
    assert "Only this sentence exists." not in section


def test_thought_window_claims_sit_in_a_collapsible_section_with_the_thought_text(reviewer_client):
    panel = make_panel("alpha", need=1)
    proposal = run_panel(
        panel,
        "The answer is 4.",
        {"alpha": judgement("pass", "I added two and two")},
        thought_process="First I added two and two carefully.",
    )
    content = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    details = content.split('<details class="thought card" id="thought">')[1].split("</details>")[0]
    assert "1 claim cites it" in details
    assert "I added two and two" in details
    assert "First I added two and two carefully." in details


def test_checker_evidence_shows_verdict_reason_and_unenforced_clauses(reviewer_client):
    checker = mandate_checker('must contain "refund"; output must feel authoritative')
    panel = make_panel("alpha", need=1, checkers=[checker])
    proposal = run_panel(panel, "No mention of money back.", {"alpha": judgement("pass")})
    content = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    evidence = content.split('id="evidence-title"')[1].split("</section>")[0]
    assert checker.name in evidence
    assert '<span class="verdict verdict--fail"><span aria-hidden="true">✗</span> fail</span>' in (
        evidence
    )
    assert "refund" in evidence
    assert "Unenforced clauses" in evidence and "output must feel authoritative" in evidence


def test_a_running_proposal_shows_a_polling_progress_indicator(reviewer_client, panel):
    proposal, _ = proposal_submit(panel_name=panel.name, content="Waiting for lenses.")
    content = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    assert 'id="progress"' in content
    assert f'hx-get="{reverse("proposal_progress", args=[proposal.pk])}"' in content
    assert "0 of 2 lenses answered" in content


def test_progress_partial_reports_answered_lenses(reviewer_client):
    from tests.web.builders import awaiting_judges

    running = awaiting_judges("Half way there.", "pass", "Half way there.")
    running.task_runs()
    proposal, first = running.proposal, running.recorded
    response = reviewer_client.get(
        reverse("proposal_progress", args=[proposal.pk]), headers={"HX-Request": "true"}
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="progress"')
    assert "Evaluating" in body and "1 of 2 lenses answered" in body
    assert f'{first.name}: <span aria-hidden="true">✓</span> pass' in body


def test_progress_partial_reloads_the_page_once_final(reviewer_client, escalated):
    response = reviewer_client.get(
        reverse("proposal_progress", args=[escalated.pk]), headers={"HX-Request": "true"}
    )
    assert response.status_code == 204 and response["HX-Refresh"] == "true"
    assert "HX-Request" in response["Vary"]  # a browser is redirected from the same URL


def test_a_final_proposal_does_not_poll(reviewer_client, escalated):
    content = reviewer_client.get(reverse("proposal_detail", args=[escalated.pk])).content.decode()
    assert 'id="progress"' not in content


XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_proposal_text_rationale_and_lens_names_are_escaped(reviewer_client):
    panel = make_panel("<b>lens</b>", need=1)
    proposal = run_panel(
        panel,
        f"Before {XSS} after.",
        {"<b>lens</b>": judgement("pass", XSS, rationale=XSS)},
        title=XSS,
    )
    response = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk]))
    body = response.content.decode()
    assert "<script>alert" not in body and "<img src=x" not in body and "<b>lens</b>" not in body
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    assert "&lt;b&gt;lens&lt;/b&gt;" in body
    # The JSON copies are escaped for a script element and decode to the exact text.
    assert _json_script(response, "answer-content") == f"Before {XSS} after."
    assert _json_script(response, "highlight-data")["spans"][0]["text"] == XSS


def test_inbox_and_lists_escape_titles(reviewer_client):
    panel = make_panel("a", "b")
    run_panel(panel, "x y", {"a": judgement("pass"), "b": judgement("fail")}, title=XSS)
    for name in ("inbox", "proposal_list"):
        body = reviewer_client.get(reverse(name)).content.decode()
        assert "<script>alert" not in body and "&lt;script&gt;" in body


def test_unknown_proposal_is_404(reviewer_client):
    assert reviewer_client.get(reverse("proposal_detail", args=[999999])).status_code == 404


# --- unresolved cites say what the lens said, and why they are unresolved ---------


def _unresolved_items(content: str) -> list[str]:
    section = content.split('id="unresolved"', 1)[1].split("</section>", 1)[0]
    items = re.findall(r'<li class="claim unresolved-claim">(.*?)</li>', section, re.S)
    return [html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", i))).strip() for i in items]


def test_a_cite_dropped_after_requoting_shows_the_lens_assessment_and_the_spent_budget(
    reviewer_client,
):
    from tests.factories import recorded

    panel = make_panel("reg-risk", need=1, policy="reject")
    content = "The regulation applies from 2025."
    bogus = {"cite": "The regulation was repealed in 2024.", "assessment": "refuted"}
    answer = judgement("fail", "The regulation applies from 2025.", bogus)
    # The first answer and both re-quote rounds cite the same fabrication.
    recorded(panel.ordered_lenses()[0], content, answer, answer, answer)
    from tests.review.helpers import evaluate_in_process, submit

    proposal = evaluate_in_process(submit(panel, content))
    dropped = Claim.objects.get(judgement__proposal=proposal, dropped=True)
    assert dropped.assessment == "refuted"
    page = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    [item] = _unresolved_items(page)
    assert "lens said: refuted" in item
    assert "verified" not in item
    assert "Dropped after 2 re-quote requests: the re-quote budget is spent." in item


def test_an_external_lens_cite_is_never_said_to_have_been_requoted(reviewer_client):
    from reviewapp.core.cite import ClaimInput
    from reviewapp.review.models import ApiClient
    from reviewapp.review.services.judgements import external_judgement_submit
    from tests.factories import LensFactory, PanelFactory
    from tests.review.helpers import submit

    lens = LensFactory(name="ext", backend="external")
    judge = ApiClient.objects.create(
        name="judge", token_prefix="j", token_hash="0" * 64, scopes=["judge"]
    )
    lens.judge_clients.add(judge)
    panel = PanelFactory(lenses=[lens], need=1, grounding_policy="reject")
    proposal = submit(panel, "Paris is the capital.")
    external_judgement_submit(
        client=judge,
        proposal=proposal,
        lens_name="ext",
        verdict="fail",
        rationale="Made up.",
        claims=[ClaimInput(cite="this text is nowhere", assessment="refuted")],
    )
    page = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    [item] = _unresolved_items(page)
    assert "lens said: refuted" in item
    assert "re-quoting" not in item and "budget" not in item
    assert "never asked to re-quote" in item


def test_under_repair_an_unresolved_cite_says_the_policy_kept_it(reviewer_client):
    panel = make_panel("alpha", need=1, policy="repair")
    proposal = run_panel(
        panel,
        "Water is wet.",
        {"alpha": judgement("pass", {"cite": "Fire is cold.", "assessment": "contested"})},
    )
    page = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    [item] = _unresolved_items(page)
    assert "lens said: contested" in item
    assert "Kept unanchored by the panel's repair policy" in item


def test_every_escalation_reason_is_explained_in_words(reviewer_client):
    panel = make_panel("alpha", "beta", "gamma")
    content = "The sky is blue."
    proposal = run_panel(
        panel,
        content,
        {"alpha": judgement("pass", "The sky is blue."), "beta": judgement("fail", "The sky")},
    )
    assert sorted(proposal.escalations.get().reasons) == ["lens_failed", "no_quorum"]
    page = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    reasons = page.split('id="escalation-reasons"', 1)[1].split("</ul>", 1)[0]
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", reasons)))
    assert "No quorum 1 lens passed and 1 failed of 3 asked; 3 had to agree" in text
    assert "Lens failed gamma never answered (a lens error, not a fail verdict)" in text


def test_a_lens_error_and_a_fail_verdict_use_different_words_and_marks(reviewer_client):
    panel = make_panel("alpha", "beta")
    proposal = run_panel(panel, "The sky is blue.", {"alpha": judgement("fail", "The sky")})
    page = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    assert '<span aria-hidden="true">✗</span> fail</span>' in page
    assert '<span aria-hidden="true">⚠</span> lens error</span>' in page
    assert ">failed<" not in page


# --- a refused quote that looks identical says what differs ------------------------


def test_a_quote_differing_only_in_unicode_normalisation_is_refused_with_a_note(reviewer_client):
    panel = make_panel("alpha", need=1, policy="repair")
    proposal = run_panel(
        panel,
        "Le Cafe\u0301 compose\u0301 ouvre à neuf heures.",  # stored decomposed (NFD)
        {"alpha": judgement("pass", {"cite": "Café composé", "assessment": "verified"})},
    )
    assert Claim.objects.get(judgement__proposal=proposal).anchor_kind != "answer_body"
    page = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    [item] = _unresolved_items(page)
    assert "Matches only after Unicode normalisation (NFC/NFD); not grounded." in item
    # The lens card says it beside the claim too.
    assert page.count("Matches only after Unicode normalisation (NFC/NFD)") == 2


def test_a_fabricated_quote_gets_no_near_miss_note(reviewer_client):
    panel = make_panel("alpha", need=1, policy="repair")
    proposal = run_panel(
        panel, "Water is wet.", {"alpha": judgement("pass", {"cite": "Fire is cold."})}
    )
    page = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    assert "data-near-miss" not in page and "Matches only" not in page


def test_a_near_miss_in_the_thought_process_says_where(reviewer_client):
    panel = make_panel("alpha", need=1, policy="repair")
    proposal = run_panel(
        panel,
        "The answer is 42.",
        {"alpha": judgement("pass", {"cite": "the customer's file"})},
        thought_process="First I read the customer\u2019s file.",
    )
    page = reviewer_client.get(reverse("proposal_detail", args=[proposal.pk])).content.decode()
    [item] = _unresolved_items(page)
    assert "In the thought process, matches only with quote marks made alike" in item
