"""Demo data: panels, lenses, checkers and proposals that take every route of the routing.

Proposals are submitted through the same service the API uses, so the real
worker evaluates them: a new user sees the queue drain.
"""

import hashlib
import json

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from ..groups import RECONCILERS_GROUP, REVIEWERS_GROUP
from ..models import CheckerConfig, Lens, Panel, RecordedResponse
from ..services.panels import panel_configure
from ..services.proposals import proposal_submit
from . import data

GARBAGE = ["I think it's fine, mostly.", "Honestly it reads well to me."]


def _user(username: str, password: str, *, staff: bool) -> None:
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if created or not user.check_password(password):
        user.set_password(password)
    user.is_staff = staff
    user.is_superuser = staff
    user.save()
    user.groups.add(Group.objects.get(name=REVIEWERS_GROUP))


def _lenses() -> dict[str, Lens]:
    lenses = {
        name: Lens.objects.get_or_create(
            name=name,
            defaults={
                "backend": Lens.Backend.RECORDED,
                "instructions": angle,
                "description": angle,
            },
        )[0]
        for name, angle in data.LENSES.items()
    }
    lenses["house-style-mandate"] = Lens.objects.get_or_create(
        name="house-style-mandate",
        defaults={
            "backend": Lens.Backend.CONSTRAINTS,
            "mandate": data.HOUSE_STYLE,
            "description": "The house-style mandate, checked clause by clause.",
        },
    )[0]
    return lenses


def _checkers() -> dict[str, CheckerConfig]:
    return {
        spec["name"]: CheckerConfig.objects.get_or_create(
            name=spec["name"],
            defaults={k: spec[k] for k in ("kind", "settings", "grants")},
        )[0]
        for spec in data.CHECKERS
    }


def _recorded_answer(judged: dict) -> list:
    if judged["verdict"] == "garbage":
        return GARBAGE
    answer = json.dumps(
        {
            "verdict": judged["verdict"],
            "rationale": f"Judged {judged['verdict']} on the quoted passages.",
            "claims": [
                {
                    "cite": cite,
                    "assessment": "verified" if judged["verdict"] == "pass" else "contested",
                    "note": "",
                }
                for cite in judged["cites"]
            ],
        },
        ensure_ascii=False,
    )
    # The same answer again for each re-quote request: a stubborn evaluator,
    # so a fabricated cite ends dropped and recorded.
    return [answer] * 3


@transaction.atomic
def load_demo(*, credentials: dict[str, tuple[str, str]]) -> dict:
    Group.objects.get_or_create(name=REVIEWERS_GROUP)
    Group.objects.get_or_create(name=RECONCILERS_GROUP)
    _user(*credentials["reviewer"], staff=False)
    _user(*credentials["admin"], staff=True)

    lenses = _lenses()
    checkers = _checkers()
    for spec in data.PANELS:
        if not Panel.objects.filter(name=spec["name"]).exists():
            panel_configure(
                name=spec["name"],
                need=spec["need"],
                lenses=[lenses[name] for name in spec["lenses"]],
                checkers=[checkers[name] for name in spec["checkers"]],
                description=spec["description"],
                grounding_policy=spec["grounding_policy"],
                requires_sign_off=spec["requires_sign_off"],
            )

    proposals = data.proposals()
    created = 0
    for spec in proposals:
        digest = hashlib.sha256(spec["content"].encode()).hexdigest()
        for lens_name, judged in spec["judgements"].items():
            RecordedResponse.objects.get_or_create(
                lens=lenses[lens_name],
                content_sha256=digest,
                defaults={"responses": _recorded_answer(judged)},
            )
        _, was_created = proposal_submit(
            panel_name=spec["panel"],
            content=spec["content"],
            thought_process=spec["thought_process"],
            title=spec["title"],
            external_ref=spec["ref"],
        )
        created += was_created
    return {
        "panels": len(data.PANELS),
        "proposals_created": created,
        "proposals_total": len(proposals),
    }
