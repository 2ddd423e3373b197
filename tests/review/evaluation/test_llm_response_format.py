"""An LLM lens asks for its judgement in the response format its endpoint supports."""

import pytest

from reviewapp.core.judging import JUDGEMENT_SCHEMA
from reviewapp.review.models import Decision, Lens, LensFailure
from tests.conftest import wait_for
from tests.core.openai_stub import Answer, HttpError
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import evaluate_in_process, judgement, submit

pytestmark = pytest.mark.django_db

CONTENT = "Paris is the capital of France."
PASS = judgement("pass", "Paris is the capital of France.")


def llm_panel(openai_server, response_format):
    lens = LensFactory(
        backend=Lens.Backend.LLM,
        base_url=openai_server.base_url,
        model="judge-1",
        timeout_seconds=2,
        response_format=response_format,
    )
    return PanelFactory(lenses=[lens], need=1)


def test_a_new_llm_lens_asks_for_strict_structured_output():
    assert Lens().response_format == "json_schema"


@pytest.mark.parametrize(
    ("mode", "sent"),
    [
        (
            "json_schema",
            {
                "type": "json_schema",
                "json_schema": {"name": "judgement", "strict": True, "schema": JUDGEMENT_SCHEMA},
            },
        ),
        ("json_object", {"type": "json_object"}),
        ("text", None),
    ],
)
@pytest.mark.django_db(transaction=True)
def test_each_response_format_is_sent_as_the_lens_says_and_judges(
    openai_server, llm_loop, mode, sent
):
    openai_server.script([Answer(PASS)])
    proposal = evaluate_in_process(submit(llm_panel(openai_server, mode), CONTENT))
    assert openai_server.requests[0].body.get("response_format") == sent
    assert proposal.decision.outcome == "approved"


def test_the_schema_is_strict_every_property_required_and_no_others():
    claim = JUDGEMENT_SCHEMA["properties"]["claims"]["items"]
    for shape in (JUDGEMENT_SCHEMA, claim):
        assert shape["additionalProperties"] is False
        assert sorted(shape["required"]) == sorted(shape["properties"])


@pytest.mark.django_db(transaction=True)
def test_a_server_that_rejects_the_format_is_a_clear_lens_error_not_a_retry_loop(
    openai_server, llm_loop
):
    openai_server.script(
        [HttpError(400, '{"error": {"message": "response_format json_schema is not supported"}}')]
        * 4
    )
    proposal = evaluate_in_process(submit(llm_panel(openai_server, "json_schema"), CONTENT))
    failure = LensFailure.objects.get(proposal=proposal)
    assert "refused the requested response format" in failure.error
    assert "json_object, or text" in failure.error
    assert len(openai_server.requests) == 1
    assert proposal.escalations.get().reasons == ["no_quorum", "lens_failed"]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_workers_loop_sends_each_lens_its_own_response_format(start_worker, openai_server):
    openai_server.respond = lambda request: Answer(PASS)
    lenses = [
        LensFactory(
            backend=Lens.Backend.LLM,
            base_url=openai_server.base_url,
            model=f"judge-{mode}",
            timeout_seconds=10,
            response_format=mode,
        )
        for mode in ("json_schema", "json_object", "text")
    ]
    panel = PanelFactory(lenses=lenses, need=3)
    worker = start_worker()
    proposal = submit(panel, CONTENT)
    wait_for(
        lambda: Decision.objects.filter(proposal=proposal).exists(),
        timeout=60,
        message=worker.log(),
    )
    sent = {
        r.body["model"]: (r.body.get("response_format") or {}).get("type")
        for r in openai_server.requests
    }
    assert sent == {
        "judge-json_schema": "json_schema",
        "judge-json_object": "json_object",
        "judge-text": None,
    }
