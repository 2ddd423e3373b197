"""Whether parsed JSON can be stored and signed as it is, and where it cannot.

Python's json module (and pydantic's parser) accept things the rest of the
pipeline cannot: NUL characters and lone surrogates (PostgreSQL refuses them;
UTF-8 cannot encode them), non-finite numbers (refused by RFC 8785
canonicalisation), integers beyond 2**53 that no double spells (RFC 8785
numbers are doubles) and nesting deep enough to blow the recursion limit.
Every door that takes JSON from outside (the REST API, the MCP server) asks
here before any service sees the data.
"""

import math
import re
from dataclasses import dataclass

from reviewapp.core.signing import MAX_SAFE_INTEGER

MAX_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


def string_problem(value: str) -> str | None:
    """Why `value` cannot be stored, or None."""
    if "\x00" in value:
        return "must not contain NUL characters"
    if _SURROGATE.search(value):
        return "must not contain lone surrogates (U+D800 to U+DFFF)"
    return None


@dataclass(frozen=True)
class ValueProblem:
    """The first value that cannot be taken: where (keys and indexes from the root), why."""

    loc: list
    msg: str
    type: str


def depth_problem(loc: list) -> ValueProblem:
    return ValueProblem(loc, f"JSON nested deeper than {MAX_DEPTH} levels", "json_depth")


def value_problem(data) -> ValueProblem | None:
    """The first value in `data` that cannot be stored and signed as it is, or None."""
    # Iterative on purpose: the point is to survive input a recursive walk would not.
    stack = [(data, [], 0)]
    while stack:
        value, loc, depth = stack.pop()
        if depth > MAX_DEPTH:
            return depth_problem(loc)
        if isinstance(value, str):
            if problem := string_problem(value):
                return ValueProblem(loc, problem, "string_unstorable")
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if abs(value) > MAX_SAFE_INTEGER:
                return ValueProblem(
                    loc,
                    "integers beyond ±(2**53 - 1) must be exactly a double "
                    "(JSON numbers here are IEEE doubles, as in RFC 8785)",
                    "int_unsafe",
                )
        elif isinstance(value, float):
            if not math.isfinite(value):
                return ValueProblem(
                    loc,
                    "numbers must lie within the double range (about ±1.8e308)",
                    "number_out_of_range",
                )
        elif isinstance(value, dict):
            for key, item in value.items():
                if problem := string_problem(key):
                    return ValueProblem([*loc, key], f"key {problem}", "string_unstorable")
                stack.append((item, [*loc, key], depth + 1))
        elif isinstance(value, list):
            stack.extend((item, [*loc, i], depth + 1) for i, item in enumerate(value))
    return None
