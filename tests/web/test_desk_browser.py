"""The reviewer's desk in real Chromium: labels that tell the truth, work that is never lost,
decide and go on, marks that survive overlap, text as written, and 390 px screens."""

import re
import struct
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import expect

from reviewapp.core.cite import ClaimInput
from reviewapp.review.models import ApiClient, Decision, Escalation
from reviewapp.review.services.escalations import escalation_claim, escalation_release
from reviewapp.review.services.judgements import external_judgement_submit
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit

from .builders import judgement, make_panel, run_panel, split_panel_proposal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests"  # tests/factories.py

# 👍🏽, a ZWJ family, a flag, e + U+0301, CRLF, Chinese, Hebrew and Arabic.
MIXED = (
    "Summary 👍🏽 for the 👨‍👩‍👧 family in the 🇪🇺.\r\n"
    "The cafe\u0301 opens at nine.\r\n"
    "会议在周一举行。\r\n"
    "שלום, עולם!\r\n"
    "مرحبا بالعالم، كيف حالك؟\r\n"
    "Shared claim sentence here.\r\n"
)
SHARED = "Shared claim sentence here."


def _card(page) -> str:
    return page.locator("#adjudication").inner_text()


def _claimed_page(open_as, reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    page.wait_for_selector("#approve-btn")
    return page


# --- 1. labels that tell the truth ------------------------------------------------


def test_an_external_lens_refuted_cite_is_shown_as_refuted_and_never_as_requoted(open_as, reviewer):
    lens = LensFactory(name="ext", backend="external")
    judge = ApiClient.objects.create(
        name="judge", token_prefix="j", token_hash="1" * 64, scopes=["judge"]
    )
    lens.judge_clients.add(judge)
    panel = PanelFactory(lenses=[lens], need=1, grounding_policy="reject")
    proposal = submit(panel, "Paris is the capital of France.")
    external_judgement_submit(
        client=judge,
        proposal=proposal,
        lens_name="ext",
        verdict="fail",
        rationale="Invented.",
        claims=[ClaimInput(cite="this text is nowhere", assessment="refuted")],
    )
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    unresolved = page.locator("#unresolved").inner_text()
    assert "lens said: refuted" in unresolved
    assert "verified" not in unresolved and "re-quoting" not in unresolved
    assert "never asked to re-quote" in unresolved


def test_no_quorum_and_a_lens_error_are_both_explained_and_unmistakable(open_as, reviewer):
    panel = make_panel("alpha", "beta", "gamma")
    proposal = run_panel(
        panel,
        "The sky is blue.",
        {"alpha": judgement("pass", "The sky is blue."), "beta": judgement("fail", "The sky")},
    )
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    reasons = page.locator("#escalation-reasons").inner_text()
    assert "No quorum" in reasons and "1 lens passed and 1 failed of 3 asked" in reasons
    assert "gamma never answered (a lens error, not a fail verdict)" in reasons
    fail = page.locator(".lens-card .verdict--fail")
    error = page.locator(".lens-card .verdict--failed")
    assert fail.inner_text() == "✗ fail" and error.inner_text() == "⚠ lens error"
    # Not only colour: a different outline too.
    styles = [
        v.evaluate(
            "e => getComputedStyle(e).borderTopStyle + ' ' + getComputedStyle(e).borderRadius"
        )
        for v in (fail, error)
    ]
    assert styles[0] != styles[1] and styles[1].startswith("dashed")


# --- 2. work that is never lost ------------------------------------------------------


def _log_in_again(page, user):
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def test_an_expired_session_keeps_the_rationale_and_comes_back_to_the_proposal(
    open_as, reviewer, escalation
):
    page = _claimed_page(open_as, reviewer, escalation)
    page.fill("#rationale", "Checked every cite; the failing lens misread it.")
    # The session expires while the reviewer types (the CSRF cookie outlives it).
    page.context.clear_cookies(name=settings.SESSION_COOKIE_NAME)
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_url("**/login/**")
    assert f"next=/proposals/{escalation.proposal_id}" in page.url.replace("%2F", "/")
    assert "decide" not in page.url
    _log_in_again(page, reviewer)
    page.wait_for_url(f"**/proposals/{escalation.proposal_id}")
    assert page.input_value("#rationale") == "Checked every cite; the failing lens misread it."
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_selector("#decision-signature")
    assert Decision.objects.get().rationale == "Checked every cite; the failing lens misread it."


def test_claim_with_an_expired_session_goes_to_a_login_that_returns_and_never_pastes_it(
    open_as, reviewer, escalation
):
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    page.fill("#rationale", "A draft before claiming.")
    page.context.clear_cookies(name=settings.SESSION_COOKIE_NAME)
    page.click("#claim-btn")
    page.wait_for_url("**/login/**")
    assert page.locator("#adjudication").count() == 0  # the whole page went, not a pasted card
    _log_in_again(page, reviewer)
    page.wait_for_url(f"**/proposals/{escalation.proposal_id}")
    assert page.input_value("#rationale") == "A draft before claiming."


def test_a_claim_released_from_a_second_page_keeps_the_rationale_and_says_so_in_the_card(
    open_as, reviewer, escalation
):
    page = _claimed_page(open_as, reviewer, escalation)
    page.fill("#rationale", "Both lenses cite real text; approve.")
    other = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    other.click("#release-btn")
    other.wait_for_selector("text=Claim released.")
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    error = page.locator("#adjudication [data-card-message].message--error")
    error.wait_for()
    assert "You do not hold this escalation" in error.inner_text()
    assert page.input_value("#rationale") == "Both lenses cite real text; approve."
    # The message is inside the card and on screen, not scrolled off at the top.
    assert error.is_visible()
    box = error.bounding_box()
    assert 0 <= box["y"] < page.viewport_size["height"]
    page.click("#claim-btn")
    page.wait_for_selector("#approve-btn")
    assert page.input_value("#rationale") == "Both lenses cite real text; approve."
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_selector("#decision-signature")
    assert Decision.objects.get().rationale == "Both lenses cite real text; approve."


def test_a_draft_survives_a_reload(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    page.click("#rationale")
    page.keyboard.type("Half written")
    page.reload()
    page.wait_for_selector("#approve-btn")
    assert page.input_value("#rationale") == "Half written"


def test_typing_renews_the_claim_and_the_card_says_when_it_lapses(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    Escalation.objects.filter(pk=escalation.pk).update(
        claimed_at=timezone.now() - timedelta(minutes=25)
    )
    assert "in 30 minutes" in page.locator("#claim-state").inner_text()
    with page.expect_response("**/heartbeat") as beat:
        page.click("#rationale")
        page.keyboard.type("x")
    assert beat.value.status == 200
    escalation.refresh_from_db()
    assert timezone.now() - escalation.claimed_at < timedelta(seconds=30)
    page.wait_for_function(
        "() => /in (29|30) minutes/.test(document.getElementById('claim-countdown').textContent)"
    )


def test_a_heartbeat_that_finds_the_claim_gone_says_so_in_the_card(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    escalation_release(escalation_id=escalation.pk, user=reviewer)
    page.click("#rationale")
    page.keyboard.type("Still typing")
    page.wait_for_selector("#adjudication-alert:not([hidden])")
    assert "released" in page.locator("#adjudication-alert").inner_text()
    assert page.input_value("#rationale") == "Still typing"


# --- 3. decide and go on -----------------------------------------------------------


@pytest.fixture
def queue(panel):
    """Three escalations on `panel` and one on another panel."""
    other = make_panel("x-one", "x-two")
    outside = split_panel_proposal(other, title="Other panel")
    mine = [
        split_panel_proposal(
            panel, content=f"{i}. The sky is blue. Water is wet.", title=f"Item {i}"
        )
        for i in range(3)
    ]
    return panel, mine, outside


def test_after_signing_the_card_offers_the_next_escalation_under_the_inbox_filters(
    open_as, reviewer, queue
):
    panel, mine, outside = queue
    page = open_as(reviewer, f"/?panel={panel.pk}")
    first = mine[-1]  # newest first
    page.click(f"#row-link-{Escalation.objects.get(proposal=first).pk}")
    page.click("#claim-btn")
    page.wait_for_selector("#approve-btn")
    page.fill("#rationale", "Fine.")
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_selector("#next-btn")
    assert "2 left" in page.locator("#queue-left").inner_text()
    page.click("#next-btn")
    page.wait_for_url(f"**/proposals/{mine[1].pk}*")
    assert outside.pk not in (mine[1].pk,)


def test_signing_turns_the_status_at_the_top_of_the_page_to_decided(open_as, reviewer, escalation):
    page = _claimed_page(open_as, reviewer, escalation)
    assert page.locator("#proposal-status").inner_text() == "escalated"
    page.evaluate("window.stillThisPage = true")  # gone if the page were reloaded
    page.fill("#rationale", "Fine.")
    page.click("#approve-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_selector("#adjudication h2:has-text('Decision')")
    status = page.locator("#proposal-status")
    # htmx swaps the new attributes in only as the swap settles: wait for it.
    expect(status).to_have_text("decided")
    expect(status).to_have_class(re.compile(r"\bstatus--decided\b"))
    assert page.evaluate("window.stillThisPage") is True
    assert page.locator("#proposal-status").count() == 1


def test_decide_and_next_goes_straight_on_and_says_how_many_are_left(open_as, reviewer, queue):
    panel, mine, outside = queue
    page = open_as(reviewer, f"/?panel={panel.pk}")
    page.click(f"#row-link-{Escalation.objects.get(proposal=mine[-1]).pk}")
    page.click("#claim-btn")
    page.wait_for_selector("#approve-btn")
    page.check("#decide-and-next")
    page.fill("#rationale", "Fine.")
    page.click("#reject-btn")
    page.click("#confirm-sign-btn")
    page.wait_for_url(f"**/proposals/{mine[1].pk}*")
    card = _card(page)
    assert f"Decision signed: rejected on #{mine[-1].pk}. 2 left in this queue." in card
    # The setting sticks for the next one.
    page.click("#claim-btn")
    page.wait_for_selector("#approve-btn")
    assert page.is_checked("#decide-and-next")


def test_the_shortcut_help_lists_every_shortcut_that_works(open_as, reviewer, escalation):
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    page.keyboard.press("?")
    dialog = page.locator("#shortcuts-help")
    dialog.wait_for(state="visible")
    text = dialog.inner_text()
    for key in ("j", "k", "Enter", "c", "a", "r", "Ctrl", "n", "N", "?", "Esc"):
        assert key in text.split() or f"{key}\n" in text or key in text, key
    assert "Next / previous cited span" in text and "Sign the decision" in text


# --- 4. who said what, at a glance ----------------------------------------------------


@pytest.fixture
def mixed(db):
    panel = make_panel("acc", "tone", "reg")
    return run_panel(
        panel,
        MIXED,
        {
            "acc": judgement("pass", SHARED, "Summary 👍🏽", "The cafe"),
            "tone": judgement("pass", SHARED, "会议在周一举行。"),
            "reg": judgement("fail", SHARED, "שלום, עולם!"),
        },
        title="Mixed",
    )


def _wait_painted(page):
    page.wait_for_selector("#answer-body[data-highlights='painted']", state="attached")


def _centre_of(page, root_id: str, offset: int):
    return page.evaluate(
        """([id, i]) => {
            const node = document.getElementById(id).firstChild;
            const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
            const b = r.getBoundingClientRect();
            return [b.left + b.width / 2, b.top + b.height / 2, b.left, b.right];
        }""",
        [root_id, offset],
    )


def _utf16(text: str, index: int) -> int:
    return len(text[:index].encode("utf-16-le")) // 2


def test_three_lenses_on_one_span_get_one_multi_mark_named_in_tooltip_list_and_legend(
    open_as, reviewer, mixed
):
    page = open_as(reviewer, f"/proposals/{mixed.pk}")
    _wait_painted(page)
    pieces = page.evaluate("() => window.reviewappPieces")
    shared = [p for p in pieces if sorted(p["lenses"]) == ["acc", "reg", "tone"]]
    assert len(shared) == 1
    assert page.evaluate("() => CSS.highlights.get('rv-multi').size") == 1
    # Single-lens pieces stay in their lens's own highlight.
    assert page.evaluate("() => CSS.highlights.get('rv-lens-0').size") == 2
    x, y, *_ = _centre_of(page, "answer-body", _utf16(MIXED, MIXED.index(SHARED)) + 3)
    page.mouse.move(x, y)
    page.locator("#hl-tooltip").wait_for(state="visible")
    assert "Cited by 3 lenses: acc, tone, reg" in page.locator("#hl-tooltip").inner_text()
    assert "3 lenses" in page.locator(".span-item", has_text=SHARED).text_content()
    assert "several lenses cite it" in page.locator("#legend").inner_text()


def test_each_lens_has_its_own_underline_style_so_colour_is_not_the_only_carrier(
    open_as, reviewer, mixed
):
    page = open_as(reviewer, f"/proposals/{mixed.pk}")
    styles = page.evaluate(
        """() => [...document.querySelectorAll('#legend .mark-sample')].map(e => {
            const style = getComputedStyle(e);
            return style.textDecorationLine + ' ' + style.textDecorationStyle;
        })"""
    )
    # three lenses, "several lenses" and "lenses disagree"
    assert len(styles) == 5 and len(set(styles)) == 5, styles


def test_overlap_paints_a_neutral_coat_distinct_from_each_lens(open_as, reviewer):
    from tests.web.test_browser import _pixel

    panel = make_panel("alpha", "beta")
    content = "zero one two three four five"
    proposal = run_panel(
        panel,
        content,
        {"alpha": judgement("pass", "one two three"), "beta": judgement("fail", "two three four")},
    )
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    _wait_painted(page)
    spaces = [i for i, ch in enumerate(content) if ch == " "]

    # Sample the top quarter of each space: clear of the underlines.
    def sample(i):
        x, y, *_ = _centre_of(page, "answer-body", i)
        return _pixel(page, x, y - 4)

    none, alpha, both, beta = (sample(i) for i in spaces[:4])
    assert len({none, alpha, both, beta}) == 4, (none, alpha, both, beta)
    assert alpha[2] > alpha[0] and beta[0] > beta[2]
    assert max(both) - min(both) < 30  # grey: no lens's hue


def test_a_cite_into_the_thought_process_is_highlighted_in_the_thought_text(open_as, reviewer):
    panel = make_panel("alpha", need=1)
    proposal = run_panel(
        panel,
        "The answer is 42.",
        {"alpha": judgement("pass", "I recall the number from the guide")},
        thought_process="First, I recall the number from the guide. Then I answer.",
    )
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    _wait_painted(page)
    page.click("#thought summary")
    thought = page.evaluate("() => window.reviewappThoughtHighlights")
    assert thought == [
        {"lens": "alpha", "start": 7, "end": 41, "text": "I recall the number from the guide"}
    ]
    ranges = page.evaluate(
        """() => [...CSS.highlights.get('rv-lens-0')].filter(
            r => r.startContainer.parentElement.id === 'thought-body').map(r => r.toString())"""
    )
    assert ranges == ["I recall the number from the guide"]


# --- 5. text as written ---------------------------------------------------------------


def test_right_to_left_lines_are_laid_out_per_line(open_as, reviewer, mixed):
    page = open_as(reviewer, f"/proposals/{mixed.pk}")
    _wait_painted(page)
    hebrew = MIXED.index("שלום")
    bang = MIXED.index("!", hebrew)
    shin = _centre_of(page, "answer-body", _utf16(MIXED, hebrew))
    mark = _centre_of(page, "answer-body", _utf16(MIXED, bang))
    # RTL: the first letter is rightmost and the "!" the author ended with is leftmost.
    assert mark[3] <= shin[2]
    box = page.locator("#answer-body").bounding_box()
    assert shin[3] > box["x"] + box["width"] * 0.6  # the line starts at the right edge
    english = _centre_of(page, "answer-body", _utf16(MIXED, MIXED.index("The cafe")))
    assert english[2] < box["x"] + box["width"] * 0.2


def test_a_cite_ending_inside_a_grapheme_is_flagged_as_a_partial_character(
    open_as, reviewer, mixed
):
    page = open_as(reviewer, f"/proposals/{mixed.pk}")
    _wait_painted(page)
    item = page.locator(".span-item", has_text="The cafe")
    assert "partial character" in item.text_content()
    x, y, *_ = _centre_of(page, "answer-body", _utf16(MIXED, MIXED.index("The cafe")) + 1)
    page.mouse.move(x, y)
    page.locator("#hl-tooltip").wait_for(state="visible")
    assert "ends inside “e\u0301”" in page.locator("#hl-tooltip").inner_text()
    # Whole clusters are not flagged.
    assert "partial character" not in page.locator(".span-item", has_text="Summary").text_content()


# --- 6. small screens ---------------------------------------------------------------------


def _png_size(png: bytes) -> tuple[int, int]:
    return struct.unpack(">II", png[16:24])


PHONE = {"width": 390, "height": 844}


@pytest.mark.parametrize(
    "path_of", ["inbox", "proposal", "decisions", "proposals", "verify", "dashboard"]
)
def test_reviewer_pages_fit_390px_without_horizontal_scrolling(
    open_as, reviewer, mixed, path_of, tmp_path
):
    escalation = Escalation.objects.get(proposal=mixed)
    # A decided proposal, so the decisions log has a row.
    decided = split_panel_proposal(
        make_panel("d-one", "d-two"), title="Decided " + "long-title-" * 6
    )
    decided_escalation = Escalation.objects.get(proposal=decided)
    escalation_claim(escalation_id=decided_escalation.pk, user=reviewer)
    from reviewapp.review.services.escalations import escalation_decide

    decision = escalation_decide(
        escalation_id=decided_escalation.pk,
        outcome="approved",
        rationale="ok",
        user=reviewer,
        decided_by_name=reviewer.username,
    )
    path = {
        "inbox": "/",
        "proposal": f"/proposals/{escalation.proposal_id}",
        "decisions": "/decisions",
        "proposals": "/proposals",
        "verify": f"/decisions/{decision.pk}/verify",
        "dashboard": "/dashboard",
    }[path_of]
    page = open_as(reviewer, path, viewport=PHONE)
    page.wait_for_load_state("networkidle")
    png = page.screenshot(path=str(tmp_path / f"{path_of}.png"), full_page=True)
    assert _png_size(png)[0] == 390
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths
    # The header folds into a menu whose links land on screen.
    page.click("[data-nav-toggle]")
    link = page.locator(".site-nav a", has_text="Decisions")
    link.wait_for(state="visible")
    assert link.bounding_box()["x"] + link.bounding_box()["width"] <= 390
    if path_of in ("inbox", "proposal"):
        claim = page.locator(
            "#claim-btn" if path_of == "proposal" else "[data-claim-form] button"
        ).first
        box = claim.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
