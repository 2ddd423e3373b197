import asyncio
import json
import time

import aiohttp
import pytest

from reviewapp.core.cite import EVAL_THOUGHT_LIMIT, REQUOTE_BUDGET, GroundingPolicy
from reviewapp.core.judging import (
    FailureKind,
    LensFailed,
    MalformedJudgement,
    PermanentTransportError,
    RecordedTransport,
    TransientTransportError,
    build_messages,
    parse_judgement,
    run_judge,
)
from reviewapp.core.llm_calls import AsyncChatTransport, run_judge_async
from tests.core.openai_stub import (
    CloseConnection,
    HttpError,
    MalformedBody,
    RateLimited,
    Slow,
    Trickle,
)

CONTENT = (
    "The migration adds a nullable column reviewed_at to the proposals table.\n"
    "It backfills existing rows in batches of 500."
)
THOUGHT = "I checked that the ORM default is None before writing the backfill."
GOOD_CITE = "adds a nullable column reviewed_at"
THOUGHT_CITE = "the ORM default is None"
BOGUS_CITE = "drops the proposals table"


def judgement(verdict="pass", *cites, rationale="Looks safe."):
    return json.dumps(
        {
            "verdict": verdict,
            "rationale": rationale,
            "claims": [{"cite": c, "assessment": "verified", "note": "n"} for c in cites],
        }
    )


class Live:
    """The worker's chat transport (``AsyncChatTransport``, as its LLM loop builds it) aimed
    at the loopback server: each use opens its session on an event loop of its own."""

    def __init__(self, base_url: str, **options):
        self.base_url, self.options = base_url, options

    def _run(self, use):
        async def run():
            async with aiohttp.ClientSession() as session:
                transport = AsyncChatTransport(
                    session=session, base_url=self.base_url, **self.options
                )
                return await use(transport)

        return asyncio.run(run())

    def judge(self, *, sleep, **loop):
        async def backoff(seconds):  # recorded, not waited: the loop's waits are its own tests'
            sleep(seconds)

        return self._run(
            lambda transport: run_judge_async(
                transport=transport, time_limit=30.0, sleep=backoff, **loop
            )
        )

    def complete(self, messages: list[dict]) -> str:
        return self._run(lambda transport: transport.complete(messages))


def judge(transport, **overrides):
    """Judge through `transport`: a live one as the worker's loop does, a recorded one as a
    replay does."""
    kwargs = dict(
        instructions="Check the migration is reversible.",
        lens_name="safety",
        content=CONTENT,
        thought_process=THOUGHT,
        policy=GroundingPolicy.REJECT,
        target_id="proposal-1",
        sleep=lambda s: None,
    )
    if isinstance(transport, Live):
        return transport.judge(**(kwargs | overrides))
    return run_judge(transport=transport, **(kwargs | overrides))


@pytest.fixture
def http(openai_server):
    """Builds live transports aimed at the stub."""

    def make(**overrides):
        kwargs = dict(model="judge-model", api_key=None, temperature=0.0, timeout=5.0)
        return Live(openai_server.base_url, **(kwargs | overrides))

    return make


def last_user_message(request):
    message = request.body["messages"][-1]
    assert message["role"] == "user"
    return message["content"]


# ---- parsing ----


def test_parse_reads_json_inside_a_code_fence():
    parsed = parse_judgement(f"```json\n{judgement('pass', GOOD_CITE)}\n```")
    assert parsed.verdict == "pass"
    assert [c.cite for c in parsed.claims] == [GOOD_CITE]


def test_parse_finds_the_object_amid_leading_and_trailing_prose():
    text = (
        "Sure {not json}! Here is my judgement:\n"
        + judgement("fail", "a } brace in a cite", rationale="Braces { inside } strings.")
        + "\nLet me know if you need {more}."
    )
    parsed = parse_judgement(text)
    assert parsed.verdict == "fail"
    assert parsed.rationale == "Braces { inside } strings."
    assert parsed.claims[0].cite == "a } brace in a cite"


def test_parse_accepts_verdict_in_any_case():
    assert parse_judgement(judgement("PASS")).verdict == "pass"


def test_parse_rejects_a_verdict_other_than_pass_or_fail():
    with pytest.raises(MalformedJudgement, match="verdict"):
        parse_judgement(judgement("maybe"))


@pytest.mark.parametrize("field", ["verdict", "rationale", "claims"])
def test_parse_rejects_a_missing_required_field(field):
    data = json.loads(judgement("pass", GOOD_CITE))
    del data[field]
    with pytest.raises(MalformedJudgement, match=field):
        parse_judgement(json.dumps(data))


def test_parse_defaults_a_missing_assessment_to_verified():
    parsed = parse_judgement('{"verdict": "pass", "rationale": "r", "claims": [{"cite": "x"}]}')
    assert parsed.claims[0].assessment == "verified"
    assert parsed.claims[0].note == ""


def test_parse_rejects_an_unknown_assessment():
    text = '{"verdict": "pass", "rationale": "r", "claims": [{"cite": "x", "assessment": "ok"}]}'
    with pytest.raises(MalformedJudgement, match="assessment"):
        parse_judgement(text)


def test_parse_rejects_a_blank_cite_without_a_claim_id():
    text = '{"verdict": "pass", "rationale": "r", "claims": [{"cite": " "}]}'
    with pytest.raises(MalformedJudgement, match="cite"):
        parse_judgement(text)


def test_parse_rejects_text_without_a_json_object():
    with pytest.raises(MalformedJudgement, match="no JSON object"):
        parse_judgement("I think it passes.")


# ---- prompt ----


def test_prompt_names_the_lens_demands_verbatim_quotes_and_the_json_shape():
    system, _ = build_messages(
        instructions="Check reversibility.",
        lens_name="safety",
        content=CONTENT,
        thought_process=THOUGHT,
    )
    assert system["role"] == "system"
    for expected in (
        "'safety' lens",
        "Check reversibility.",
        "VERBATIM",
        '"verdict"',
        '"cite"',
        '"assessment"',
        '"claim_id"',
    ):
        assert expected in system["content"]


def test_prompt_shows_the_answer_and_only_the_first_eval_thought_limit_chars_of_thoughts():
    thoughts = "a" * EVAL_THOUGHT_LIMIT + "HIDDEN"
    _, user = build_messages(
        instructions="i", lens_name="l", content=CONTENT, thought_process=thoughts
    )
    assert user["role"] == "user"
    assert CONTENT in user["content"]
    assert "a" * EVAL_THOUGHT_LIMIT in user["content"]
    assert "HIDDEN" not in user["content"]
    assert "truncated" in user["content"]


# ---- the loop, over a real loopback server ----


def test_clean_pass_through_the_loopback_server(openai_server, http):
    openai_server.script([judgement("pass", GOOD_CITE, THOUGHT_CITE)])

    outcome = judge(http(temperature=0.2))

    assert outcome.verdict == "pass"
    assert [c.text for c in outcome.claims] == [GOOD_CITE, THOUGHT_CITE]
    assert all(c.resolved for c in outcome.claims)
    assert outcome.unresolved_cites == []
    assert (outcome.transport_calls, outcome.repair_asks, outcome.requote_rounds) == (1, 0, 0)
    [request] = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "judge-model"
    assert request.body["temperature"] == 0.2
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["messages"] == outcome.transcript[:2]
    assert outcome.transcript[-1] == {"role": "assistant", "content": outcome.raw_response}


def test_http_500_is_retried_then_succeeds(openai_server, http):
    openai_server.script([HttpError(500), judgement("pass", GOOD_CITE)])
    sleeps = []

    outcome = judge(http(), sleep=sleeps.append)

    assert outcome.verdict == "pass"
    assert outcome.transport_calls == 2
    assert len(sleeps) == 1


def test_429_retry_after_is_honoured(openai_server, http):
    openai_server.script([RateLimited("3"), judgement("pass", GOOD_CITE)])
    sleeps = []

    outcome = judge(http(), sleep=sleeps.append, rng=lambda: 0.0)

    assert outcome.transport_calls == 2
    assert sleeps == [3.0]


def test_429_retry_after_is_capped_so_no_wait_is_unbounded(openai_server, http):
    openai_server.script([RateLimited("3600"), judgement("pass", GOOD_CITE)])
    sleeps = []

    judge(http(), sleep=sleeps.append, backoff_cap=8.0)

    assert sleeps == [8.0]


def test_429_exposes_retry_after_on_the_transient_error(openai_server, http):
    openai_server.script([RateLimited("7")])
    with pytest.raises(TransientTransportError) as caught:
        http().complete([{"role": "user", "content": "hi"}])
    assert caught.value.retry_after == 7.0


def test_backoff_is_exponential_with_full_jitter_up_to_the_cap():
    transport = RecordedTransport([{"error": "transient"}] * 4 + [judgement("pass")])
    sleeps = []

    judge(
        transport,
        transport_attempts=5,
        backoff_base=1.0,
        backoff_cap=5.0,
        sleep=sleeps.append,
        rng=lambda: 0.5,
    )

    assert sleeps == [0.5, 1.0, 2.0, 2.5]


def test_answer_slower_than_the_timeout_exhausts_the_transport_budget(openai_server, http):
    openai_server.script([Slow(5, judgement("pass")), Slow(5, judgement("pass"))])

    started = time.monotonic()
    with pytest.raises(LensFailed, match="transport budget exhausted") as caught:
        judge(http(timeout=0.2), transport_attempts=2)

    assert caught.value.attempts == 2
    assert caught.value.kind == FailureKind.TRANSPORT_ERROR
    assert len(openai_server.requests) == 2
    assert time.monotonic() - started < 2


def test_a_trickled_response_is_cut_off_at_the_total_deadline(openai_server, http):
    openai_server.script([Trickle(judgement("pass", GOOD_CITE), interval=0.05)])

    started = time.monotonic()
    with pytest.raises(TransientTransportError, match="not complete within"):
        http(timeout=0.3).complete([{"role": "user", "content": "hi"}])

    assert time.monotonic() - started < 1.5


def test_a_dropped_connection_is_retried(openai_server, http):
    openai_server.script([CloseConnection(), judgement("pass", GOOD_CITE)])

    outcome = judge(http())

    assert outcome.verdict == "pass"
    assert outcome.transport_calls == 2


def test_a_response_that_is_not_a_chat_completion_fails_without_retry(openai_server, http):
    openai_server.script([MalformedBody(), judgement("pass")])

    with pytest.raises(LensFailed, match="permanent") as caught:
        judge(http())

    assert caught.value.attempts == 1
    assert len(openai_server.requests) == 1


def test_a_4xx_other_than_429_fails_without_retry(openai_server, http):
    openai_server.script([HttpError(401), judgement("pass")])

    with pytest.raises(LensFailed, match="HTTP 401") as caught:
        judge(http())

    assert caught.value.kind == FailureKind.HTTP_ERROR
    assert len(openai_server.requests) == 1


def test_one_malformed_answer_is_repaired_by_a_reask(openai_server, http):
    openai_server.script(["I'd say it passes.", judgement("pass", GOOD_CITE)])

    outcome = judge(http())

    assert outcome.verdict == "pass"
    assert outcome.repair_asks == 1
    reask = openai_server.requests[1].body["messages"]
    assert reask[-2] == {"role": "assistant", "content": "I'd say it passes."}
    assert "no JSON object found" in reask[-1]["content"]
    assert '"verdict"' in reask[-1]["content"]


def test_a_second_malformed_answer_fails_the_lens(openai_server, http):
    openai_server.script([judgement("maybe"), judgement("perhaps")])

    with pytest.raises(LensFailed, match="malformed") as caught:
        judge(http())

    assert caught.value.attempts == 2
    assert caught.value.transcript[-1]["content"] == judgement("perhaps")


def test_an_unresolved_cite_is_sent_back_for_requoting_and_fixed(openai_server, http):
    openai_server.script(
        [judgement("fail", GOOD_CITE, BOGUS_CITE), judgement("fail", GOOD_CITE, THOUGHT_CITE)]
    )

    outcome = judge(http())

    requote = openai_server.requests[1].body["messages"]
    assert requote[-2]["content"] == judgement("fail", GOOD_CITE, BOGUS_CITE)
    assert BOGUS_CITE in requote[-1]["content"]
    assert GOOD_CITE not in requote[-1]["content"]
    assert outcome.requote_rounds == 1
    assert [c.text for c in outcome.claims] == [GOOD_CITE, THOUGHT_CITE]
    assert outcome.unresolved_cites == []


def test_after_the_requote_budget_unresolved_cites_are_dropped_and_recorded(openai_server, http):
    stubborn = judgement("fail", GOOD_CITE, BOGUS_CITE)
    openai_server.script([stubborn] * (REQUOTE_BUDGET + 2))

    outcome = judge(http())

    assert len(openai_server.requests) == REQUOTE_BUDGET + 1
    assert outcome.requote_rounds == REQUOTE_BUDGET
    assert outcome.verdict == "fail"
    assert [c.cite for c in outcome.claims] == [GOOD_CITE]
    assert outcome.unresolved_cites == [BOGUS_CITE]


def test_requote_rounds_do_not_draw_on_the_transport_budget(openai_server, http):
    stubborn = judgement("fail", GOOD_CITE, BOGUS_CITE)
    openai_server.script([stubborn] * (REQUOTE_BUDGET + 1))

    outcome = judge(http(), transport_attempts=1)

    assert outcome.requote_rounds == REQUOTE_BUDGET
    assert outcome.transport_calls == REQUOTE_BUDGET + 1


def test_transport_retries_do_not_draw_on_the_requote_budget(openai_server, http):
    stubborn = judgement("fail", GOOD_CITE, BOGUS_CITE)
    openai_server.script(
        [HttpError(503), HttpError(503), stubborn, stubborn, judgement("fail", GOOD_CITE)]
    )

    outcome = judge(http(), transport_attempts=3)

    assert outcome.requote_rounds == REQUOTE_BUDGET
    assert outcome.unresolved_cites == []


def test_a_repair_reask_does_not_draw_on_the_transport_budget(openai_server, http):
    openai_server.script(["not json", judgement("pass", GOOD_CITE)])

    outcome = judge(http(), transport_attempts=1)

    assert outcome.repair_asks == 1
    assert outcome.transport_calls == 2


def test_the_transport_budget_is_shared_across_the_whole_run(openai_server, http):
    openai_server.script(
        [HttpError(500), judgement("fail", BOGUS_CITE), HttpError(500), judgement("fail")]
    )

    with pytest.raises(LensFailed, match="transport budget exhausted") as caught:
        judge(http(), transport_attempts=2)

    assert caught.value.attempts == 3


def test_repair_policy_keeps_unresolved_claims_unanchored_without_reasking(openai_server, http):
    openai_server.script([judgement("pass", GOOD_CITE, BOGUS_CITE), judgement("pass")])

    outcome = judge(http(), policy=GroundingPolicy.REPAIR)

    assert len(openai_server.requests) == 1
    assert outcome.requote_rounds == 0
    assert [(c.cite, c.resolved) for c in outcome.claims] == [
        (GOOD_CITE, True),
        (BOGUS_CITE, False),
    ]
    assert outcome.unresolved_cites == [BOGUS_CITE]


# ---- recorded transport ----


def test_recorded_transport_replays_through_the_same_loop():
    transport = RecordedTransport(
        [
            {"error": "transient", "message": "recorded 503"},
            json.loads(judgement("fail", BOGUS_CITE)),
            judgement("fail", GOOD_CITE),
        ]
    )

    outcome = judge(transport)

    assert outcome.verdict == "fail"
    assert outcome.transport_calls == 3
    assert outcome.requote_rounds == 1
    assert BOGUS_CITE in transport.requests[2][-1]["content"]


def test_recorded_permanent_error_fails_the_lens_without_retry():
    transport = RecordedTransport([{"error": "permanent", "message": "bad key"}, judgement()])

    with pytest.raises(LensFailed, match="bad key"):
        judge(transport)

    assert len(transport.requests) == 1


def test_recorded_transport_running_out_is_a_permanent_error():
    with pytest.raises(PermanentTransportError, match="exhausted"):
        RecordedTransport([]).complete([])


# ---- authorization ----


def test_api_key_is_sent_as_a_bearer_token(openai_server, http):
    openai_server.script([judgement("pass")])
    judge(http(api_key="sk-test"))
    assert openai_server.requests[0].authorization == "Bearer sk-test"


def test_no_authorization_header_is_sent_without_an_api_key(openai_server, http):
    openai_server.script([judgement("pass")])
    judge(http(api_key=None))
    assert openai_server.requests[0].authorization is None
