"""Every MCP tool, through the SDK's own client over streamable HTTP against uvicorn."""

import asyncio
import json
import time

import pytest
from django.db import connection
from django.utils import timezone

from reviewapp.review.models import ApiClient, CheckerConfig, Lens, Proposal
from tests.factories import CheckerFactory, LensFactory, PanelFactory
from tests.mcp.conftest import call, call_async, error_text
from tests.webhooks.helpers import one_lens_panel, run_pipeline

CONTENT = "Refunds are issued within 14 days."


def submit(server, token, panel, content=CONTENT, **extra):
    arguments = {"panel": panel.name, "content": content, "external_ref": "job-1", **extra}
    result = call(server, token, "request_review", arguments)
    assert not result.is_error, result.content
    return result.structured_content


def test_every_tool_is_listed_with_a_description_and_an_input_schema(server, agent):
    async def listed():
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {agent[1]}"}
        async with httpx2.AsyncClient(headers=headers) as http:
            async with Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as c:
                return (await c.list_tools()).tools

    tools = {tool.name: tool for tool in asyncio.run(listed())}

    assert set(tools) == {
        "request_review",
        "get_review",
        "wait_for_review",
        "list_panels",
        "submit_judgement",
        "verify_decision",
    }
    assert all(tool.description for tool in tools.values())
    assert all(tool.input_schema["type"] == "object" for tool in tools.values())
    assert tools["wait_for_review"].input_schema["properties"]["timeout_s"]["maximum"] == 60
    assert set(tools["request_review"].input_schema["required"]) == {
        "panel",
        "content",
        "external_ref",
    }


def test_request_review_answers_id_status_and_url(server, agent):
    panel = one_lens_panel(CONTENT)

    submitted = submit(server, agent[1], panel)

    proposal = Proposal.objects.get(pk=submitted["id"])
    assert proposal.client == agent[0] and proposal.external_ref == "job-1"
    assert submitted == {
        "id": proposal.pk,
        "status": "queued",
        "url": f"/api/proposals/{proposal.pk}",
        "created": True,
    }


def test_request_review_again_under_the_same_external_ref_returns_the_same_review(server, agent):
    panel = one_lens_panel(CONTENT)

    first = submit(server, agent[1], panel)
    again = submit(server, agent[1], panel)

    assert again == {**first, "created": False}
    assert Proposal.objects.count() == 1


def test_request_review_with_another_body_under_a_used_external_ref_is_a_tool_error(server, agent):
    panel = one_lens_panel(CONTENT)
    submit(server, agent[1], panel)

    result = call(
        server,
        agent[1],
        "request_review",
        {"panel": panel.name, "content": "Something else.", "external_ref": "job-1"},
    )

    assert "job-1" in error_text(result)


def test_request_review_naming_no_active_panel_says_so(server, agent):
    result = call(
        server, agent[1], "request_review", {"panel": "nope", "content": "x", "external_ref": "r"}
    )

    assert "no active, valid panel: nope" in error_text(result)


def test_get_review_has_outcome_verdicts_cites_with_offsets_evidence_and_decision(server, agent):
    panel = one_lens_panel(CONTENT)
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel)["id"])
    run_pipeline(proposal)

    review = call(server, agent[1], "get_review", {"id": proposal.pk}).structured_content

    assert (review["status"], review["final"], review["outcome"]) == ("decided", True, "approved")
    [judgement] = review["judgements"]
    assert judgement["verdict"] == "pass"
    [claim] = judgement["claims"]
    assert claim["text"] == CONTENT
    assert claim["anchor"] == {"kind": "answer_body", "start_utf16": 0, "end_utf16": len(CONTENT)}
    assert [e["verdict"] for e in review["evidence"]] == ["pass"]
    assert review["decision"]["outcome"] == "approved"
    assert review["decision"]["public_key"] and review["decision"]["signature"]
    assert "content" not in review  # the agent sent it; cites carry their own text


def test_get_review_names_each_lens_that_failed_and_why(server, agent):
    # A recorded lens with no answer recorded for this text fails.
    panel = PanelFactory(lenses=[LensFactory(name="silent")])
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel)["id"])
    run_pipeline(proposal)

    review = call(server, agent[1], "get_review", {"id": proposal.pk}).structured_content

    assert review["status"] == "escalated"
    assert "lens_failed" in review["reasons"]
    assert review["judgements"] == []
    [failure] = review["lens_failures"]
    assert (failure["lens"], failure["kind"]) == ("silent", "misconfigured")
    assert failure["message"] and failure["at"]


def test_get_review_says_why_a_review_was_escalated(server, agent):
    checker = CheckerFactory(
        name="schema",
        kind=CheckerConfig.Kind.JSON_SCHEMA,
        settings={"schema": {"$ref": "https://schemas.invalid/total.json"}},
    )
    panel = PanelFactory(lenses=[LensFactory(name="silent")], checkers=[checker])
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel, '{"total": 3}')["id"])
    run_pipeline(proposal)

    escalation = call(server, agent[1], "get_review", {"id": proposal.pk}).structured_content[
        "escalation"
    ]

    assert "lens silent (misconfigured)" in escalation["explanation"]
    assert [(f["lens"], f["kind"]) for f in escalation["lens_failures"]] == [
        ("silent", "misconfigured")
    ]
    [inconclusive] = escalation["inconclusive_checkers"]
    assert inconclusive["checker"] == "schema" and "schemas.invalid" in inconclusive["reason"]


def test_get_review_of_a_review_that_does_not_exist_is_not_found(server, agent):
    assert "no review 999999" in error_text(call(server, agent[1], "get_review", {"id": 999999}))


def test_wait_for_review_returns_once_the_review_is_decided(server, agent):
    panel = one_lens_panel(CONTENT)
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel)["id"])

    async def wait_while_deciding():
        waiting = asyncio.create_task(
            call_async(server, agent[1], "wait_for_review", {"id": proposal.pk, "timeout_s": 60})
        )
        await asyncio.to_thread(_decide_when_watched, proposal)
        decided = time.monotonic()
        result = await waiting
        return result, time.monotonic() - decided

    result, after = asyncio.run(wait_while_deciding())

    assert result.structured_content["status"] == "decided"
    assert result.structured_content["decision"]["outcome"] == "approved"
    assert after < 30  # returned on the decision, not at the 60 s timeout


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="NOTIFY is PostgreSQL's; SQLite relies on the tick"
)
def test_wait_for_review_returns_on_the_decisions_notify_well_before_the_next_tick(
    server, agent, monkeypatch
):
    from reviewapp.mcp import watch

    monkeypatch.setattr(watch, "TICK", 20.0)
    panel = one_lens_panel(CONTENT)
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel)["id"])

    async def wait_while_deciding():
        waiting = asyncio.create_task(
            call_async(server, agent[1], "wait_for_review", {"id": proposal.pk, "timeout_s": 60})
        )
        await asyncio.to_thread(_decide_when_watched, proposal)
        decided = time.monotonic()
        result = await waiting
        return result, time.monotonic() - decided

    result, after = asyncio.run(wait_while_deciding())

    assert result.structured_content["status"] == "decided"
    assert after < 5  # the next poll was 20 s away


def test_wait_for_review_refuses_a_token_revoked_while_it_waited(server, agent):
    panel = one_lens_panel(CONTENT)
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel)["id"])

    def revoke_then_decide():
        _decide_when_watched(
            proposal,
            before=lambda: ApiClient.objects.filter(pk=agent[0].pk).update(
                revoked_at=timezone.now()
            ),
        )

    async def wait_while_revoked():
        waiting = asyncio.create_task(
            call_async(server, agent[1], "wait_for_review", {"id": proposal.pk, "timeout_s": 60})
        )
        await asyncio.to_thread(revoke_then_decide)
        return await waiting

    result = asyncio.run(wait_while_revoked())

    assert "revoked while it waited" in error_text(result)
    assert "decision" not in result.content[0].text


def _decide_when_watched(proposal, before=lambda: None, decide=None):
    from django.db import connections

    from reviewapp.mcp.watch import watch

    deadline = time.monotonic() + 30
    while proposal.pk not in watch._waiting:
        assert time.monotonic() < deadline, "the call never started waiting"
        time.sleep(0.02)
    before()
    (decide or (lambda: run_pipeline(proposal)))()
    connections.close_all()  # this thread's own connection


def test_wait_for_review_returns_at_its_timeout_when_nothing_is_decided(server, agent):
    panel = one_lens_panel(CONTENT)
    proposal_id = submit(server, agent[1], panel)["id"]

    started = time.monotonic()
    result = call(server, agent[1], "wait_for_review", {"id": proposal_id, "timeout_s": 0.5})

    assert 0.5 <= time.monotonic() - started < 10
    assert (result.structured_content["status"], result.structured_content["final"]) == (
        "queued",
        False,
    )


def test_wait_for_review_of_a_final_review_returns_it_at_once(server, agent):
    panel = one_lens_panel(CONTENT)
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel)["id"])
    run_pipeline(proposal)

    started = time.monotonic()
    result = call(server, agent[1], "wait_for_review", {"id": proposal.pk, "timeout_s": 60})

    assert result.structured_content["outcome"] == "approved"
    assert time.monotonic() - started < 10


def test_list_panels_names_the_active_panels_and_their_lenses(server, agent):
    panel = PanelFactory(name="house", need=1, lenses=[LensFactory(name="style")])
    PanelFactory(name="retired", active=False, lenses=[LensFactory()])

    panels = call(server, agent[1], "list_panels").structured_content["panels"]

    assert [p["name"] for p in panels] == [panel.name]
    assert panels[0]["need"] == 1
    assert panels[0]["lenses"] == [{"name": "style", "backend": "recorded"}]
    assert panels[0]["guarantee"] is None


def test_list_panels_says_the_guarantee_a_panel_gives(server, agent):
    from tests.guarantee.builders import guaranteed

    guaranteed(PanelFactory(name="house", need=1, lenses=[LensFactory()]), target=0.9)

    [panel] = call(server, agent[1], "list_panels").structured_content["panels"]

    assert panel["guarantee"] == {"target": 0.9, "confidence": 0.95}


@pytest.fixture
def external_review(agent):
    """A review awaiting the external lens "outside", which names `agent`'s client."""
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL, allow_self_judgement=True)
    outside.judge_clients.add(agent[0])
    return PanelFactory(lenses=[outside])


def test_submit_judgement_records_the_lens_verdict_with_its_cites_grounded(
    server, agent, external_review
):
    proposal_id = submit(server, agent[1], external_review)["id"]

    result = call(
        server,
        agent[1],
        "submit_judgement",
        {
            "id": proposal_id,
            "lens": "outside",
            "verdict": "pass",
            "rationale": "Checked.",
            "claims": [{"cite": "within 14 days", "assessment": "verified"}],
        },
    )

    judgement = result.structured_content
    assert (judgement["lens"], judgement["verdict"]) == ("outside", "pass")
    [claim] = judgement["claims"]
    start = CONTENT.index("within 14 days")
    assert claim["anchor"]["start_utf16"] == start
    assert Proposal.objects.get(pk=proposal_id).judgements.get().lens_name == "outside"


def test_submit_judgement_twice_says_the_lens_has_already_judged(server, agent, external_review):
    proposal_id = submit(server, agent[1], external_review)["id"]
    arguments = {"id": proposal_id, "lens": "outside", "verdict": "pass"}
    call(server, agent[1], "submit_judgement", arguments)

    result = call(server, agent[1], "submit_judgement", arguments)

    assert "already judged" in error_text(result)


def test_verify_decision_accepts_the_decision_get_review_returns(server, agent):
    panel = one_lens_panel(CONTENT)
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel)["id"])
    run_pipeline(proposal)
    decision = call(server, agent[1], "get_review", {"id": proposal.pk}).structured_content[
        "decision"
    ]

    result = call(server, agent[1], "verify_decision", {"decision": decision})

    assert result.structured_content == {"valid": True, "problem": None}


def test_verify_decision_says_what_is_wrong_with_a_tampered_decision(server, agent):
    panel = one_lens_panel(CONTENT)
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel)["id"])
    run_pipeline(proposal)
    decision = call(server, agent[1], "get_review", {"id": proposal.pk}).structured_content[
        "decision"
    ]
    signed = json.loads(decision["payload"])
    signed["outcome"] = "rejected"
    tampered = {**decision, "payload": json.dumps(signed), "outcome": "rejected"}

    result = call(server, agent[1], "verify_decision", {"decision": tampered})

    assert result.structured_content["valid"] is False
    assert "signature does not verify" in result.structured_content["problem"]


def test_verify_decision_binds_the_decision_to_the_content_acted_on(server, agent):
    panel = one_lens_panel(CONTENT)
    proposal = Proposal.objects.get(pk=submit(server, agent[1], panel)["id"])
    run_pipeline(proposal)
    decision = call(server, agent[1], "get_review", {"id": proposal.pk}).structured_content[
        "decision"
    ]

    same = call(server, agent[1], "verify_decision", {"decision": decision, "content": CONTENT})
    other = call(
        server, agent[1], "verify_decision", {"decision": decision, "content": CONTENT + "!"}
    )

    assert same.structured_content == {"valid": True, "problem": None}
    assert other.structured_content["valid"] is False
    assert other.structured_content["problem"].startswith("content: ")


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("get_review", {"id": "twelve"}, "valid integer"),
        ("get_review", {}, "Field required"),
        ("get_review", {"id": 0}, "greater than or equal to 1"),
        ("wait_for_review", {"id": 1, "timeout_s": 61}, "less than or equal to 60"),
        ("request_review", {"panel": "p", "content": "a\x00b", "external_ref": "r"}, "NUL"),
        ("request_review", {"panel": "p", "content": " \u200b ", "external_ref": "r"}, "empty"),
        (
            "request_review",
            {"panel": "p", "content": "c", "external_ref": "r", "metadata": {"n": 2**60}},
            "metadata['n']: integers beyond",
        ),
        ("submit_judgement", {"id": 1, "lens": "l", "verdict": "maybe"}, "'pass' or 'fail'"),
        ("verify_decision", {"decision": {"payload": 1}}, "not a decision"),
    ],
)
def test_bad_arguments_are_a_tool_error_saying_what_is_wrong(server, agent, tool, arguments, says):
    result = call(server, agent[1], tool, arguments)

    if tool == "verify_decision":  # a well-formed call about a malformed decision
        assert says in result.structured_content["problem"]
    else:
        assert says in error_text(result)


def test_wait_for_review_is_not_found_once_its_client_is_unbound_from_the_lens_that_let_it_see(
    server,
):

    from reviewapp.review.evaluation.tasks import finalize_proposal
    from reviewapp.review.services.proposals import proposal_submit
    from tests.webhooks.helpers import api_client

    submitter, _ = api_client("submit")
    judge, judge_token = api_client("read", "judge")
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    outside.judge_clients.add(judge)
    panel = PanelFactory(lenses=[outside], need=1)
    proposal, _ = proposal_submit(panel_name=panel.name, content=CONTENT, client=submitter)

    def unbind_then_escalate():
        _decide_when_watched(
            proposal,
            before=lambda: outside.judge_clients.remove(judge),
            decide=lambda: finalize_proposal(proposal.pk, deadline_passed=True),
        )

    async def wait_while_unbound():
        waiting = asyncio.create_task(
            call_async(server, judge_token, "wait_for_review", {"id": proposal.pk, "timeout_s": 60})
        )
        await asyncio.to_thread(unbind_then_escalate)
        return await waiting

    result = asyncio.run(wait_while_unbound())

    assert Proposal.objects.get(pk=proposal.pk).status == Proposal.Status.ESCALATED
    assert error_text(result) == error_text(
        call(server, judge_token, "get_review", {"id": proposal.pk})
    )
    assert f"no review {proposal.pk} that this token may see" in error_text(result)
