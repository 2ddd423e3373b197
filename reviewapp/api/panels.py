"""The panels a client may submit to, and what each does with a proposal."""

from typing import Literal

from ninja import Field, Router, Schema

from reviewapp.serializers import panel_out, panels_open

from .auth import ApiAuth
from .schemas import OnDeadline, errors

router = Router(tags=["panels"])


class PanelLensOut(Schema):
    name: str
    backend: Literal["llm", "constraints", "external", "recorded"]


class PanelOut(Schema):
    name: str = Field(description="What `POST /api/proposals` names as `panel`.")
    description: str
    need: int = Field(description="Lens verdicts that must agree for the panel to decide.")
    lenses: list[PanelLensOut] = Field(description="In the panel's order.")
    checkers: list[str]
    requires_sign_off: bool = Field(description="A reached pass still goes to a person.")
    reviews_needed: int = Field(description="Independent human reviews an escalation needs.")
    external_deadline_seconds: int = Field(description="How long external lenses are awaited.")
    review_deadline_seconds: int | None = Field(
        description="How long an escalation may wait for a person; null: until someone decides."
    )
    on_deadline: OnDeadline | None = Field(
        description="What the review deadline does: `reject` or `approve` (a decision signed "
        "by the server with basis `fallback`) or `keep_open` (reviewers are reminded). Null "
        "without a deadline."
    )


class PanelListOut(Schema):
    items: list[PanelOut]


@router.get(
    "/panels",
    auth=ApiAuth(),
    response={200: PanelListOut, **errors()},
    summary="The panels a proposal may be submitted to",
    description="Active panels, by name: their lenses and quorum, and their review deadline "
    "(`review_deadline_seconds`, `on_deadline`), so an agent knows how long it may wait.",
)
def panel_list(request):
    return {"items": [panel_out(panel) for panel in panels_open()]}
