"""The review pages in a real browser: headless Chromium driven by Playwright.

The highlight tests read back what the browser actually painted — each
painted Range's text — and compare it with the claim's resolved text stored on
the server, on content built to break offset arithmetic: emoji before and
inside cited spans, a ZWJ family, CRLF line breaks, U+2011 and combining marks.
"""

import zlib

import pytest

from reviewapp.review.models import Claim, Decision, Escalation
from reviewapp.review.services.escalations import escalation_claim

from .builders import judgement, make_panel, run_panel, split_panel_proposal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Emoji before and inside cited spans, a ZWJ family, CRLF, U+2011 (non-breaking
# hyphen) and combining acute accents (e + U+0301).
TRICKY = (
    "🚀 Launch plan\r\n"
    "Step 1: fuel the 🚀 rocket at dawn.\r\n"
    "Step 2: the family 👩‍👩‍👧 boards via the non‑stop gate.\r\n"
    "Step 3: re\u0301sume\u0301 the cafe\u0301 checklist 🚀🚀 twice.\r\n"
)
ALPHA_CITES = [
    "fuel the 🚀 rocket at dawn.",
    "the family 👩‍👩‍👧 boards via the non‑stop gate.",
    "re\u0301sume\u0301 the cafe\u0301",
]
BETA_CITES = [
    "👩‍👩‍👧 boards via the non‑stop",  # overlaps alpha's second cite
    "the family 👩‍👩‍👧 boards via the non‑stop gate.",  # the same span as alpha's
    "cafe\u0301 checklist 🚀🚀",  # overlaps alpha's third cite
]


@pytest.fixture
def tricky(db):
    panel = make_panel("alpha", "beta")
    return run_panel(
        panel,
        TRICKY,
        {
            "alpha": judgement("pass", *ALPHA_CITES),
            "beta": judgement(
                "fail",
                *[{"cite": c, "assessment": "contested", "note": "Doubtful."} for c in BETA_CITES],
            ),
        },
        title="Launch",
    )


def _wait_painted(page):
    page.wait_for_selector("#answer-body[data-highlights='painted']", state="attached")


def _painted(page) -> list[dict]:
    return page.evaluate(
        """() => window.reviewappHighlights.map(h => ({
            lens: h.lens, start: h.start, end: h.end, text: h.range.toString()
        }))"""
    )


def _expected(proposal) -> dict[tuple[str, int, int], str]:
    return {
        (c.judgement.lens_name, c.start_utf16, c.end_utf16): c.text
        for c in Claim.objects.filter(
            judgement__proposal=proposal, anchor_kind="answer_body", dropped=False
        ).select_related("judgement")
    }


def _assert_highlights_match(page, proposal):
    expected = _expected(proposal)
    assert len(expected) == len(ALPHA_CITES) + len(BETA_CITES)
    painted = _painted(page)
    assert {(h["lens"], h["start"], h["end"]): h["text"] for h in painted} == expected
    assert len(painted) == len(expected)
    # The text node holds exactly the stored content, CRLF included.
    assert page.evaluate("() => document.getElementById('answer-body').textContent") == TRICKY


def test_every_highlight_paints_exactly_the_claims_text(open_as, reviewer, tricky):
    page = open_as(reviewer, f"/proposals/{tricky.pk}")
    _wait_painted(page)
    assert page.evaluate("() => window.reviewappHighlightMode") == "highlight-api"
    _assert_highlights_match(page, tricky)
    assert page.evaluate("() => document.getElementById('answer-body').childNodes.length") == 1


def test_mark_fallback_paints_exactly_the_claims_text(open_as, reviewer, tricky):
    page = open_as(reviewer, "/")
    page.context.add_init_script("delete CSS.highlights; delete window.Highlight;")
    page.goto(f"/proposals/{tricky.pk}")
    _wait_painted(page)
    assert page.evaluate("() => window.reviewappHighlightMode") == "mark"
    _assert_highlights_match(page, tricky)
    # Overlaps are one multi-lens mark saying how many lenses cite it.
    assert page.locator("#answer-body mark.hl-multi[data-lenses='2']").count() >= 1
    assert page.locator("#answer-body mark mark").count() == 0


def test_a_long_answer_split_into_blocks_still_highlights_exactly(open_as, reviewer):
    # Over 64 Ki UTF-16 units the answer is laid out in blocks split after line
    # feeds; cites that straddle CRLF line ends must still land exactly.
    lines = [
        f"Line {i:05d}: 🚀 fuel, the family 👩‍👩‍👧, re\u0301sume\u0301 and non‑stop."
        for i in range(2400)
    ]
    content = "\r\n".join(lines)
    assert len(content.encode("utf-16-le")) // 2 > 65536 * 2
    straddling = [f"non‑stop.\r\nLine {i + 1:05d}: 🚀" for i in range(0, 2399, 97)]
    panel = make_panel("alpha", need=1)
    proposal = run_panel(panel, content, {"alpha": judgement("pass", *straddling)})
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    _wait_painted(page)
    assert int(page.get_attribute("#answer-body", "data-chunks")) > 4
    expected = _expected(proposal)
    assert len(expected) == len(straddling)
    painted = _painted(page)
    assert {(h["lens"], h["start"], h["end"]): h["text"] for h in painted} == expected
    assert page.evaluate("() => document.getElementById('answer-body').textContent") == content
    # Jumping to the last span scrolls the blocks into layout and lands on it.
    page.evaluate("() => window.reviewappFocusSpan(window.reviewappHighlights.at(-1).spanId)")
    page.wait_for_function(
        """() => {
            const h = window.reviewappHighlights.at(-1).range.getBoundingClientRect();
            const box = document.getElementById('answer-body').getBoundingClientRect();
            return h.height > 0 && h.top >= box.top && h.bottom <= box.bottom;
        }"""
    )


def test_overlapping_highlights_from_two_lenses_both_render(open_as, reviewer, tricky):
    page = open_as(reviewer, f"/proposals/{tricky.pk}")
    _wait_painted(page)
    # Where both cite, one multi-lens mark; elsewhere each lens's own.
    registered = page.evaluate(
        """() => ['rv-lens-0', 'rv-lens-1', 'rv-multi'].map(
            n => CSS.highlights.has(n) ? CSS.highlights.get(n).size : 0)"""
    )
    # Alpha's second cite holds two of beta's, and two other cites overlap.
    assert registered[2] == 2 and registered[0] >= 1 and registered[1] >= 1
    pieces = page.evaluate("() => window.reviewappPieces")
    assert sum(1 for p in pieces if p["lenses"] == ["alpha", "beta"]) == 2
    painted = _painted(page)
    alpha = [(h["start"], h["end"]) for h in painted if h["lens"] == "alpha"]
    beta = [(h["start"], h["end"]) for h in painted if h["lens"] == "beta"]
    overlapping = [(a, b) for a in alpha for b in beta if a[0] < b[1] and b[0] < a[1] and a != b]
    assert len(overlapping) >= 2


def _pixel(page, x: float, y: float) -> tuple[int, int, int]:
    """The colour of one screen pixel, read from a 1×1 PNG screenshot."""
    png = page.screenshot(clip={"x": int(x), "y": int(y), "width": 1, "height": 1})
    pos, data = 8, b""
    while pos < len(png):
        length = int.from_bytes(png[pos : pos + 4], "big")
        kind = png[pos + 4 : pos + 8]
        if kind == b"IDAT":
            data += png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(data)
    # One pixel in one row: whatever the filter, the bytes after it are the pixel.
    return tuple(raw[1:4])


def test_overlap_shows_both_lens_colours_on_screen(open_as, reviewer):
    panel = make_panel("alpha", "beta")
    content = "zero one two three four five"
    proposal = run_panel(
        panel,
        content,
        {"alpha": judgement("pass", "one two three"), "beta": judgement("fail", "two three four")},
    )
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    _wait_painted(page)

    def space_centre(index: int):
        return page.evaluate(
            """i => {
                const node = document.getElementById('answer-body').firstChild;
                const r = document.createRange();
                r.setStart(node, i); r.setEnd(node, i + 1);
                const b = r.getBoundingClientRect();
                return [b.left + b.width / 2, b.top + b.height / 2];
            }""",
            index,
        )

    spaces = [i for i, ch in enumerate(content) if ch == " "]
    # zero_one: unpainted; one_two: alpha only; two_three: both; three_four: beta only
    none, alpha, both, beta = (_pixel(page, *space_centre(i)) for i in spaces[:4])
    assert len({none, alpha, both, beta}) == 4, (none, alpha, both, beta)
    assert alpha[2] > alpha[0]  # alpha is blue
    assert beta[0] > beta[2]  # beta is orange
    assert all(both[i] < none[i] for i in range(3))  # two translucent coats: darker than either


def test_hovering_a_highlight_shows_the_lenses_that_cite_it(open_as, reviewer, tricky):
    page = open_as(reviewer, f"/proposals/{tricky.pk}")
    _wait_painted(page)
    family = TRICKY.index("boards")
    offset = len(TRICKY[:family].encode("utf-16-le")) // 2 + 2
    x, y = page.evaluate(
        """i => {
            const node = document.getElementById('answer-body').firstChild;
            const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
            const b = r.getBoundingClientRect();
            return [b.left + b.width / 2, b.top + b.height / 2];
        }""",
        offset,
    )
    page.mouse.move(x, y)
    tooltip = page.locator("#hl-tooltip")
    tooltip.wait_for(state="visible")
    text = tooltip.inner_text()
    assert "alpha: verified" in text and "beta: contested" in text and "Doubtful." in text


def test_clicking_a_claim_scrolls_to_and_flashes_its_span(open_as, reviewer):
    panel = make_panel("alpha", need=1)
    content = "".join(f"Line {i} of a long answer.\n" for i in range(400)) + "The cited end."
    proposal = run_panel(panel, content, {"alpha": judgement("pass", "The cited end.")})
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    _wait_painted(page)
    assert page.evaluate("() => document.getElementById('answer-body').scrollTop") == 0
    # The flash lasts about a second: record it rather than race it on a busy machine.
    page.evaluate(
        """() => {
            const set = CSS.highlights.set.bind(CSS.highlights);
            CSS.highlights.set = (name, h) => {
                if (name === 'rv-flash') window.__flashed = true;
                return set(name, h);
            };
        }"""
    )
    page.locator("#span-list a.span-link").first.click()
    assert page.evaluate("() => window.reviewappCurrentSpan") == 0
    assert page.evaluate("() => window.__flashed === true")
    visible = page.evaluate(
        """() => {
            const h = window.reviewappHighlights[0].range.getBoundingClientRect();
            const box = document.getElementById('answer-body').getBoundingClientRect();
            return h.top >= box.top && h.bottom <= box.bottom;
        }"""
    )
    assert visible


def test_xss_payload_renders_as_text(open_as, reviewer):
    payload = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
    panel = make_panel("<i>lens</i>", "other")
    proposal = run_panel(
        panel,
        f"Hello {payload} world",
        {
            "<i>lens</i>": judgement("pass", payload, rationale=payload),
            "other": judgement("fail", "world"),
        },
        title=payload,
    )
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    _wait_painted(page)
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("#answer-body").inner_text() == f"Hello {payload} world"
    assert page.locator("h1").inner_text() == payload
    assert page.locator("#answer-body img, #answer-body script, .lens-card i").count() == 0
    assert _painted(page)[0]["text"] == payload
    page.goto("/")
    assert page.evaluate("() => window.__xss") is None
    assert payload in page.locator("#inbox-results").inner_text()


def test_claim_race_has_one_winner_and_one_decision(open_as, reviewer, second_reviewer, escalation):
    path = f"/proposals/{escalation.proposal_id}"
    pages = [open_as(reviewer, path), open_as(second_reviewer, path)]
    at = pages[0].evaluate("() => Date.now()") + 400
    for page in pages:
        page.evaluate(
            "t => setTimeout(() => document.getElementById('claim-btn').click(), t - Date.now())",
            at,
        )
    for page in pages:
        page.wait_for_function(
            """() => /You hold this escalation|Already claimed by/.test(
                document.getElementById('adjudication').textContent)"""
        )
    texts = [page.locator("#adjudication").inner_text() for page in pages]
    winners = [i for i, text in enumerate(texts) if "You hold this escalation" in text]
    assert len(winners) == 1
    winner, loser = winners[0], 1 - winners[0]
    names = [reviewer.username, second_reviewer.username]
    assert f"Already claimed by {names[winner]}" in texts[loser]
    escalation.refresh_from_db()
    assert escalation.claimed_by.username == names[winner]

    # Both try to decide at once: the winner through the form, the loser by
    # posting anyway with its own CSRF token.
    pages[winner].fill("#rationale", "The passing lens is right.")
    decide_url = f"/escalations/{escalation.pk}/decide"
    at = pages[0].evaluate("() => Date.now()") + 400
    pages[winner].evaluate(
        """t => setTimeout(() => {
            document.getElementById('approve-btn').click();  // asks to confirm
            document.getElementById('confirm-sign-btn').click();
        }, t - Date.now())""",
        at,
    )
    status = pages[loser].evaluate(
        """async ([url, t]) => {
            await new Promise(r => setTimeout(r, t - Date.now()));
            const token = JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken'];
            const body = new URLSearchParams({outcome: 'rejected', rationale: 'Mine.'});
            const headers = {'X-CSRFToken': token};
            const response = await fetch(url, {method: 'POST', headers, body});
            return response.status;
        }""",
        [decide_url, at],
    )
    assert status == 409  # the page again, the refusal in its card
    pages[winner].wait_for_selector("#decision-signature")
    assert Decision.objects.count() == 1
    decision = Decision.objects.get()
    assert decision.outcome == "approved" and decision.decided_by_name == names[winner]
    assert pages[winner].locator("#decision-key-id").inner_text() == decision.key_id

    pages[winner].click("#verify-btn")
    pages[winner].wait_for_selector("#verify-result [data-verified='valid']")


def test_inbox_keyboard_j_k_enter(open_as, reviewer, panel):
    escalations = [
        Escalation.objects.get(
            proposal=split_panel_proposal(
                panel, content=f"{i}. The sky is blue. Water is wet.", title=f"Item {i}"
            )
        )
        for i in range(3)
    ]
    newest_first = escalations[::-1]
    page = open_as(reviewer, "/")
    page.wait_for_function("() => window.htmx !== undefined")
    page.keyboard.press("j")
    page.keyboard.press("j")
    selected = page.evaluate("() => document.querySelector('tr.is-selected').dataset.id")
    assert int(selected) == newest_first[1].pk
    page.keyboard.press("k")
    selected = page.evaluate("() => document.querySelector('tr.is-selected').dataset.id")
    assert int(selected) == newest_first[0].pk
    assert page.evaluate("() => document.activeElement.id") == f"row-link-{newest_first[0].pk}"
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/proposals/{newest_first[0].proposal_id}")


def test_c_claims_from_the_inbox(open_as, reviewer, escalation):
    page = open_as(reviewer, "/")
    page.wait_for_function("() => window.htmx !== undefined")
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.wait_for_url(f"**/proposals/{escalation.proposal_id}*")
    page.wait_for_selector("#approve-btn")
    escalation.refresh_from_db()
    assert escalation.claimed_by == reviewer
    # Claimed from the inbox, the cursor lands in the card's rationale box.
    page.wait_for_function("() => document.activeElement.id === 'rationale'")


def test_proposal_keyboard_n_c_a_r(open_as, reviewer, tricky):
    escalation = Escalation.objects.get(proposal=tricky)
    page = open_as(reviewer, f"/proposals/{tricky.pk}")
    _wait_painted(page)
    page.keyboard.press("n")
    assert page.evaluate("() => window.reviewappCurrentSpan") == 0
    page.keyboard.press("n")
    assert page.evaluate("() => window.reviewappCurrentSpan") == 1
    assert page.locator("#claim-cursor").inner_text().startswith("Span 2 of")
    assert page.locator("#span-item-1[aria-current='true']").count() == 1
    page.keyboard.press("N")
    assert page.evaluate("() => window.reviewappCurrentSpan") == 0
    page.keyboard.press("n")

    page.keyboard.press("c")
    page.wait_for_selector("#approve-btn")
    escalation.refresh_from_db()
    assert escalation.claimed_by == reviewer
    # After c the cursor is in the card's rationale box.
    page.wait_for_function("() => document.activeElement.id === 'rationale'")
    page.keyboard.press("Escape")
    page.keyboard.press("a")
    assert page.evaluate("() => document.activeElement.id") == "rationale"
    chosen = page.locator("#chosen-outcome")
    assert chosen.inner_text() == "Ctrl+Enter will ask to confirm: approve."
    page.keyboard.press("Escape")
    page.keyboard.press("r")
    assert page.evaluate("() => document.activeElement.id") == "rationale"
    assert chosen.inner_text() == "Ctrl+Enter will ask to confirm: reject."
    page.keyboard.type("Fabricated citation.")
    page.keyboard.press("Control+Enter")
    # The first Ctrl+Enter asks to confirm, on a focused button; the second signs.
    page.wait_for_function("() => document.activeElement.id === 'confirm-sign-btn'")
    assert not Decision.objects.exists()
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#decision-signature")
    decision = Decision.objects.get()
    assert decision.outcome == "rejected" and decision.rationale == "Fabricated citation."


def test_question_mark_opens_the_shortcuts(open_as, reviewer, escalation):
    page = open_as(reviewer, "/")
    page.keyboard.press("?")
    dialog = page.locator("#shortcuts-help")
    dialog.wait_for(state="visible")
    assert "Next / previous item in the inbox" in dialog.inner_text()
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")


def test_shortcuts_are_ignored_while_typing(open_as, reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    page = open_as(reviewer, f"/proposals/{escalation.proposal_id}")
    page.click("#rationale")
    page.keyboard.type("carefully reviewed")
    assert page.input_value("#rationale") == "carefully reviewed"
    assert page.evaluate("() => document.activeElement.id") == "rationale"


def test_inbox_refreshes_itself_when_an_escalation_arrives(open_as, reviewer, panel, fast_polls):
    page = open_as(reviewer, "/")
    page.wait_for_selector("text=Nothing is waiting")
    split_panel_proposal(panel, title="Arrived later")
    page.wait_for_selector("#inbox-results >> text=Arrived later", timeout=15_000)
    assert page.locator("[data-count='all']").inner_text() == "1"


HIDE_TAB = """() => Object.defineProperty(document, 'visibilityState',
                                      {value: 'hidden', configurable: true})"""
SHOW_TAB = """() => {
    Object.defineProperty(document, 'visibilityState', {value: 'visible', configurable: true});
    document.dispatchEvent(new Event('visibilitychange'));
}"""


def test_a_hidden_inbox_stops_polling_and_refreshes_when_shown_again(
    open_as, reviewer, panel, fast_polls
):
    page = open_as(reviewer, "/")
    page.wait_for_selector("text=Nothing is waiting")
    polls = []
    page.on(
        "request",
        lambda request: polls.append(request.url) if request.headers.get("hx-request") else None,
    )
    page.evaluate(HIDE_TAB)
    split_panel_proposal(panel, title="Arrived while hidden")
    page.wait_for_timeout(3_000 * fast_polls.REVIEWAPP_INBOX_POLL_SECONDS)  # three intervals
    assert polls == []
    page.evaluate(SHOW_TAB)
    page.wait_for_selector("#inbox-results >> text=Arrived while hidden", timeout=4_000)
    assert polls


def test_progress_indicator_follows_a_running_proposal(open_as, reviewer, fast_polls):
    from reviewapp.review.evaluation.tasks import finalize_proposal
    from tests.web.builders import awaiting_judges

    content = "The sky is blue. Water is wet."
    running = awaiting_judges(content, "pass", "The sky is blue.", title="Running")
    proposal = running.proposal
    page = open_as(reviewer, f"/proposals/{proposal.pk}")
    assert "0 of 2 lenses answered" in page.locator("#progress").inner_text()
    running.task_runs()
    page.wait_for_selector("#progress >> text=1 of 2 lenses answered", timeout=10_000)
    running.external_answers("fail", "Water is wet.")
    finalize_proposal(proposal.pk)  # the final step the last answer enqueued
    # Once final, the page reloads itself and shows the tally and the claim button.
    page.wait_for_selector("#claim-btn", timeout=10_000)
    assert page.locator("#progress").count() == 0
    assert "1 pass · 1 fail of 2, need 2 → no quorum" in page.locator("#tally").inner_text()


def test_core_navigation_works_without_javascript(open_as, reviewer, escalation):
    page = open_as(reviewer, "/", java_script_enabled=False)
    page.click(f"#row-link-{escalation.pk}")
    page.wait_for_url(f"**/proposals/{escalation.proposal_id}")
    assert "The sky is blue." in page.locator("#answer-body").inner_text()
    page.click("#claim-btn")
    page.wait_for_selector("text=You hold this escalation.")
    page.fill("#rationale", "Checked by hand.")
    page.click("#reject-btn")
    page.wait_for_selector("#decision-signature")
    page.click("#verify-btn")
    page.wait_for_selector("[data-verified='valid']")
    page.click("nav.site-nav >> text=Decisions")
    page.wait_for_url("**/decisions")
    row = page.locator("tbody tr").first.inner_text()
    assert "rejected" in row and "reviewer" in row and reviewer.username in row
