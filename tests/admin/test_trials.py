"""Trying a lens (or checker) on a pasted sample: Celery task, htmx-polled result."""

import json
import re
import shlex
from datetime import timedelta
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone

from reviewapp.audit.models import Trial
from reviewapp.audit.trials import TrialFailed, lens_trial, trial_run
from reviewapp.review.models import ApiClient, Judgement, Lens, Proposal
from reviewapp.review.services.clients import api_client_create
from reviewapp.webhooks.services import endpoint_create
from tests.conftest import wait_for
from tests.core.openai_stub import Answer, Slow
from tests.factories import CheckerFactory, LensFactory, recorded
from tests.review.helpers import judgement

SAMPLE = "Refunds take 5 days 🚚. Delivery is free."


def _grounded(claims):
    return {c["cite"]: c.get("anchor", {}).get("kind", "unresolved") for c in claims}


@pytest.mark.django_db
def test_a_recorded_lens_runs_on_a_sample_and_grounds_its_cites():
    lens = LensFactory(name="accuracy")
    recorded(
        lens,
        SAMPLE,
        judgement("fail", "Refunds take 5 days 🚚", "free shipping forever", rationale="Slow."),
        judgement("fail", "Refunds take 5 days 🚚", "free shipping forever", rationale="Slow."),
        judgement("fail", "Refunds take 5 days 🚚", "free shipping forever", rationale="Slow."),
    )
    result = lens_trial(lens=lens, content=SAMPLE, grounding_policy="repair")
    assert result["verdict"] == "fail" and result["rationale"] == "Slow."
    assert result["lens_version"] == 1
    assert _grounded(result["claims"]) == {
        "Refunds take 5 days 🚚": "answer_body",
        "free shipping forever": "unresolved",
    }
    anchored = result["claims"][0]["anchor"]
    assert (anchored["start_utf16"], anchored["end_utf16"]) == (0, 22)  # 🚚 is two units
    assert not Proposal.objects.exists() and not Judgement.objects.exists()


@pytest.mark.django_db
def test_a_constraints_lens_runs_on_a_sample():
    lens = LensFactory(backend=Lens.Backend.CONSTRAINTS, mandate='must contain "refund"; be warm')
    result = lens_trial(lens=lens, content="No money back.")
    assert result["verdict"] == "fail"
    assert "Unenforced" in result["rationale"] and "be warm" in result["rationale"]


@pytest.mark.django_db
def test_an_external_lens_has_nothing_to_try():
    lens = LensFactory(backend=Lens.Backend.EXTERNAL)
    with pytest.raises(TrialFailed, match="over the API"):
        lens_trial(lens=lens, content="x")


@pytest.mark.django_db
def test_trying_an_external_lens_names_the_clients_that_answer_and_shows_their_call(
    admin_client_ada,
):
    hooked, _ = api_client_create(name="team-a", scopes=["judge"])
    endpoint_create(client=hooked, url="http://127.0.0.1:9/hook", events=["judgement.requested"])
    polling, _ = api_client_create(name="team-b", scopes=["judge", "read"])
    lens = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    lens.judge_clients.add(hooked, polling)

    response = admin_client_ada.get(reverse("admin:review_lens_try", args=[lens.pk]))

    html = response.content.decode()
    assert "nothing here to run" not in html and 'name="sample"' not in html
    assert re.search(r'data-judge="team-a">.*judgement\.requested</code> webhook', html)
    assert re.search(r'data-judge="team-b">.*GET /api/proposals', html)
    call = unescape(re.search(r'id="judgement-call">(.*?)</pre>', html, re.S).group(1))
    assert call.startswith('curl -X POST "http://testserver/api/proposals/$PROPOSAL_ID/judgements"')
    assert "Authorization: Bearer $REVIEWAPP_TOKEN" in call
    body = json.loads(shlex.split(call)[-1])
    assert body["lens"] == "outside" and body["verdict"] == "pass"
    assert body["claims"] == [
        {"cite": "a passage quoted verbatim from the proposal", "assessment": "verified"}
    ]


@pytest.mark.django_db
def test_trying_an_external_lens_says_when_no_client_can_answer(admin_client_ada):
    lens = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    lens.judge_clients.add(api_client_create(name="gone", scopes=["judge"])[0])
    ApiClient.objects.filter(name="gone").update(revoked_at=timezone.now())
    bare = LensFactory(name="nobody", backend=Lens.Backend.EXTERNAL)

    revoked = admin_client_ada.get(reverse("admin:review_lens_try", args=[lens.pk]))
    unbound = admin_client_ada.get(reverse("admin:review_lens_try", args=[bare.pk]))

    assert "revoked: its token no longer authenticates" in revoked.content.decode()
    assert "No API client answers for this lens" in unbound.content.decode()


@pytest.mark.django_db
def test_posting_a_sample_to_an_external_lens_starts_no_trial(admin_client_ada):
    lens = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)

    response = admin_client_ada.post(
        reverse("admin:review_lens_try", args=[lens.pk]), {"sample": "x"}
    )

    assert response.status_code == 200
    assert not Trial.objects.exists()


@pytest.mark.django_db
def test_the_try_page_starts_a_trial_and_the_fragment_polls_until_it_is_done(
    admin_client_ada, django_capture_on_commit_callbacks
):
    lens = LensFactory(name="accuracy")
    recorded(lens, SAMPLE, judgement("pass", "Delivery is free."))
    url = reverse("admin:review_lens_try", args=[lens.pk])
    assert admin_client_ada.get(url).status_code == 200
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = admin_client_ada.post(url, {"sample": SAMPLE, "grounding_policy": "reject"})
    assert len(callbacks) == 1  # the task is enqueued only once the trial row is committed
    trial = Trial.objects.get()
    assert response["Location"] == reverse("admin:audit_trial_result", args=[trial.pk])
    assert trial.status == "pending" and trial.created_by.username == "ada"

    status_url = reverse("admin:audit_trial_status", args=[trial.pk])
    pending = admin_client_ada.get(status_url, HTTP_HX_REQUEST="true").content.decode()
    assert f'hx-get="{status_url}"' in pending and 'hx-trigger="load delay:1s"' in pending
    page = admin_client_ada.get(response["Location"]).content.decode()
    assert "vendor/htmx.min.js" in page and f'hx-get="{status_url}"' in page

    trial_run(trial.pk)
    done = admin_client_ada.get(status_url, HTTP_HX_REQUEST="true").content.decode()
    assert "hx-get" not in done  # polling stops
    assert 'data-verdict="pass"' in done
    assert 'data-anchor="answer_body"' in done and "<mark>Delivery is free.</mark>" in done
    trial.refresh_from_db()
    assert trial.status == "done" and trial.target_version == 1


@pytest.mark.django_db
def test_a_failing_lens_reports_why(admin_client_ada):
    lens = LensFactory(name="accuracy")  # recorded, with nothing recorded for this sample
    trial = Trial.objects.create(kind="lens", target_id=lens.pk, target_name=lens.name, sample="x")
    trial_run(trial.pk)
    trial.refresh_from_db()
    assert trial.status == "failed" and "no recorded response" in trial.error
    fragment = admin_client_ada.get(
        reverse("admin:audit_trial_status", args=[trial.pk])
    ).content.decode()
    assert "No verdict" in fragment and "no recorded response" in fragment
    # Running it again changes nothing: a re-delivered task is a no-op.
    trial_run(trial.pk)
    assert Trial.objects.get(pk=trial.pk).error == trial.error


@pytest.mark.django_db
def test_a_checker_runs_on_a_sample_through_the_admin(
    admin_client_ada, django_capture_on_commit_callbacks
):
    checker = CheckerFactory(name="gate", kind="regex", settings={"pattern": "refund"})
    url = reverse("admin:review_checkerconfig_try", args=[checker.pk])
    with django_capture_on_commit_callbacks(execute=False):
        admin_client_ada.post(url, {"sample": "no money back"})
    trial = Trial.objects.get(kind="checker")
    trial_run(trial.pk)
    fragment = admin_client_ada.get(
        reverse("admin:audit_trial_status", args=[trial.pk])
    ).content.decode()
    assert 'data-verdict="fail"' in fragment and "does not match /refund/" in fragment


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_try_this_lens_through_a_real_worker(worker, client, openai_server):
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="ada", is_staff=True, is_superuser=True))
    openai_server.script(
        [
            Answer(
                json.dumps(
                    {
                        "verdict": "pass",
                        "rationale": "Grounded.",
                        "claims": [{"cite": "Delivery is free.", "assessment": "verified"}],
                    }
                )
            )
        ]
    )
    lens = LensFactory(
        name="llm-accuracy",
        backend=Lens.Backend.LLM,
        base_url=openai_server.base_url,
        model="m",
        timeout_seconds=10,
    )
    response = client.post(
        reverse("admin:review_lens_try", args=[lens.pk]),
        {"sample": SAMPLE, "grounding_policy": "reject"},
    )
    trial = Trial.objects.get()
    status_url = reverse("admin:audit_trial_status", args=[trial.pk])
    assert response["Location"] == reverse("admin:audit_trial_result", args=[trial.pk])

    def finished():
        html = client.get(status_url, HTTP_HX_REQUEST="true").content.decode()
        return html if "hx-get" not in html else None

    html = wait_for(finished, timeout=60, message=worker.log())
    assert 'data-verdict="pass"' in html, html
    assert "<mark>Delivery is free.</mark>" in html
    trial.refresh_from_db()
    assert trial.status == "done" and trial.result["claims"][0]["anchor"]["kind"] == "answer_body"
    assert openai_server.requests, "the lens never called the model"


def _running_trial(lens, *, started_seconds_ago: float) -> Trial:
    return Trial.objects.create(
        kind="lens",
        target_id=lens.pk,
        target_name=lens.name,
        sample="No money back.",
        status=Trial.Status.RUNNING,
        started_at=timezone.now() - timedelta(seconds=started_seconds_ago),
    )


@pytest.mark.django_db
def test_a_trial_running_past_the_task_time_limit_is_shown_as_lost(admin_client_ada, settings):
    lens = LensFactory(backend=Lens.Backend.CONSTRAINTS, mandate='must contain "refund"')
    trial = _running_trial(lens, started_seconds_ago=settings.CELERY_TASK_TIME_LIMIT + 1)
    fragment = admin_client_ada.get(
        reverse("admin:audit_trial_status", args=[trial.pk]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "hx-get" not in fragment  # polling stops
    assert "stopped before it finished" in fragment
    assert reverse("admin:review_lens_try", args=[lens.pk]) in fragment


@pytest.mark.django_db
def test_a_lost_trial_runs_when_its_task_is_delivered_again(settings):
    lens = LensFactory(backend=Lens.Backend.CONSTRAINTS, mandate='must contain "refund"')
    trial = _running_trial(lens, started_seconds_ago=settings.CELERY_TASK_TIME_LIMIT + 1)
    trial_run(trial.pk)
    trial.refresh_from_db()
    assert trial.status == "done" and trial.result["verdict"] == "fail"


@pytest.mark.django_db
def test_a_trial_still_running_within_the_time_limit_is_left_to_its_worker(admin_client_ada):
    lens = LensFactory(backend=Lens.Backend.CONSTRAINTS, mandate='must contain "refund"')
    trial = _running_trial(lens, started_seconds_ago=5)
    trial_run(trial.pk)
    trial.refresh_from_db()
    assert trial.status == "running" and trial.result is None
    fragment = admin_client_ada.get(
        reverse("admin:audit_trial_status", args=[trial.pk]), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Running…" in fragment and "hx-get" in fragment


def _llm_lens(server, **fields):
    return LensFactory(
        name="llm-accuracy",
        backend=Lens.Backend.LLM,
        base_url=server.base_url,
        model="m",
        timeout_seconds=10,
        **fields,
    )


def _try(client, lens):
    client.post(
        reverse("admin:review_lens_try", args=[lens.pk]),
        {"sample": SAMPLE, "grounding_policy": "reject"},
    )
    return Trial.objects.get(target_id=lens.pk)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_trial_of_an_llm_lens_runs_on_the_loop_leaving_the_worker_slot_free(
    start_worker, client, openai_server
):
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="ada", is_staff=True, is_superuser=True))
    openai_server.respond = lambda request: Slow(6.0, judgement("pass", "Delivery is free."))
    lens = _llm_lens(openai_server, max_concurrent_calls=1)
    other = LensFactory(backend=Lens.Backend.CONSTRAINTS, mandate='must contain "refund"')
    worker = start_worker(concurrency=1)  # one pool slot: a trial waiting in it would hold it
    trial = _try(client, lens)
    wait_for(lambda: openai_server.requests, message=worker.log())
    # While the model takes its time, the one slot runs the next trial.
    second = _try(client, other)
    wait_for(
        lambda: Trial.objects.filter(pk=second.pk, status="done").exists(),
        timeout=4,
        message=worker.log(),
    )
    assert Trial.objects.get(pk=trial.pk).status == "running"
    done = wait_for(
        lambda: Trial.objects.filter(pk=trial.pk, status__in=["done", "failed"]).first(),
        timeout=60,
        message=worker.log(),
    )
    assert done.status == "done", done.error
    assert done.result["verdict"] == "pass" and done.target_version == lens.version
    assert done.result["claims"][0]["anchor"]["kind"] == "answer_body"
    assert len(openai_server.requests) == 1


@pytest.mark.django_db
def test_running_an_llm_lens_trial_hands_it_to_the_loop_without_calling_the_model(
    monkeypatch, openai_server
):
    openai_server.respond = lambda request: Answer(judgement("pass", "Delivery is free."))
    lens = _llm_lens(openai_server)
    trial = Trial.objects.create(kind="lens", target_id=lens.pk, target_name=lens.name, sample="x")
    started = []

    class Loop:
        def start(self, work):
            started.append(work)

    monkeypatch.setattr("reviewapp.audit.trials.runtime", Loop)
    monkeypatch.setattr(
        "reviewapp.audit.trials.llm_trial_run", lambda trial_id: trial_id
    )
    trial_run(trial.pk)  # what run_trial does in a worker slot
    trial.refresh_from_db()
    assert trial.status == "pending" and not openai_server.requests
    assert started == [trial.pk]  # llm_trial_run(trial.pk), on the loop
