"""How a lens judges a proposal with a chat model, by kind:

- ``prompt``: the judgement's shape and the messages that ask for it;
- ``answer``: reading the judgement out of the model's text;
- ``transport``: the chat-completions transports and their errors;
- ``loop``: the judge loop and its budgets.

The public names are importable from here.
"""

from reviewapp.core.judging.answer import (
    MalformedJudgement,
    ParsedJudgement,
    answer_after_reasoning,
    parse_judgement,
)
from reviewapp.core.judging.loop import (
    Backoff,
    FailureKind,
    JudgeOutcome,
    LensFailed,
    judge_steps,
    run_judge,
)
from reviewapp.core.judging.prompt import (
    ASSESSMENTS,
    FENCE_TOKEN_BYTES,
    JUDGEMENT_SCHEMA,
    RESPONSE_SHAPE,
    VERDICTS,
    build_messages,
    fence_markers,
)
from reviewapp.core.judging.transport import (
    RESPONSE_FORMATS,
    ChatTransport,
    PermanentTransportError,
    RateLimited,
    RecordedTransport,
    TransientTransportError,
    TransportError,
    UnusableCompletion,
)

__all__ = [
    "ASSESSMENTS",
    "FENCE_TOKEN_BYTES",
    "JUDGEMENT_SCHEMA",
    "RESPONSE_FORMATS",
    "RESPONSE_SHAPE",
    "VERDICTS",
    "Backoff",
    "ChatTransport",
    "FailureKind",
    "JudgeOutcome",
    "LensFailed",
    "MalformedJudgement",
    "ParsedJudgement",
    "PermanentTransportError",
    "RateLimited",
    "RecordedTransport",
    "TransientTransportError",
    "TransportError",
    "UnusableCompletion",
    "answer_after_reasoning",
    "build_messages",
    "fence_markers",
    "judge_steps",
    "parse_judgement",
    "run_judge",
]
