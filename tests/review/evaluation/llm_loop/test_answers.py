"""A lens's failure keeps its kind on its way through the queue (llm_loop/answers.py)."""

import json

from reviewapp.core.judging import FailureKind, LensFailed
from reviewapp.review.evaluation.llm_loop.answers import answer_outcome, failure_json


def test_a_failure_read_back_from_its_task_keeps_its_kind():
    failed = LensFailed("answered 429 for 1 minute", 7, [], kind=FailureKind.RATE_LIMITED)

    back = answer_outcome(json.loads(json.dumps(failure_json(3, failed))))

    assert (back.reason, back.attempts, back.kind) == (
        "answered 429 for 1 minute",
        7,
        FailureKind.RATE_LIMITED,
    )


def test_a_failure_queued_before_kinds_reads_back_as_the_transports():
    back = answer_outcome({"lens": 3, "error": "transport budget exhausted", "attempts": 4})

    assert back.kind == FailureKind.TRANSPORT_ERROR
