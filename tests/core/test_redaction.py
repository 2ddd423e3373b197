"""A lens failure's message keeps what went wrong and loses keys and account details."""

import pytest

from reviewapp.core.redaction import MESSAGE_LIMIT, capped, redacted

SECRETS = {
    "openai key echoed": (
        "Incorrect API key provided: sk-proj-AbCdEf***************************wXyZ. "
        "You can find your API key at https://platform.openai.com/account/api-keys.",
        ["sk-proj-AbCdEf", "wXyZ"],
    ),
    "anthropic key": ("invalid x-api-key sk-ant-api03-abcdefghijklmnop", ["sk-ant-api03"]),
    "organisation": (
        "Rate limit reached for gpt-4o in organization org-9fKq2LmZp0Xy on tokens per min",
        ["org-9fKq2LmZp0Xy"],
    ),
    "project id": ('{"error": {"project_id": "proj_8x7Yz6Wv5U"}}', ["proj_8x7Yz6Wv5U"]),
    "e-mail": ("quota exceeded for billing@acme-corp.example", ["billing@acme-corp.example"]),
    "bearer echoed": ("rejected header Authorization: Bearer abc123def456", ["abc123def456"]),
    "url credentials": ("could not reach http://svc:topsecret@llm.internal/v1", ["topsecret"]),
    "key = value": ('{"api_key": "k-7781-secret-value"}', ["k-7781-secret-value"]),
    "aws key": ("signature mismatch for AKIAIOSFODNN7EXAMPLE", ["AKIAIOSFODNN7EXAMPLE"]),
    "random blob": (
        "session 8f3kQ9zLr2Vx7Yb1Nc4Md6Pa0We5Tu3Hg expired",
        ["8f3kQ9zLr2Vx7Yb1Nc4Md6Pa0We5Tu3Hg"],
    ),
}


@pytest.mark.parametrize("case", SECRETS)
def test_secrets_and_account_details_are_redacted(case):
    text, secrets = SECRETS[case]

    out = redacted(text)

    assert all(secret not in out for secret in secrets), out
    assert "[redacted]" in out or "topsecret" in text


def test_what_went_wrong_stays():
    text = 'HTTP 404: b\'{"error": {"message": "The model `judge-1` does not exist"}}\''

    assert redacted(text) == text


def test_a_long_message_is_capped_saying_so():
    out = capped("x" * 5000)

    assert len(out) == MESSAGE_LIMIT and out.endswith("…")
    assert capped("short") == "short"
