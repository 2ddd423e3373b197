"""Lenses through the admin: versioning, backend fields, API keys by variable name."""

import time

import pytest

from reviewapp.audit.models import AuditEntry
from reviewapp.core.endpoint_control import Outcome
from reviewapp.review.evaluation.endpoint_limits import DatabaseLimits, endpoint_key
from reviewapp.review.models import Judgement, Lens
from tests.factories import LensFactory, PanelFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, submit

from .helpers import add_url, change_url, errors_of

pytestmark = pytest.mark.django_db


def lens_data(**overrides) -> dict:
    data = {
        "name": "accuracy",
        "description": "",
        "instructions": "Is it correct?",
        "backend": "recorded",
        "active": "on",
        "base_url": "",
        "model": "",
        "api_key_env": "",
        "temperature": "0.0",
        "timeout_seconds": "60",
        "response_format": "json_schema",
        "max_concurrent_calls": "64",
        "calls_per_minute": "6000",
        "deadline_seconds": "240",
        "mandate": "",
        "_save": "Save",
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def test_a_lens_is_created_and_every_saved_change_bumps_its_version(admin_client_ada):
    response = admin_client_ada.post(add_url("lens"), lens_data())
    assert response.status_code == 302, errors_of(response)
    lens = Lens.objects.get(name="accuracy")
    assert lens.version == 1
    url = change_url("lens", lens.pk)

    assert admin_client_ada.post(url, lens_data()).status_code == 302
    lens.refresh_from_db()
    assert lens.version == 1  # nothing changed

    assert admin_client_ada.post(url, lens_data(instructions="Sharper.")).status_code == 302
    lens.refresh_from_db()
    assert lens.version == 2

    assert (
        admin_client_ada.post(url, lens_data(instructions="Sharper.", active=None)).status_code
        == 302
    )
    lens.refresh_from_db()
    assert lens.version == 3 and not lens.active


def test_old_judgements_keep_the_version_they_were_made_with(admin_client_ada):
    lens = LensFactory(name="accuracy", instructions="Is it correct?")
    content = "Two and two make four."
    recorded(lens, content, judgement("pass", "two make four"))
    evaluate_in_process(submit(PanelFactory(lenses=[lens], need=1), content))
    response = admin_client_ada.post(
        change_url("lens", lens.pk), lens_data(instructions="Is it exactly correct?")
    )
    assert response.status_code == 302, errors_of(response)
    lens.refresh_from_db()
    assert lens.version == 2
    assert Judgement.objects.get().lens_version == 1


def test_the_form_says_whether_the_key_variable_is_set_never_its_value(
    admin_client_ada, monkeypatch
):
    monkeypatch.setenv("LLM_API_KEY_TEST", "sk-very-secret-value")
    monkeypatch.delenv("LLM_API_KEY_ABSENT", raising=False)
    set_lens = LensFactory(
        name="with-key",
        backend="llm",
        base_url="http://127.0.0.1:9/v1",
        model="m",
        api_key_env="LLM_API_KEY_TEST",
    )
    unset_lens = LensFactory(
        name="without-key",
        backend="llm",
        base_url="http://127.0.0.1:9/v1",
        model="m",
        api_key_env="LLM_API_KEY_ABSENT",
    )
    page = admin_client_ada.get(change_url("lens", set_lens.pk)).content.decode()
    assert "LLM_API_KEY_TEST is set on the server." in page
    assert "sk-very-secret-value" not in page
    page = admin_client_ada.get(change_url("lens", unset_lens.pk)).content.decode()
    assert "LLM_API_KEY_ABSENT is NOT set on the server" in page
    listing = admin_client_ada.get("/admin/review/lens/").content.decode()
    assert "sk-very-secret-value" not in listing


def test_a_key_pasted_instead_of_a_variable_name_is_refused(admin_client_ada):
    response = admin_client_ada.post(
        add_url("lens"),
        lens_data(
            backend="llm",
            base_url="http://127.0.0.1:9/v1",
            model="m",
            api_key_env="sk-abc123-not-a-name",
        ),
    )
    assert response.status_code == 200
    assert "never the key itself" in errors_of(response)
    assert not Lens.objects.exists()


def test_a_base_url_carrying_credentials_is_refused_saying_where_the_key_goes(admin_client_ada):
    response = admin_client_ada.post(
        add_url("lens"),
        lens_data(
            backend="llm",
            base_url="http://svc:topsecret@127.0.0.1:9/v1",
            model="m",
            api_key_env="LLM_API_KEY",
        ),
    )
    assert response.status_code == 200
    assert "must not carry credentials" in errors_of(response)
    assert "API key variable" in errors_of(response)
    assert not Lens.objects.exists()


def test_a_variable_holding_the_servers_own_secrets_is_refused(admin_client_ada, monkeypatch):
    monkeypatch.setenv("REVIEWAPP_SIGNING_KEY", "seed")
    response = admin_client_ada.post(
        add_url("lens"),
        lens_data(
            backend="llm",
            base_url="http://127.0.0.1:9/v1",
            model="m",
            api_key_env="REVIEWAPP_SIGNING_KEY",
        ),
    )
    assert response.status_code == 200
    assert "REVIEWAPP_SIGNING_KEY is not a variable lenses may read" in errors_of(response)
    assert "REVIEWAPP_LLM_KEY_ENV_ALLOW" in errors_of(response)
    assert not Lens.objects.exists()


def test_the_status_of_a_refused_variable_never_says_whether_it_is_set(
    admin_client_ada, monkeypatch
):
    monkeypatch.setenv("SECRET_KEY", "x")
    lens = LensFactory(
        backend="llm", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="SECRET_KEY"
    )
    page = admin_client_ada.get(change_url("lens", lens.pk)).content.decode()
    assert "Refused: SECRET_KEY is not a variable lenses may read" in page
    assert "SECRET_KEY is set on the server" not in page


def test_backend_rules_are_form_errors(admin_client_ada):
    response = admin_client_ada.post(add_url("lens"), lens_data(backend="llm"))
    text = errors_of(response)
    assert "base URL" in text and "model name" in text
    response = admin_client_ada.post(
        add_url("lens"), lens_data(backend="constraints", mandate="be kind")
    )
    assert "none of these constraints can be checked" in errors_of(response)
    assert not Lens.objects.exists()


def test_backend_specific_fieldsets_are_marked_for_the_toggle_script(admin_client_ada):
    page = admin_client_ada.get(add_url("lens")).content.decode()
    assert "show-if-backend-llm" in page
    assert "show-if-backend-constraints" in page
    assert "admin_ext/backend_fields.js" in page


def test_deactivating_through_the_action_bumps_the_version_and_is_audited(admin_client_ada):
    lens = LensFactory(name="accuracy")
    response = admin_client_ada.post(
        "/admin/review/lens/", {"action": "deactivate", "_selected_action": [lens.pk]}
    )
    assert response.status_code == 302
    lens.refresh_from_db()
    assert not lens.active and lens.version == 2
    entry = AuditEntry.objects.get(target_type="lens", action="update")
    assert entry.changes["active"] == {"old": True, "new": False}
    assert entry.changes["version"] == {"old": 1, "new": 2}


def test_an_llm_lens_takes_its_endpoint_limits_from_the_admin_without_a_new_version(
    admin_client_ada,
):
    llm = {"backend": "llm", "base_url": "http://127.0.0.1:11434/v1", "model": "m"}
    assert admin_client_ada.post(add_url("lens"), lens_data(**llm)).status_code == 302
    lens = Lens.objects.get(name="accuracy")
    assert (lens.max_concurrent_calls, lens.calls_per_minute) == (64, 6000)
    limited = lens_data(**llm, max_concurrent_calls="8", calls_per_minute="120")
    assert admin_client_ada.post(change_url("lens", lens.pk), limited).status_code == 302
    lens.refresh_from_db()
    assert (lens.max_concurrent_calls, lens.calls_per_minute, lens.version) == (8, 120, 1)


def test_an_llm_lens_allowing_no_call_at_all_is_refused(admin_client_ada):
    llm = {"backend": "llm", "base_url": "http://127.0.0.1:11434/v1", "model": "m"}
    response = admin_client_ada.post(add_url("lens"), lens_data(**llm, max_concurrent_calls="0"))
    assert response.status_code == 200
    assert "Allow at least one call at a time." in errors_of(response)


def test_an_llm_lens_takes_its_deadline_from_the_admin(admin_client_ada):
    llm = {"backend": "llm", "base_url": "http://127.0.0.1:11434/v1", "model": "m"}
    response = admin_client_ada.post(add_url("lens"), lens_data(**llm, deadline_seconds="90"))
    assert response.status_code == 302, errors_of(response)
    assert Lens.objects.get(name="accuracy").deadline_seconds == 90


def test_an_llm_lens_with_no_time_at_all_is_refused(admin_client_ada):
    llm = {"backend": "llm", "base_url": "http://127.0.0.1:11434/v1", "model": "m"}
    response = admin_client_ada.post(add_url("lens"), lens_data(**llm, deadline_seconds="0"))
    assert "Allow the lens at least a second." in errors_of(response)


def test_the_deadline_field_says_what_its_default_is(admin_client_ada):
    page = admin_client_ada.get(add_url("lens")).content.decode()
    assert "The default, 240 s, is the worker's task time limit" in page


def _throttle(lens, *, refusals, waiting):
    """The provider refuses `refusals` calls of ours, as the LLM loop reports them."""
    limits = DatabaseLimits()
    endpoint = endpoint_key(lens.base_url)
    options = {"max_concurrent": lens.max_concurrent_calls, "per_minute": 10_000}
    held, _ = limits.try_acquire(
        endpoint, count=lens.max_concurrent_calls, lease_seconds=60, **options
    )
    sent = time.time() - 0.1
    limits.try_acquire(
        endpoint,
        count=0,
        lease_seconds=60,
        release=held[:refusals],
        outcomes=[Outcome(refused=True, sent_at=sent, retry_after=30)] * refusals,
        waiting=waiting,
        base_url=lens.base_url,
        **options,
    )


def test_the_lens_page_says_when_its_provider_is_throttling(admin_client_ada, settings):
    settings.CACHE_URL = settings.CELERY_BROKER_URL = "memory://"  # the database store
    lens = LensFactory(
        backend=Lens.Backend.LLM,
        base_url="http://127.0.0.1:9/v1",
        model="m",
        max_concurrent_calls=10,
    )
    _throttle(lens, refusals=2, waiting=5)
    page = admin_client_ada.get(change_url("lens", lens.pk)).content.decode()
    assert "The provider is throttling: effective limit 7 of 10 calls at once" in page
    assert "5 waiting, 2 answered 429 in the last 5 minutes" in page
    assert "holds every call for" in page


def test_the_lens_page_of_a_quiet_provider_shows_its_full_limit(admin_client_ada, settings):
    settings.CACHE_URL = settings.CELERY_BROKER_URL = "memory://"
    lens = LensFactory(
        backend=Lens.Backend.LLM,
        base_url="http://127.0.0.1:9/v1",
        model="m",
        max_concurrent_calls=10,
    )
    page = admin_client_ada.get(change_url("lens", lens.pk)).content.decode()
    assert "Effective limit 10 of 10 calls at once (0 in flight now), 0 waiting" in page
    assert "throttling" not in page
