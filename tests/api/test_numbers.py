"""Numbers in request bodies are IEEE doubles, as RFC 8785 says, and nothing else."""

import pytest
from hypothesis import assume, given

from reviewapp.api.parsing import BODY_LOC, BodyRejected, parse_json
from reviewapp.core.signing import canonical_json
from reviewapp.review.models import Proposal
from tests.support.json_values import JSON_VALUES


def submit_raw(api, panel, metadata_json: str):
    body = f'{{"panel": "{panel.name}", "content": "ok", "metadata": {metadata_json}}}'
    return api.post("/api/proposals", body)


@pytest.mark.parametrize("literal", ["1e309", "-1e309", "1" + "0" * 400])
def test_a_number_beyond_the_double_range_is_a_json_422_naming_the_field(
    api, panel, settings, literal
):
    settings.DEBUG = False

    response = submit_raw(api, panel, f'{{"x": {literal}}}')

    assert response.status_code == 422
    assert response["Content-Type"].startswith("application/json")
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "payload", "metadata", "x"]
    assert "double range" in error["msg"] or "exactly a double" in error["msg"]
    assert not Proposal.objects.exists()


def test_what_a_javascript_rfc_8785_client_sends_for_1e20_is_accepted_as_that_double(api, panel):
    # JSON.stringify / RFC 8785 write 1e20 and 2**60 as plain digits.
    response = submit_raw(api, panel, '{"a": 100000000000000000000, "b": 1152921504606847000}')

    assert response.status_code == 202, response.content
    stored = Proposal.objects.get().metadata
    # jsonb hands big numbers back as ints; they still spell the same doubles.
    assert {k: float(v) for k, v in stored.items()} == {"a": 1e20, "b": float(2**60)}
    assert canonical_json(stored) == b'{"a":100000000000000000000,"b":1152921504606847000}'


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_stay_refused(api, panel, literal):
    response = submit_raw(api, panel, f'{{"x": {literal}}}')

    assert response.status_code == 422
    assert not Proposal.objects.exists()


@given(JSON_VALUES)
def test_any_value_the_api_accepts_re_canonicalises_to_the_same_bytes(value):
    encoded = canonical_json({"metadata": value})
    try:
        parsed = parse_json(encoded, BODY_LOC)
    except BodyRejected as refused:
        # Text PostgreSQL cannot store (NUL) is refused on purpose; numbers never are.
        assume(refused.detail[0]["type"] != "string_unstorable")
        raise
    assert canonical_json(parsed) == encoded
    assert canonical_json(parse_json(canonical_json(parsed), BODY_LOC)) == encoded
