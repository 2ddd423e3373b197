"""JSON as the reference's parser (Rust's serde_json) reads it.

Python's json module accepts documents serde_json refuses, so a "must be valid JSON"
clause would pass responses the reference fails:

- numbers outside the double range (`1e400`, `[-1e309]`): Python reads infinity,
  serde_json says "number out of range";
- nesting 128 levels deep or more: serde_json stops at its recursion limit;
- escaped lone surrogates (`"\\ud800"`): Python keeps an unpaired surrogate, serde_json
  refuses it (a Rust string cannot hold one);
- `NaN`, `Infinity` and `-Infinity`, which are not JSON at all.

A repeated key keeps its last value in both, but serde_json has parsed, and so checked,
the values it replaced: `{"a": "\\ud800", "a": 1}` is refused, so the checks here cover
replaced values too.
"""

import json
import math
import re

# serde_json's default recursion limit: the 128th nested array or object is refused.
MAX_DEPTH = 127

_SURROGATE = re.compile("[\ud800-\udfff]")


class NotJson(ValueError):
    """Why serde_json would refuse the text."""


def _number(literal: str) -> int | float:
    if any(c in literal for c in ".eE"):
        value = float(literal)
    else:
        value = int(literal)
        # serde_json keeps integers that fit 64 bits and reads the rest as a double.
        if not -(2**63) <= value < 2**64:
            value = float(literal)
    if isinstance(value, float) and math.isinf(value):
        raise NotJson(f"number out of range: {literal[:40]}")
    return value


def _constant(name: str):
    raise NotJson(f"{name} is not a JSON value")


def loads(text: str):
    """Parse `text` as serde_json would, or raise NotJson saying why not."""
    # Values a repeated key replaced, by the object they were replaced in; the objects
    # stay alive until the walk below, so their ids are not reused.
    replaced: dict[int, list] = {}

    def object_keeping_replaced(pairs: list) -> dict:
        obj = {}
        for key, value in pairs:
            if key in obj:
                replaced.setdefault(id(obj), []).append(obj[key])
            obj[key] = value
        return obj

    try:
        value = json.loads(
            text,
            parse_float=_number,
            parse_int=_number,
            parse_constant=_constant,
            object_pairs_hook=object_keeping_replaced,
        )
    except RecursionError:
        raise NotJson(f"recursion limit exceeded: nested deeper than {MAX_DEPTH} levels") from None
    except NotJson:
        raise
    except ValueError as exc:
        raise NotJson(str(exc)) from None
    # Iterative, so any depth Python's parser managed is measured without recursing.
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise NotJson("lone surrogate in a string escape")
        elif isinstance(item, dict | list):
            if depth + 1 > MAX_DEPTH:
                raise NotJson(f"recursion limit exceeded: nested deeper than {MAX_DEPTH} levels")
            if isinstance(item, dict):
                for key in item:
                    if _SURROGATE.search(key):
                        raise NotJson("lone surrogate in a string escape")
                stack.extend((v, depth + 1) for v in item.values())
                stack.extend((v, depth + 1) for v in replaced.get(id(item), ()))
            else:
                stack.extend((v, depth + 1) for v in item)
    return value
