"""Every URL pattern of the project, as concrete URLs a test can request.

Walks `get_resolver()` through every include (admin, the API, the review
pages, whatever is mounted next), so a view added tomorrow is covered by the
access tests without anyone listing it. Path parameters are filled with ids of
real rows where the route says which kind (`proposals/<id>`, `escalations/<id>`,
`decisions/<id>`, `admin/<app>/<model>/<object_id>/`), so a 404 cannot hide a
view that forgot to check who is asking.
"""

from __future__ import annotations

import re
import re._constants as sre_c
import re._parser as sre_parse
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter
from django.urls.resolvers import RegexPattern, RoutePattern

_ROUTE_PARAM = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
_KINDS = ("proposals", "escalations", "decisions")


@dataclass(frozen=True)
class Route:
    template: str  # the URL with {placeholders} for ids filled in at request time
    name: str  # "namespace:name", or the pattern text for unnamed patterns
    regex: str  # the full pattern (for allow-lists that match unnamed catch-alls)

    def url(self, ids: dict[str, int]) -> str:
        return "/" + self.template.format_map(_Ids(ids))

    def __str__(self) -> str:
        return f"/{self.template} ({self.name})"


class _Ids(dict):
    def __missing__(self, key: str) -> str:
        return "1"


def _placeholder(literal_before: str, name: str) -> str:
    """Which row a path parameter names, from the route text before it."""
    parts = [p for p in literal_before.split("/") if p and "{" not in p]
    if name == "content_type_id":
        return "{contenttype}"
    if parts and parts[-1] in _KINDS:
        return "{" + parts[-1] + "}"
    if len(parts) >= 2 and parts[0] == "admin":
        return "{admin_" + parts[-1] + "}"  # admin/<app>/<model>/<object_id>/
    return "{" + parts[-1] + "}" if parts else "{id}"


def _route_sample(route: str, converters: dict, before: str) -> str:
    out, last = [], 0
    for match in _ROUTE_PARAM.finditer(route):
        out.append(route[last : match.start()])
        name = match.group("name")
        converter = converters.get(name)
        id_like = isinstance(converter, IntConverter) or name.endswith("id") or name in ("pk", "id")
        if id_like:
            out.append(_placeholder(before + "".join(out), name))
        else:
            out.append("x")
        last = match.end()
    out.append(route[last:])
    return "".join(out)


def _class_sample(items) -> str:
    for op, av in items:
        if op is sre_c.LITERAL:
            return chr(av)
        if op is sre_c.RANGE:
            return chr(av[0])
        if op is sre_c.CATEGORY:
            return {"CATEGORY_DIGIT": "1", "CATEGORY_SPACE": " "}.get(str(av), "x")
    return "x"


def _regex_sample(items, names: dict[int, str]) -> str:
    """A short string the parsed regex matches (enough for URL patterns)."""
    out = []
    for op, av in items:
        if op is sre_c.LITERAL:
            out.append(chr(av))
        elif op is sre_c.NOT_LITERAL:
            out.append("y" if chr(av) == "x" else "x")
        elif op is sre_c.ANY:
            out.append("x")
        elif op is sre_c.IN:
            out.append(_class_sample(av))
        elif op is sre_c.BRANCH:
            out.append(_regex_sample(av[1][0], names))
        elif op is sre_c.SUBPATTERN:
            group, _, _, sub = av
            sample = _regex_sample(sub, names)
            out.append(sample or ("x" if names.get(group) else ""))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            low, high, sub = av
            out.append(_regex_sample(sub, names) * max(low, min(1, high)))
        elif op is sre_c.AT:
            continue
        else:
            raise ValueError(f"cannot sample regex construct {op}")
    return "".join(out)


def _segment(pattern, before: str) -> str:
    if isinstance(pattern, RoutePattern):
        return _route_sample(str(pattern), pattern.converters, before)
    if isinstance(pattern, RegexPattern):
        parsed = sre_parse.parse(pattern.regex.pattern)
        names = {v: k for k, v in parsed.state.groupdict.items()}
        sample = _regex_sample(list(parsed), names)
        if not pattern.regex.search(sample):
            raise ValueError(f"sampled {sample!r} does not match {pattern.regex.pattern!r}")
        return sample
    raise TypeError(f"unknown pattern type {type(pattern)}")


def all_routes() -> list[Route]:
    routes: dict[str, Route] = {}

    def walk(resolver: URLResolver, before: str, regex: str, namespace: list[str]) -> None:
        for entry in resolver.url_patterns:
            segment = _segment(entry.pattern, before)
            pattern_text = regex + str(entry.pattern)
            if isinstance(entry, URLResolver):
                walk(
                    entry,
                    before + segment,
                    pattern_text,
                    namespace + ([entry.namespace] if entry.namespace else []),
                )
            elif isinstance(entry, URLPattern):
                name = ":".join(namespace + [entry.name]) if entry.name else pattern_text
                template = before + segment
                routes.setdefault(template, Route(template, name, pattern_text))

    walk(get_resolver(), "", "", [])
    return sorted(routes.values(), key=lambda r: r.template)
