"""The replay admin: plan, calls shown before start, progress polling, cancel, who may see what."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from reviewapp.replay.models import RegressionCase, Replay
from reviewapp.replay.services import replay_cancel, replay_plan
from tests.factories import ReviewerFactory, UserFactory
from tests.replay.builders import human_decided, split_panel

pytestmark = pytest.mark.django_db


def _staff(username, *perms):
    user = UserFactory(username=username, is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="replay", codename__in=perms)
    )
    return user


@pytest.fixture
def panel():
    made = split_panel()
    for n in range(3):
        human_decided(made, n, "approved")
    return made


def _urls(replay):
    return {
        "detail": reverse("admin:replay_replay_change", args=[replay.pk]),
        "progress": reverse("admin:replay_replay_progress", args=[replay.pk]),
        "start": reverse("admin:replay_replay_start", args=[replay.pk]),
        "cancel": reverse("admin:replay_replay_cancel", args=[replay.pk]),
    }


def test_planning_shows_the_calls_before_anything_runs(client, panel):
    client.force_login(_staff("pia", "add_replay"))
    accuracy, _tone = panel.ordered_lenses()
    response = client.post(
        reverse("admin:replay_replay_add"),
        {
            "panel": panel.pk,
            "lens": accuracy.pk,
            "instructions": "Stricter.",
            "source": "recent",
            "size": 2,
        },
    )
    replay = Replay.objects.get()
    assert response["Location"] == _urls(replay)["detail"]
    page = client.get(response["Location"]).content.decode()
    assert 'id="replay-calls"' in page and 'id="replay-start"' in page
    assert replay.status == Replay.Status.PLANNED and replay.cases.count() == 2


def test_a_refused_draft_is_a_400_naming_why_and_writes_nothing(client, panel):
    client.force_login(_staff("pia", "add_replay"))
    response = client.post(
        reverse("admin:replay_replay_add"),
        {"panel": panel.pk, "need": 1, "source": "recent", "size": 5},
    )
    assert response.status_code == 400
    assert "not a majority" in response.content.decode()
    assert not Replay.objects.exists()


@pytest.mark.parametrize(
    ("base_url", "says"),
    [
        ("http://169.254.169.254/v1", "link-local"),
        ("http://user:pw@10.0.0.5/v1", "must not carry credentials"),
    ],
)
def test_a_drafted_endpoint_the_lens_may_not_call_is_refused(client, panel, base_url, says):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    accuracy, _tone = panel.ordered_lenses()
    response = client.post(
        reverse("admin:replay_replay_add"),
        {
            "panel": panel.pk,
            "lens": accuracy.pk,
            "base_url": base_url,
            "source": "recent",
            "size": 2,
        },
    )
    assert response.status_code in (200, 400)
    assert says in response.content.decode()
    assert not Replay.objects.exists()


def test_starting_enqueues_once_and_the_progress_fragment_polls_with_a_real_link(
    client, panel, django_capture_on_commit_callbacks
):
    owner = _staff("pia", "add_replay")
    client.force_login(owner)
    replay = replay_plan(panel=panel, user=owner)
    urls = _urls(replay)
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        client.post(urls["start"])
        client.post(urls["start"])
    assert len(enqueued) == 1
    fragment = client.get(urls["progress"], HTTP_HX_REQUEST="true").content.decode()
    assert f'hx-get="{urls["progress"]}"' in fragment
    assert f'href="{urls["detail"]}"' in fragment and 'max="3" value="0"' in fragment


def test_cancel_ends_a_replay_and_the_fragment_stops_polling(client, panel):
    owner = _staff("pia", "add_replay")
    client.force_login(owner)
    replay = replay_plan(panel=panel, user=owner)
    urls = _urls(replay)
    client.post(urls["cancel"])
    replay.refresh_from_db()
    assert replay.status == Replay.Status.CANCELLED
    fragment = client.get(urls["progress"]).content.decode()
    assert "hx-get" not in fragment and 'data-status="cancelled"' in fragment


def test_staff_without_replay_permissions_are_refused_everything(client, panel):
    replay = replay_plan(panel=panel)
    client.force_login(_staff("nils"))
    assert client.get(reverse("admin:replay_replay_add")).status_code == 403
    for name, url in _urls(replay).items():
        method = client.post if name in ("start", "cancel") else client.get
        assert method(url).status_code == 403, name
    assert Replay.objects.get(pk=replay.pk).status == Replay.Status.PLANNED


def test_a_planner_sees_and_cancels_only_their_own_replays(client, panel):
    mine, theirs = _staff("pia", "add_replay"), _staff("quinn", "add_replay")
    their_replay = replay_plan(panel=panel, user=theirs)
    my_replay = replay_plan(panel=panel, user=mine)
    client.force_login(mine)
    for name, url in _urls(their_replay).items():
        method = client.post if name in ("start", "cancel") else client.get
        assert method(url).status_code == 403, name
    assert client.get(_urls(my_replay)["detail"]).status_code == 200
    listing = client.get(reverse("admin:replay_replay_changelist")).content.decode()
    assert f"/admin/replay/replay/{my_replay.pk}/change/" in listing
    assert f"/admin/replay/replay/{their_replay.pk}/change/" not in listing
    assert Replay.objects.get(pk=their_replay.pk).status == Replay.Status.PLANNED


def test_viewing_every_replay_does_not_allow_cancelling_one(client, panel):
    replay = replay_plan(panel=panel, user=_staff("quinn", "add_replay"))
    client.force_login(_staff("vera", "view_replay"))
    urls = _urls(replay)
    assert client.get(urls["detail"]).status_code == 200
    assert client.post(urls["cancel"]).status_code == 403


def test_add_to_regression_set_from_a_replays_proposal_list(client, panel):
    user = _staff("pia", "add_replay", "add_regressioncase")
    client.force_login(user)
    replay = replay_plan(panel=panel, user=user)
    proposal_id = replay.cases.first().proposal_id
    detail = _urls(replay)["detail"]
    url = reverse("admin:replay_regressioncase_add_proposal", args=[proposal_id])
    assert f'action="{url}"' in client.get(detail).content.decode()
    response = client.post(url, {"next": detail})
    assert response["Location"] == detail
    assert RegressionCase.objects.get().proposal_id == proposal_id


def test_adding_to_the_regression_set_needs_its_permission(client, panel):
    client.force_login(_staff("pia", "add_replay"))
    proposal = panel.proposals.first()
    url = reverse("admin:replay_regressioncase_add_proposal", args=[proposal.pk])
    assert client.post(url).status_code == 403
    assert not RegressionCase.objects.exists()


def test_a_decided_proposals_page_offers_add_to_regression_set_to_who_may(client, panel):
    proposal = panel.proposals.first()
    page = reverse("proposal_detail", args=[proposal.pk])
    button = reverse("admin:replay_regressioncase_add_proposal", args=[proposal.pk])
    keeper = _staff("kim", "add_regressioncase")
    keeper.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    client.force_login(keeper)
    assert f'action="{button}"' in client.get(page).content.decode()
    assert client.post(button, {"next": page})["Location"] == page
    assert RegressionCase.objects.filter(proposal=proposal).exists()

    client.force_login(ReviewerFactory(username="rob"))
    assert f'action="{button}"' not in client.get(page).content.decode()


def test_the_lens_and_panel_pages_link_to_a_replay_of_a_change(admin_client, panel):
    accuracy, _tone = panel.ordered_lenses()
    plan = reverse("admin:replay_replay_add")
    lens_page = admin_client.get(reverse("admin:review_lens_change", args=[accuracy.pk]))
    panel_page = admin_client.get(reverse("admin:review_panel_change", args=[panel.pk]))
    assert f"{plan}?lens={accuracy.pk}&amp;panel={panel.pk}" in lens_page.content.decode()
    assert f"{plan}?panel={panel.pk}" in panel_page.content.decode()
    form = admin_client.get(f"{plan}?lens={accuracy.pk}&panel={panel.pk}").content.decode()
    assert f'<option value="{panel.pk}" selected>' in form


def test_two_replays_compare_side_by_side(client, panel):
    owner = _staff("pia", "add_replay")
    client.force_login(owner)
    accuracy, tone = panel.ordered_lenses()
    first = replay_plan(panel=panel, user=owner)
    second = replay_plan(panel=panel, user=owner, lens_changes={tone.pk: {"instructions": "Kind."}})
    for replay in (first, second):
        replay_cancel(replay=replay)  # a result over what finished: nothing, here
    response = client.post(
        reverse("admin:replay_replay_changelist"),
        {"action": "compare", "_selected_action": [first.pk, second.pk]},
    )
    page = response.content.decode()
    assert f'data-replay="{first.pk}"' in page and f'data-replay="{second.pk}"' in page
    assert "tone: instructions" in page
