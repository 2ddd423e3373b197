"""The replay page in headless Chromium: calls shown, start, the bar polls to the end, cancel."""

import pytest
from playwright.sync_api import expect

from reviewapp.replay.models import Replay
from reviewapp.replay.services import replay_plan, replay_start
from tests.core.openai_stub import Answer
from tests.factories import LensFactory, UserFactory
from tests.replay.builders import CITE, human_decided, llm_lens, run_in_process, split_panel
from tests.review.helpers import judgement

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _planned(server, user, cases=3):
    panel = split_panel()
    for n in range(cases):
        human_decided(panel, n, "rejected")
    accuracy, tone = panel.ordered_lenses()
    return replay_plan(panel=panel, user=user, members=[accuracy, tone, llm_lens(server)], need=2)


def _page(open_as, replay, user):
    page = open_as(user, f"/admin/replay/replay/{replay.pk}/change/")
    page.violations = []
    page.on(
        "console",
        lambda m: page.violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    return page


def test_the_bar_follows_the_replay_to_its_end_and_links_the_result(open_as, openai_server):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    ada = UserFactory(username="ada", is_staff=True, is_superuser=True)
    replay = _planned(openai_server, ada)
    page = _page(open_as, replay, ada)
    expect(page.locator("#replay-calls")).to_contain_text("3")
    page.click("#replay-start")
    bar = page.locator("#replay-progress progress")
    expect(bar).to_have_attribute("value", "0")
    expect(page.locator("#replay-progress a")).to_have_attribute(
        "href", f"/admin/replay/replay/{replay.pk}/change/"
    )

    run_in_process(replay.pk)  # what the worker's loop does, while the page polls

    expect(page.locator("#replay-progress")).to_have_attribute(
        "data-status", "done", timeout=10_000
    )
    page.click("#replay-progress a")
    expect(
        page.locator("#replay-result [data-side=draft][data-count=contradictions]")
    ).to_contain_text("3")
    assert (
        page.locator("#replay-result [data-side=draft][data-count=contradictions] a").count() == 3
    )
    assert not page.errors and not page.violations


def test_cancel_from_the_page_stops_the_replay(open_as, openai_server):
    ada = UserFactory(username="ada", is_staff=True, is_superuser=True)
    replay = _planned(openai_server, ada)
    page = _page(open_as, replay, ada)
    page.click("#replay-start")
    expect(page.locator("#replay-progress")).to_have_attribute("data-status", "pending")
    page.click("#replay-cancel")
    expect(page.locator("#replay-progress")).to_have_attribute("data-status", "cancelled")
    assert Replay.objects.get(pk=replay.pk).status == Replay.Status.CANCELLED
    assert not openai_server.requests


@pytest.mark.parametrize(
    "viewport", [{"width": 1366, "height": 900}, {"width": 390, "height": 844}], ids=["1366", "390"]
)
def test_the_finished_replay_shows_its_draft_outcomes_and_drops_cancel_without_a_click(
    open_as, openai_server, viewport
):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    ada = UserFactory(username="ada", is_staff=True, is_superuser=True)
    replay = _planned(openai_server, ada)
    page = open_as(ada, f"/admin/replay/replay/{replay.pk}/change/", viewport=viewport)
    page.click("#replay-start")
    expect(page.locator("#replay-cancel")).to_be_visible()
    expect(page.locator("#replay-cases tbody tr").first.locator("td").nth(3)).to_have_text("—")

    run_in_process(replay.pk)  # the page polls meanwhile; nobody clicks

    expect(page.locator("#replay-progress")).to_have_attribute(
        "data-status", "done", timeout=10_000
    )
    expect(page.locator("#replay-cancel")).to_have_count(0)
    draft_column = page.locator("#replay-cases tbody tr td:nth-child(4)")
    expect(draft_column).to_have_text(["approved"] * 3)
    expect(page.locator("#replay-result")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    assert not page.errors


def test_the_result_gives_rates_and_what_each_lens_did(open_as, openai_server):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    ada = UserFactory(username="ada", is_staff=True, is_superuser=True)
    replay = _planned(openai_server, ada)
    replay_start(replay=replay, user=ada)
    run_in_process(replay.pk)
    page = open_as(ada, f"/admin/replay/replay/{replay.pk}/change/")
    result = page.locator("#replay-result")
    expect(result.locator("[data-side=draft][data-count=contradictions]")).to_contain_text(
        "3 of 3 (100 %)"
    )
    expect(result.locator("[data-side=current][data-count=escalated]")).to_have_text(
        "3 of 3 (100 %)"
    )
    # Every human decision was a reject: the stored accuracy pass was wrong each time,
    # the stored tone fail right; the new lens passed (wrong) on all three.
    lenses = page.locator("#replay-lenses")
    expect(lenses.locator("[data-lens=accuracy] [data-col=current]")).to_have_text("0 of 3 (0 %)")
    expect(lenses.locator("[data-lens=tone] [data-col=current]")).to_have_text("3 of 3 (100 %)")
    expect(lenses.locator("[data-lens=llm-fresh] [data-col=current]")).to_have_text("—")
    expect(lenses.locator("[data-lens=llm-fresh] [data-col=draft]")).to_have_text("0 of 3 (0 %)")
    assert not page.errors


def test_the_planned_page_says_before_the_start_when_fewer_proposals_exist_than_asked(
    open_as, openai_server
):
    ada = UserFactory(username="ada", is_staff=True, is_superuser=True)
    replay = _planned(openai_server, ada)  # asks for 100 by default, 3 exist
    page = open_as(ada, f"/admin/replay/replay/{replay.pk}/change/")
    expect(page.locator("#replay-short")).to_contain_text(
        "you asked for the last 100 human-decided proposals, but this panel has only 3: "
        "this replay runs on those 3."
    )
    expect(page.locator("#replay-start")).to_be_visible()  # said before anything runs


@pytest.mark.parametrize(
    "viewport", [{"width": 1366, "height": 900}, {"width": 390, "height": 844}], ids=["1366", "390"]
)
def test_the_form_offers_the_draft_panels_lenses_as_ticks(open_as, viewport):
    panel = split_panel()
    ada = UserFactory(username="ada", is_staff=True, is_superuser=True)
    page = open_as(ada, f"/admin/replay/replay/add/?panel={panel.pk}", viewport=viewport)
    LensFactory(name="spare")
    page.reload()
    ticks = page.locator("#replay-plan input[type=checkbox][name=members]")
    expect(ticks).to_have_count(3)
    expect(page.locator("#replay-plan select[name=members]")).to_have_count(0)
    # The panel's own lenses start ticked; the others not.
    expect(page.get_by_label("accuracy", exact=True)).to_be_checked()
    expect(page.get_by_label("tone", exact=True)).to_be_checked()
    expect(page.get_by_label("spare", exact=True)).not_to_be_checked()
