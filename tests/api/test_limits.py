"""Bad input and limits: always a JSON 4xx a client can act on, and nothing written."""

import json

import pytest

from reviewapp.review.models import Proposal


def raw_post(api, body: str | bytes, **extra):
    return api.post("/api/proposals", body, **extra)


def test_body_over_the_limit_is_413(api, panel, settings):
    settings.REVIEWAPP_API_MAX_BODY_BYTES = 1000

    response = api.post("/api/proposals", {"panel": panel.name, "content": "x" * 2000})

    assert response.status_code == 413
    assert "1000 bytes" in response.json()["detail"]


def test_declared_length_over_the_limit_is_413_without_reading_the_body(api, panel, settings):
    settings.REVIEWAPP_API_MAX_BODY_BYTES = 1000
    body = json.dumps({"panel": panel.name, "content": "small"})

    response = raw_post(api, body, CONTENT_LENGTH="5000")

    assert response.status_code == 413


def test_body_over_djangos_own_upload_limit_is_413_json(api, panel, settings):
    settings.REVIEWAPP_API_MAX_BODY_BYTES = 10 * 1024 * 1024
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000

    response = api.post("/api/proposals", {"panel": panel.name, "content": "x" * 2000})

    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")


def test_declared_length_shorter_than_the_body_reads_only_what_was_declared(api, panel):
    body = json.dumps({"panel": panel.name, "content": "x" * 500})

    response = raw_post(api, body, CONTENT_LENGTH="20")

    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "json_invalid"


def test_missing_content_length_is_an_empty_body_and_422(api, panel):
    body = json.dumps({"panel": panel.name, "content": "x"})

    response = raw_post(api, body, CONTENT_LENGTH="")

    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "payload"]


def test_content_length_that_is_not_a_number_is_400(api, panel):
    response = raw_post(api, "{}", CONTENT_LENGTH="lots")

    assert response.status_code == 400
    assert "Content-Length" in response.json()["detail"]


def test_malformed_json_is_422(api, db):
    response = raw_post(api, '{"panel": "p", "content": ')

    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "json_invalid"


def test_body_that_is_not_utf8_is_422(api, db):
    response = raw_post(api, b'{"panel": "p", "content": "\xff"}')

    assert response.status_code == 422


def test_lone_surrogate_is_422_naming_the_field(api, panel):
    response = raw_post(api, f'{{"panel": "{panel.name}", "content": "ok \\ud800"}}')

    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "payload", "content"]
    assert "surrogate" in error["msg"]


def test_nul_character_is_422_naming_the_field(api, panel):
    response = api.post("/api/proposals", {"panel": panel.name, "content": "ok", "title": "a\x00b"})

    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "payload", "title"]
    assert "NUL" in error["msg"]


def test_nul_character_deep_in_metadata_is_422_naming_where(api, panel):
    metadata = {"runs": [{"ok": "fine"}, {"note": "bad\x00"}]}

    response = api.post(
        "/api/proposals", {"panel": panel.name, "content": "ok", "metadata": metadata}
    )

    assert response.json()["detail"][0]["loc"] == [
        "body",
        "payload",
        "metadata",
        "runs",
        1,
        "note",
    ]


def test_json_nested_ten_thousand_levels_is_422(api, db):
    response = raw_post(api, "[" * 10_000 + "]" * 10_000)

    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "json_depth"


def test_metadata_nested_past_the_depth_limit_is_422(api, panel):
    metadata = {"a": "leaf"}
    for _ in range(100):
        metadata = {"a": metadata}

    response = api.post(
        "/api/proposals", {"panel": panel.name, "content": "ok", "metadata": metadata}
    )

    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "json_depth"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_json_numbers_are_422(api, panel, literal):
    body = f'{{"panel": "{panel.name}", "content": "ok", "metadata": {{"x": {literal}}}}}'

    assert raw_post(api, body).status_code == 422


def test_an_integer_beyond_two_to_the_53_that_no_double_spells_is_422(api, panel):
    response = api.post(
        "/api/proposals", {"panel": panel.name, "content": "ok", "metadata": {"n": 2**53 + 1}}
    )

    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "payload", "metadata", "n"]
    assert "exactly a double" in response.json()["detail"][0]["msg"]


def test_over_long_title_is_422(api, panel):
    response = api.post(
        "/api/proposals", {"panel": panel.name, "content": "ok", "title": "t" * 301}
    )

    assert response.status_code == 422


def test_path_id_beyond_bigint_is_422(api, db):
    assert api.get(f"/api/proposals/{2**64}").status_code == 422


BAD_BODIES = {
    "malformed": "{",
    "surrogate": '{"panel": "PANEL", "content": "\\udfff"}',
    "nul": '{"panel": "PANEL", "content": "\\u0000"}',
    "deep": '{"panel": "PANEL", "content": "x", "metadata": ' + "[" * 5000 + "]" * 5000 + "}",
    "empty-content": '{"panel": "PANEL", "content": ""}',
    "unknown-panel": '{"panel": "nope", "content": "x"}',
    "wrong-type": '{"panel": "PANEL", "content": ["x"]}',
}


@pytest.mark.parametrize("body", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_rejected_submission_writes_nothing(api, panel, body):
    response = raw_post(api, body.replace("PANEL", panel.name))

    assert 400 <= response.status_code < 500
    assert "detail" in response.json()
    assert Proposal.objects.count() == 0


def test_oversized_submission_writes_nothing(api, panel, settings):
    settings.REVIEWAPP_API_MAX_BODY_BYTES = 100

    api.post("/api/proposals", {"panel": panel.name, "content": "x" * 200})

    assert Proposal.objects.count() == 0
