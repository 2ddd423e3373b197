"""The replay page in headless Chromium: calls shown, start, the bar polls to the end, cancel."""

import pytest
from playwright.sync_api import expect

from reviewapp.replay.models import Replay
from reviewapp.replay.services import replay_plan
from tests.core.openai_stub import Answer
from tests.factories import UserFactory
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
