"""Every failure comes out as one of the client's own errors, whatever the server does."""

import pytest
from reviewapp_client import (
    APIConnectionError,
    ApiError,
    APIResponseValidationError,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RequestTooLargeError,
    ReviewappError,
    UnprocessableEntityError,
)

from tests.clients.hostile import Hostile, Raw, Reply, call, refused_url

KINDS = ["sync", "async"]
DEEP = "[" * 100_000 + "]" * 100_000
MALFORMED = {
    "html": "<html><body>502 Bad Gateway</body></html>",
    "empty": "",
    "not utf-8": b"\xff\xfe{",
    "deeply nested": DEEP,
    "a list": "[]",
    "a string": '"ok"',
    "missing keys": '{"id": 7}',
    "wrong types": '{"id": "7", "status": 1, "items": {}, "next_cursor": 5}',
    "a bool for an int": '{"id": true, "status": "queued", "url": "/x"}',
    "nested junk": '{"id": 7, "items": [' + DEEP + "], " + '"next_cursor": null}',
}
# Every call, with arguments that pass the client's own checks.
CALLS = {
    "get": ((7,), {}),
    "submit": ((), {"panel": "p", "content": "c", "external_ref": "r"}),
    "list_proposals": ((), {}),
    "list_escalations": ((), {}),
    "list_decisions": ((), {}),
    "get_decision": ((3,), {}),
    "decide": ((3, "approved", "Checked."), {}),
    "judge": ((7,), {"lens": "legal", "verdict": "pass"}),
    "keys": ((), {}),
    "list_webhooks": ((), {}),
    "create_webhook": (("https://example.com/hook", ["proposal.decided"]), {}),
    "get_webhook": ((2,), {}),
    "test_webhook": ((2,), {}),
    "wait": ((7,), {"timeout": 1}),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("method", "body"),
    [
        pytest.param(method, body, id=f"{method}-{name}")
        for method in CALLS
        for name, body in MALFORMED.items()
        if (method, name) != ("keys", "a list")  # an empty list of keys is an answer
    ],
)
def test_a_malformed_success_answer_is_a_response_validation_error(kind, method, body):
    args, kwargs = CALLS[method]
    with Hostile(Reply(200, body)) as server:
        with pytest.raises(APIResponseValidationError) as raised:
            call(kind, server.url, method, *args, **kwargs)
    assert raised.value.status == 200


def test_the_validation_error_names_the_field_that_is_wrong():
    with Hostile(Reply(200, '{"items": [{"id": 1}], "next_cursor": null}')) as server:
        with pytest.raises(APIResponseValidationError, match=r"items\[0\]\.status is missing"):
            call("sync", server.url, "list_proposals")


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (413, RequestTooLargeError),
        (422, UnprocessableEntityError),
        (429, RateLimitError),
        (500, InternalServerError),
        (503, InternalServerError),
        (418, APIStatusError),
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_each_status_has_its_error_class_carrying_the_apis_detail(kind, status, error_class):
    with Hostile(Reply(status, '{"detail": "said the server"}')) as server:
        with pytest.raises(error_class) as raised:
            call(kind, server.url, "get", 7)
    assert raised.value.status == status and raised.value.detail == "said the server"
    assert isinstance(raised.value, ApiError)  # the name before the classes per status


def test_a_422_keeps_its_list_of_field_errors_and_says_them_in_one_line():
    detail = '{"detail": [{"loc": ["body", "panel"], "msg": "no active panel", "type": "x"}]}'
    with Hostile(Reply(422, detail)) as server:
        with pytest.raises(UnprocessableEntityError, match="body.panel: no active panel") as e:
            call("sync", server.url, "submit", panel="p", content="c", external_ref="r")
    assert e.value.detail[0]["loc"] == ["body", "panel"]


@pytest.mark.parametrize("body", [DEEP, "<html>gateway</html>", "", '{"detail": {"x": 1}}'])
def test_an_error_status_with_a_body_that_is_not_the_apis_still_gives_its_class(body):
    with Hostile(Reply(404, body)) as server:
        with pytest.raises(NotFoundError) as raised:
            call("sync", server.url, "get", 7)
    assert isinstance(raised.value.detail, str)


HOSTILE = {
    "hang-up": Raw(b""),
    "garbage status line": Raw(b"NOT HTTP AT ALL\r\n\r\n"),
    "short body": Raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}"),
    "bad content-length": Raw(b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n{}"),
    "bad gzip": Raw(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}"),
    "bad retry-after": Reply(503, "{}", {"Retry-After": "\x00nan"}),
    "deeply nested 200": Reply(200, DEEP),
    "slow": Reply(200, "{}", delay=2),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reply", list(HOSTILE.values()), ids=list(HOSTILE))
@pytest.mark.parametrize("method", ["get", "submit", "list_proposals", "decide", "wait"])
def test_nothing_raw_escapes(kind, reply, method):
    args, kwargs = CALLS[method]
    kwargs = {**kwargs, "timeout": 0.5}
    with Hostile(reply) as server:
        with pytest.raises(ReviewappError):
            call(kind, server.url, method, *args, client_options={"max_retries": 1}, **kwargs)


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_connection_is_an_api_connection_error_after_the_retries(kind):
    with pytest.raises(APIConnectionError) as raised:
        call(kind, refused_url(), "get", 7, client_options={"max_retries": 2})
    assert "ConnectError" in str(raised.value)


@pytest.mark.parametrize("kind", KINDS)
def test_wait_on_a_refused_connection_ends_at_its_timeout(kind):
    took = []
    with pytest.raises(ReviewappError):
        call(kind, refused_url(), "wait", 7, timeout=1, poll=0.1, took=took)
    assert took[0] < 1.5
