"""The `llm` backend against a real OpenAI-compatible server on loopback, through the
production path: the proposal's task hands its LLM lens to the process's LLM loop."""

import pytest
from django.test import Client

from reviewapp.review.models import Claim, Lens, LensFailure
from reviewapp.review.services.clients import api_client_create
from tests.core.openai_stub import Answer, HttpError
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import evaluate_in_process, judgement, submit

# The loop's threads read and write on connections of their own.
pytestmark = pytest.mark.django_db(transaction=True)

CONTENT = "Paris is the capital of France. It has 2.1 million inhabitants."


@pytest.fixture
def llm_panel(openai_server, settings, llm_loop):
    settings.REVIEWAPP_LLM_TRANSPORT_ATTEMPTS = 3
    lens = LensFactory(
        backend=Lens.Backend.LLM,
        base_url=openai_server.base_url,
        model="judge-1",
        api_key_env="LLM_API_KEY_TEST",
        timeout_seconds=2,
    )
    return PanelFactory(lenses=[lens], need=1)


def test_an_llm_lens_judges_through_the_chat_completions_protocol(
    llm_panel, openai_server, monkeypatch
):
    monkeypatch.setenv("LLM_API_KEY_TEST", "sk-loopback")
    openai_server.script([Answer(judgement("pass", "Paris is the capital of France."))])
    proposal = evaluate_in_process(submit(llm_panel, CONTENT))
    assert proposal.decision.outcome == "approved"
    request = openai_server.requests[0]
    assert request.body["model"] == "judge-1"
    assert request.body["response_format"]["type"] == "json_schema"
    assert request.authorization == "Bearer sk-loopback"
    assert CONTENT in request.body["messages"][-1]["content"]


def test_a_server_error_is_retried_on_the_loop_and_the_lens_answers(llm_panel, openai_server):
    # The retry waits out its backoff (at most a second here) on the loop, not in a worker.
    openai_server.script([HttpError(503), Answer(judgement("pass"))])
    proposal = evaluate_in_process(submit(llm_panel, CONTENT))
    assert len(openai_server.requests) == 2
    assert not LensFailure.objects.filter(proposal=proposal).exists()
    assert proposal.judgements.get().attempts == 2
    assert proposal.decision.outcome == "approved"


def test_an_unresolvable_cite_is_sent_back_for_requoting(llm_panel, openai_server):
    openai_server.script(
        [
            Answer(judgement("pass", "Paris is the capital of Germany.")),
            Answer(judgement("pass", "Paris is the capital of France.")),
        ]
    )
    proposal = evaluate_in_process(submit(llm_panel, CONTENT))
    requote = openai_server.requests[1].body["messages"][-1]["content"]
    assert "Paris is the capital of Germany." in requote
    judged = proposal.judgements.get()
    assert judged.requote_rounds == 1
    assert [c.text for c in judged.claims.all()] == ["Paris is the capital of France."]


def test_cites_still_unresolved_after_the_requote_budget_are_dropped_and_recorded(
    llm_panel, openai_server
):
    fabricated = judgement("pass", "Paris has 9 million inhabitants.")
    openai_server.script([Answer(fabricated)] * 3)
    proposal = evaluate_in_process(submit(llm_panel, CONTENT))
    judged = proposal.judgements.get()
    assert judged.requote_rounds == 2
    dropped = Claim.objects.get(judgement=judged)
    assert dropped.dropped and dropped.anchor_kind == "unresolved"
    assert dropped.cite == "Paris has 9 million inhabitants."


def test_requoting_does_not_spend_the_transport_budget(llm_panel, openai_server, settings):
    settings.REVIEWAPP_LLM_TRANSPORT_ATTEMPTS = 1
    fabricated = judgement("pass", "Paris has 9 million inhabitants.")
    openai_server.script([Answer(fabricated)] * 3)
    proposal = evaluate_in_process(submit(llm_panel, CONTENT))
    assert proposal.judgements.get().requote_rounds == 2
    assert not LensFailure.objects.filter(proposal=proposal).exists()


@pytest.mark.parametrize("name", ["SECRET_KEY", "REVIEWAPP_SIGNING_KEY", "DATABASE_URL", "HOME"])
def test_a_variable_the_allowlist_does_not_admit_is_never_read_nor_sent(
    llm_panel, openai_server, monkeypatch, name
):
    monkeypatch.setenv(name, "the-servers-own-secret")
    Lens.objects.update(api_key_env=name)  # as a database edit would, past the admin's check
    proposal = evaluate_in_process(submit(llm_panel, CONTENT))
    failure = LensFailure.objects.get(proposal=proposal)
    assert f"{name} is not a variable lenses may read" in failure.error
    assert "the-servers-own-secret" not in failure.error
    assert openai_server.requests == []  # nothing was sent anywhere


def test_the_allowlist_setting_admits_other_names(llm_panel, openai_server, monkeypatch, settings):
    settings.REVIEWAPP_LLM_KEY_ENV_ALLOW = ["TEAM_KEY_*"]
    monkeypatch.setenv("TEAM_KEY_JUDGE", "sk-team")
    Lens.objects.update(api_key_env="TEAM_KEY_JUDGE")
    openai_server.script([Answer(judgement("pass", "Paris is the capital of France."))])
    evaluate_in_process(submit(llm_panel, CONTENT))
    assert openai_server.requests[0].authorization == "Bearer sk-team"


def test_the_loop_reuses_one_session_and_connection_per_endpoint(llm_panel, openai_server):
    openai_server.script([Answer(judgement("pass")), Answer(judgement("pass"))])
    evaluate_in_process(submit(llm_panel, CONTENT))
    evaluate_in_process(submit(llm_panel, CONTENT + " Again."))
    assert len(openai_server.client_ports) == 2
    assert len(set(openai_server.client_ports)) == 1  # built once, kept alive


def test_a_providers_error_reaches_the_agent_capped_and_without_key_or_account(
    llm_panel, openai_server
):
    body = (
        '{"error": {"message": "Incorrect API key provided: sk-proj-AbCdEf1234567890wXyZ. '
        'Your organization org-9fKq2LmZp0Xy (billing@acme.example) ...", "padding": "'
        + "x" * 3000
        + '"}}'
    )
    openai_server.script([HttpError(401, body)])
    proposal = evaluate_in_process(submit(llm_panel, CONTENT))

    (served,) = (
        Client()
        .get(f"/api/proposals/{proposal.pk}", headers={"Authorization": f"Bearer {read_all()}"})
        .json()["lens_failures"]
    )

    assert "HTTP 401" in served["message"] and "Incorrect API key provided" in served["message"]
    assert len(served["message"]) <= 300
    stored = LensFailure.objects.get(proposal=proposal).error
    for secret in ("sk-proj-AbCdEf", "org-9fKq2LmZp0Xy", "billing@acme.example"):
        assert secret not in served["message"] and secret not in stored


def read_all() -> str:
    return api_client_create(name="operator", scopes=["read:all"])[1]


@pytest.mark.parametrize(
    ("base_url", "says"),
    [
        ("http://svc:topsecret@{host}/v1", "must not carry credentials"),
        ("http://169.254.169.254/v1", "link-local"),
        ("http://[fd00:ec2::254]/v1", "cloud metadata service"),
    ],
)
def test_a_lens_stored_with_an_endpoint_it_may_not_call_fails_saying_why(
    llm_panel, openai_server, base_url, says
):
    """Stored before the rules (or past them, in SQL): nothing is sent, the key least of all."""
    host = openai_server.base_url.split("//")[1].split("/")[0]
    Lens.objects.filter(panels=llm_panel).update(base_url=base_url.format(host=host))

    proposal = evaluate_in_process(submit(llm_panel, CONTENT))

    failure = LensFailure.objects.get(proposal=proposal)
    assert failure.kind == "misconfigured"
    assert says in failure.error and "topsecret" not in failure.error
    assert not openai_server.requests
