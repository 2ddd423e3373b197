"""A checker that validates the proposal as strict JSON against a JSON Schema."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .contract import Checker, CheckInput, Judgement
from .errors import CheckerConfigError


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _json_pointer(path: Iterable[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path) or "/"


class JsonSchemaChecker(Checker):
    """The proposal content must be JSON valid against ``schema``.

    Content that is not JSON is the proposal's fault, so it fails, with the
    parse error as reason. Strict JSON: NaN/Infinity and duplicate keys are
    refused, since parsers disagree about what they mean. ``format`` stays an
    annotation (not asserted) because its checks depend on which optional
    libraries happen to be installed, and a verdict must not. ``$ref`` is
    never fetched over the network; an unresolvable one is INCONCLUSIVE.
    """

    MAX_ERRORS = 20

    def __init__(self, name: str, version: int, schema: Mapping[str, Any]) -> None:
        # Here, not at module level: every worker imports the checkers, few build this one.
        import jsonschema

        super().__init__(name, version, settings={"schema": schema})
        if not isinstance(schema, Mapping | bool):
            raise CheckerConfigError(f"checker {name!r}: a schema is an object or a boolean")
        try:
            validator_class = jsonschema.validators.validator_for(schema, default=None)
        except TypeError:  # an unhashable "$schema"
            validator_class = None
        if validator_class is None:
            if isinstance(schema, Mapping) and "$schema" in schema:
                raise CheckerConfigError(f"checker {name!r}: unknown $schema {schema['$schema']!r}")
            # Pinned rather than "latest", so upgrading jsonschema cannot change a verdict.
            validator_class = jsonschema.Draft202012Validator
        try:
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise CheckerConfigError(f"checker {name!r}: invalid schema: {exc.message}") from exc
        self.schema = schema
        self._validator = validator_class(schema)

    def judge(self, inputs: CheckInput) -> Judgement:
        try:
            document = json.loads(
                inputs.content,
                object_pairs_hook=_object_without_duplicates,
                parse_constant=_refuse_constant,
            )
        except ValueError as exc:
            return Judgement.failed(f"the proposal is not valid JSON: {exc}")
        # In document order (array indices numerically), so a reader can follow along.
        errors = sorted(
            self._validator.iter_errors(document),
            key=lambda e: ([(isinstance(p, str), p) for p in e.absolute_path], e.message),
        )
        if not errors:
            return Judgement.passed()
        lines = [
            f"at {_json_pointer(e.absolute_path)}: {e.message}" for e in errors[: self.MAX_ERRORS]
        ]
        if len(errors) > self.MAX_ERRORS:
            lines.append(f"… and {len(errors) - self.MAX_ERRORS} more")
        return Judgement.failed("\n".join(lines))
