"""The JSON Schema checker kind."""

import pytest

from reviewapp.core.checkers import (
    CheckerConfigError,
    CheckInput,
    CheckVerdict,
    JsonSchemaChecker,
)

# ── json schema ──────────────────────────────────────────────────────────────

SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "string"}}},
    "required": ["items"],
}


@pytest.fixture
def schema_checker():
    return JsonSchemaChecker("json-schema", 1, SCHEMA)


def test_json_schema_pass(schema_checker, key):
    assert schema_checker.check(CheckInput('{"items": ["a", "b"]}'), key).permits_commit


def test_json_schema_fail_says_where(schema_checker, key):
    evidence = schema_checker.check(CheckInput('{"items": ["a", "b", 3, 4]}'), key)
    assert evidence.verdict is CheckVerdict.FAIL
    assert evidence.reason.splitlines() == [
        "at /items/2: 3 is not of type 'string'",
        "at /items/3: 4 is not of type 'string'",
    ]
    missing = schema_checker.check(CheckInput("{}"), key)
    assert missing.reason == "at /: 'items' is a required property"


@pytest.mark.parametrize(
    "content, why",
    [
        ("Here is your JSON: {}", "not valid JSON"),
        ('{"items": [NaN]}', "NaN"),
        ('{"items": [], "items": ["x"]}', "duplicate key 'items'"),
    ],
)
def test_content_that_is_not_json_fails(schema_checker, key, content, why):
    evidence = schema_checker.check(CheckInput(content), key)
    assert evidence.verdict is CheckVerdict.FAIL
    assert why in evidence.reason


def test_an_invalid_schema_is_refused_at_construction():
    with pytest.raises(CheckerConfigError, match="invalid schema"):
        JsonSchemaChecker("json-schema", 1, {"type": "no-such-type"})
    with pytest.raises(CheckerConfigError):
        JsonSchemaChecker("json-schema", 1, {"const": float("nan")})
    with pytest.raises(CheckerConfigError, match="unknown"):
        JsonSchemaChecker("json-schema", 1, {"$schema": "https://example.invalid/dialect"})


def test_schema_errors_come_in_document_order(schema_checker, key):
    items = ", ".join(["3" if i in (2, 10) else '"s"' for i in range(11)])
    evidence = schema_checker.check(CheckInput(f'{{"items": [{items}]}}'), key)
    assert [line.split(":")[0] for line in evidence.reason.splitlines()] == [
        "at /items/2",
        "at /items/10",
    ]


def test_an_unresolvable_ref_is_inconclusive_and_never_fetched(key):
    checker = JsonSchemaChecker("json-schema", 1, {"$ref": "https://example.invalid/s.json"})
    evidence = checker.check(CheckInput("{}"), key)
    assert evidence.verdict is CheckVerdict.INCONCLUSIVE


def test_the_schema_is_bound_into_the_evidence(key):
    other = JsonSchemaChecker("json-schema", 1, {"type": "object"})
    content = CheckInput("{}")
    assert (
        other.check(content, key).digests["settings"]
        != JsonSchemaChecker("json-schema", 1, SCHEMA).check(content, key).digests["settings"]
    )
