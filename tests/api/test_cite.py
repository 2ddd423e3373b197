from django.test import Client

from tests.factories import ReviewerFactory

from .conftest import api_with


def test_resolved_cite_reports_code_point_utf16_and_byte_offsets(api):
    source = "Ok 👍🏽 — the answer is **42**."

    response = api.post("/api/cite/resolve", {"source": source, "cite": "the answer is 42"})

    assert response.status_code == 200
    body = response.json()
    start = source.index("the")
    assert body == {
        "resolved": True,
        "text": "the answer is **42",
        "start": start,
        "end": start + len("the answer is **42"),
        # 👍🏽 is two code points, four UTF-16 units and eight UTF-8 bytes; — is three bytes.
        "start_utf16": start + 2,
        "end_utf16": start + 2 + len("the answer is **42"),
        "start_byte": start + 6 + 2,
        "end_byte": start + 6 + 2 + len("the answer is **42"),
    }


def test_unresolved_cite_has_no_offsets(api):
    response = api.post("/api/cite/resolve", {"source": "Paris.", "cite": "Berlin"})

    assert response.json() == {
        "resolved": False,
        "text": None,
        "start": None,
        "end": None,
        "start_utf16": None,
        "end_utf16": None,
        "start_byte": None,
        "end_byte": None,
    }


def test_any_scope_may_resolve_cites(db):
    response = api_with("submit").post("/api/cite/resolve", {"source": "a b", "cite": "b"})

    assert response.status_code == 200


def test_reviewer_session_may_resolve_cites(db):
    client = Client()
    client.force_login(ReviewerFactory())

    response = client.post(
        "/api/cite/resolve", {"source": "a b", "cite": "b"}, content_type="application/json"
    )

    assert response.json()["resolved"] is True


def test_resolving_needs_credentials(db):
    response = Client().post(
        "/api/cite/resolve", {"source": "a b", "cite": "b"}, content_type="application/json"
    )

    assert response.status_code == 401


def test_cite_request_missing_the_source_is_422(api):
    assert api.post("/api/cite/resolve", {"cite": "b"}).status_code == 422
