"""Demo data: panels, lenses and proposals that exercise the pipeline's routes."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from ..models import Lens, Panel
from ..services.panels import panel_configure
from ..services.proposals import proposal_submit

REVIEWERS_GROUP = "reviewers"

MANDATE = (
    "must not contain 'guaranteed'; must mention 'refund'; at most 1200 characters"
)

PANELS = [
    {
        "name": "support-answers",
        "description": "Customer support replies: a mandate must hold.",
        "need": 1,
        "lenses": [
            {
                "name": "support-mandate",
                "backend": Lens.Backend.CONSTRAINTS,
                "description": "The support team's written mandate.",
                "mandate": MANDATE,
            }
        ],
    },
]

PROPOSALS = [
    {
        "ref": "demo-001",
        "panel": "support-answers",
        "title": "Refund for a late parcel",
        "content": "We're sorry your parcel was late. You can request a refund from "
        "your order page — it is usually processed within 5 days.",
    },
    {
        "ref": "demo-002",
        "panel": "support-answers",
        "title": "Overpromising delivery",
        "content": "Delivery tomorrow is guaranteed, no matter what.",
    },
]


def _user(username: str, password: str, *, staff: bool) -> None:
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if created or not user.check_password(password):
        user.set_password(password)
    user.is_staff = staff
    user.is_superuser = staff
    user.save()
    user.groups.add(Group.objects.get(name=REVIEWERS_GROUP))


@transaction.atomic
def load_demo(*, credentials: dict[str, tuple[str, str]]) -> dict:
    Group.objects.get_or_create(name=REVIEWERS_GROUP)
    _user(*credentials["reviewer"], staff=False)
    _user(*credentials["admin"], staff=True)

    for spec in PANELS:
        lenses = [
            Lens.objects.get_or_create(
                name=lens_spec["name"],
                defaults={k: v for k, v in lens_spec.items() if k != "name"},
            )[0]
            for lens_spec in spec["lenses"]
        ]
        if not Panel.objects.filter(name=spec["name"]).exists():
            panel_configure(
                name=spec["name"],
                need=spec["need"],
                lenses=lenses,
                description=spec["description"],
            )

    created = 0
    for spec in PROPOSALS:
        _, was_created = proposal_submit(
            panel_name=spec["panel"],
            content=spec["content"],
            title=spec["title"],
            external_ref=spec["ref"],
        )
        created += was_created
    return {"panels": len(PANELS), "proposals_created": created, "proposals_total": len(PROPOSALS)}
