"""What the benchmarks submit: the 3-lens recorded panel, its content and answers, who submits."""

from __future__ import annotations

PIPELINE_LENSES = ("bench-accuracy", "bench-tone", "bench-policy")
PIPELINE_MANDATE = "must not contain 'guaranteed'; must not contain 'lorem ipsum'"
# (route, verdicts of the three lenses); weights sum to 10.
PIPELINE_ROUTES = [
    ("approved", ("pass", "pass", "pass"), 5),
    ("approved", ("pass", "pass", "fail"), 2),
    ("panel_rejects", ("fail", "fail", "pass"), 1),
    ("mandate_rejects", ("pass", "pass", "pass"), 1),
    ("lens_failed", ("pass", "pass", "garbage"), 1),
]


def pipeline_panel(name: str = "bench-panel", grounding: str = "reject"):
    """Three recorded lenses (need 2) and one constraints checker, configured as the admin would."""
    from reviewapp.review.models import CheckerConfig, Lens
    from reviewapp.review.services.panels import panel_configure

    lenses = [
        Lens.objects.get_or_create(
            name=lens_name,
            defaults={"backend": Lens.Backend.RECORDED, "instructions": f"Judge as {lens_name}."},
        )[0]
        for lens_name in PIPELINE_LENSES
    ]
    checker = CheckerConfig.objects.get_or_create(
        name="bench-mandate",
        defaults={
            "kind": CheckerConfig.Kind.CONSTRAINTS,
            "settings": {"mandate": PIPELINE_MANDATE},
        },
    )[0]
    return panel_configure(
        name=name, need=2, lenses=lenses, checkers=[checker], grounding_policy=grounding
    )


def pipeline_contents(n: int, *, tag: str = "") -> list[dict]:
    """`n` distinct support replies, each with its route and every lens's recorded answer.

    Cites hit the citation ladder's rungs (exact, quoted, blockquote, label, case
    drift, emphasis), so grounding does real work; the content differs per
    proposal by its ticket line, so each has its own recorded responses.
    """
    import json

    from reviewapp.review.demo.data import SUPPORT_DOCS, _cite_variants

    weighted = [route for route in PIPELINE_ROUTES for _ in range(route[2])]
    out = []
    for i in range(n):
        title, body, thought, cite_a, cite_b = SUPPORT_DOCS[i % len(SUPPORT_DOCS)]
        route, verdicts, _ = weighted[i % len(weighted)]
        content = f"{body}\n\nTicket #{tag}{i:07d}"
        if route == "mandate_rejects":
            content += "\nDelivery next time is guaranteed."
        variants = _cite_variants(cite_a)
        answers = {}
        for lens_i, (lens_name, verdict) in enumerate(zip(PIPELINE_LENSES, verdicts, strict=True)):
            if verdict == "garbage":
                answers[lens_name] = ["I think it's fine, mostly.", "Honestly it reads well."]
                continue
            answer = json.dumps(
                {
                    "verdict": verdict,
                    "rationale": f"Judged {verdict} on the quoted passages.",
                    "claims": [
                        {"cite": variants[(i + lens_i) % len(variants)], "assessment": "verified"},
                        {"cite": cite_b, "assessment": "verified"},
                    ],
                },
                ensure_ascii=False,
            )
            answers[lens_name] = [answer]
        out.append(
            {
                "title": f"{title} ({tag}{i})",
                "content": content,
                "thought_process": thought,
                "route": route,
                "answers": answers,
            }
        )
    return out


def record_answers(items: list[dict]) -> None:
    """Store every item's recorded lens answers in one bulk insert."""
    import hashlib

    from reviewapp.review.models import Lens, RecordedResponse

    lenses = {lens.name: lens for lens in Lens.objects.filter(name__in=PIPELINE_LENSES)}
    rows = [
        RecordedResponse(
            lens=lenses[lens_name],
            content_sha256=hashlib.sha256(item["content"].encode()).hexdigest(),
            responses=answers,
        )
        for item in items
        for lens_name, answers in item["answers"].items()
    ]
    RecordedResponse.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)


def api_token(name: str, scopes: str = "submit,read,review,judge") -> str:
    """A bearer token from `manage.py create_api_token`, as an operator would make one."""
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_api_token", name, "--scopes", scopes, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def reviewer_session(
    username: str = "bench-reviewer", *, staff: bool = False
) -> tuple[object, str]:
    """A reviewer and a logged-in session cookie value that gunicorn will accept."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    group, _ = Group.objects.get_or_create(name="reviewers")
    user, _ = get_user_model().objects.get_or_create(
        username=username, defaults={"is_staff": staff}
    )
    user.groups.add(group)
    client = Client()
    client.force_login(user)
    return user, client.cookies[settings.SESSION_COOKIE_NAME].value
