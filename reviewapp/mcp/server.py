"""The MCP server: its tools, and the ASGI app that serves them at /mcp.

Stateless streamable HTTP (each request stands alone, no session to keep),
so any web process of any replica answers any call; bearer tokens checked,
and every request counted, by `auth.Gate`. The tools are async and do their
database work through `db.in_db`, or in batches (`waits`).
"""

from typing import Annotated, Any, Literal

from django.conf import settings
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from reviewapp.core.blank import shows_nothing
from reviewapp.core.cite import ClaimInput
from reviewapp.core.json_values import value_problem
from reviewapp.review.models import ApiClient

from . import tools
from .auth import Gate, calling_client_id
from .db import Coalesced, Lane, close_all, in_db
from .tasks import ReviewTasks
from .watch import watch

MAX_WAIT_SECONDS = 60

# The review each wait starts with (its status) and ends with (in full), asked in batches.
_waits = Lane("mcp-waits")
waits_started = Coalesced(_waits, tools.review_statuses)
waits_ended = Coalesced(_waits, tools.reviews_read)

ReviewId = Annotated[
    int, Field(ge=1, le=2**63 - 1, description="The review's id, as request_review returned it.")
]


class Cite(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cite: str = Field(
        description="Text quoted verbatim from the proposal's content (or its thought process); "
        "it is grounded to exact offsets, and a cite that does not resolve is reported."
    )
    assessment: Literal["verified", "contested", "refuted"] = Field(
        description="What the lens concludes about the quoted text."
    )
    claim_id: str | None = Field(None, max_length=64, description="Your own id for the claim.")


INSTRUCTIONS = """\
reviewapp decides whether an agent's output can be trusted. Send the output for review with
request_review (pick a panel from list_panels), then wait_for_review until it is decided
(approved or rejected, with a signed decision) or escalated to a human reviewer, who decides
later. A client that speaks the MCP Tasks extension (io.modelcontextprotocol/tasks) gets a
task from request_review instead: tasks/get follows it to the decision, tasks/cancel
withdraws a review not yet decided. get_review reads the verdict of every lens, each lens
that failed and why, and every cite grounded to exact offsets. verify_decision checks a
signed decision's signature. External lenses answer with submit_judgement."""


def _checked(**arguments) -> None:
    """Refuse what the REST API refuses in a body: text no store takes, numbers no
    signature spells, nesting too deep; and empty content."""
    for name, value in arguments.items():
        if found := value_problem(value):
            where = "".join(f"[{part!r}]" for part in found.loc)
            raise ToolError(f"{name}{where}: {found.msg}")
    if "content" in arguments and shows_nothing(arguments["content"]):
        raise ToolError(
            "content: must not be empty (whitespace and zero-width characters count as empty)"
        )


async def request_review(
    panel: Annotated[
        str, Field(min_length=1, max_length=100, description="A panel name from list_panels.")
    ],
    content: Annotated[str, Field(description="The text to review: your agent's output.")],
    external_ref: Annotated[
        str,
        Field(
            min_length=1,
            max_length=200,
            description="Your own unique reference for this piece of work. Sending the same "
            "request again under it returns the same review (safe to retry); a different "
            "request under a used reference is refused.",
        ),
    ],
    metadata: Annotated[
        dict[str, Any] | None, Field(description="Any JSON object to keep with the review.")
    ] = None,
    title: Annotated[str, Field(max_length=300, description="A short title.")] = "",
    thought_process: Annotated[
        str, Field(description="How the agent reached the content; lenses may cite it.")
    ] = "",
) -> dict[str, Any]:
    """Submit text for review by a panel of lenses. Returns the review's id and status
    ("queued" or "evaluating"); then call wait_for_review with the id. To a client that
    declared the Tasks extension it returns a task instead, completed with the review as
    get_review returns it once decided. Needs the 'submit' scope."""
    client_id = await calling_client_id(ApiClient.Scope.SUBMIT)
    submission = {
        "panel": panel,
        "content": content,
        "external_ref": external_ref,
        "metadata": metadata or {},
        "title": title,
        "thought_process": thought_process,
    }
    _checked(**submission)
    return await in_db(tools.review_request, client_id=client_id, **submission)


async def get_review(id: ReviewId) -> dict[str, Any]:  # noqa: A002 (the tool's argument name)
    """Read a review: status ("queued", "evaluating", "decided" or "escalated"), outcome
    ("approved"/"rejected" once decided), the reasons it was escalated, each lens's
    verdict with its claims (cites grounded to UTF-16 offsets of the content), each lens
    that failed with its kind ("timeout", "rate_limited", "deadline", ...) and message,
    the checkers' signed evidence (an inconclusive one says why) and the signed decision.
    An escalated review's "escalation" explains why, naming the failed lenses and the
    inconclusive checkers. Needs the 'read' scope."""
    client_id = await calling_client_id(ApiClient.Scope.READ)
    return await in_db(tools.review_detail, client_id=client_id, proposal_id=id)


async def wait_for_review(
    id: ReviewId,  # noqa: A002
    timeout_s: Annotated[
        float,
        Field(
            ge=0,
            le=MAX_WAIT_SECONDS,
            description=f"How long to wait, in seconds (at most {MAX_WAIT_SECONDS}).",
        ),
    ] = MAX_WAIT_SECONDS,
) -> dict[str, Any]:
    """Wait until a review is decided or escalated, or until timeout_s passes, then return
    it as get_review does. "final" says which: if false, call again. "escalated" means a
    human reviewer decides; keep waiting (it becomes "decided") or come back later.
    Needs the 'read' scope."""
    client_id = await calling_client_id(ApiClient.Scope.READ)
    # Read with the other calls starting (and, below, ending) at once: 1,000 waits
    # ending at their timeout are a few queries, not 1,000 queued for the tools' threads.
    status = await waits_started.get((client_id, id))
    if status not in tools.FINAL:
        # Raises the error a call made when it wakes would get, if the client may
        # no longer read the review then (revoked, or unbound from its lens).
        review = await watch.until_final(id, timeout_s, client_id)
        if review:
            return review  # read by the watch for every call it woke
    return await waits_ended.get((client_id, id))


async def list_panels() -> dict[str, Any]:
    """The panels a review may be requested from ("panels"): name, description, how many
    lens verdicts must agree ("need"), their lenses and checkers, and how long an
    escalation may wait for a person ("review_deadline_seconds", null: no deadline),
    what happens then ("on_deadline": "reject", "approve" or "keep_open"), and the
    guarantee it gives ("guarantee": target and confidence, or null)."""
    await calling_client_id(None)
    return {"panels": await in_db(tools.panel_list)}


async def submit_judgement(
    id: ReviewId,  # noqa: A002
    lens: Annotated[
        str,
        Field(
            min_length=1,
            max_length=100,
            description="The external lens you answer for; it must name your client.",
        ),
    ],
    verdict: Annotated[Literal["pass", "fail"], Field(description="The lens's verdict.")],
    rationale: Annotated[str, Field(description="Why, in a few sentences.")] = "",
    claims: Annotated[
        list[Cite], Field(max_length=500, description="The claims behind the verdict.")
    ] = (),
) -> dict[str, Any]:
    """Deliver an external lens's judgement on a review, once. Only a client the lens
    names may answer for it. Returns the judgement with its cites grounded. Needs the
    'judge' scope."""
    client_id = await calling_client_id(ApiClient.Scope.JUDGE)
    _checked(lens=lens, rationale=rationale, claims=[c.model_dump() for c in claims])
    return await in_db(
        tools.judgement_submit,
        client_id=client_id,
        proposal_id=id,
        lens=lens,
        verdict=verdict,
        rationale=rationale,
        claims=[
            ClaimInput(cite=c.cite, assessment=c.assessment, claim_id=c.claim_id) for c in claims
        ],
    )


async def verify_decision(
    decision: Annotated[
        dict[str, Any],
        Field(
            description='A signed decision as get_review returns it under "decision" '
            "(payload, signature, key_id, hash, ledger_index, ...)."
        ),
    ],
    content: Annotated[
        str | None,
        Field(
            description="The text you are about to act on: its SHA-256 must be the "
            "content_sha256 the decision signed (an approval binds what was approved)."
        ),
    ] = None,
) -> dict[str, Any]:
    """Check a signed decision: its Ed25519 signature against this server's trusted keys,
    its hash, that every field it carries (and each review it carries) says what the
    signed bytes say, and with `content` that it is the text that was decided. "valid"
    is the answer; "problem" says what failed."""
    await calling_client_id(None)
    return await in_db(tools.decision_verify, decision, content)


_READ_ONLY = ToolAnnotations(readOnlyHint=True)
# Each tool and what it promises a client: a retried request_review returns the same
# review (idempotent) and reaches nothing outside; submit_judgement writes, once.
_TOOLS = (
    (request_review, ToolAnnotations(idempotentHint=True, openWorldHint=False)),
    (get_review, _READ_ONLY),
    (wait_for_review, _READ_ONLY),
    (list_panels, _READ_ONLY),
    (submit_judgement, None),
    (verify_decision, _READ_ONLY),
)


def build_server() -> MCPServer:
    server = MCPServer(
        name="reviewapp",
        title="reviewapp",
        instructions=INSTRUCTIONS,
        # The Tasks extension: request_review may answer with a task (tasks.py).
        extensions=[ReviewTasks()],
    )
    for tool, annotations in _TOOLS:
        server.tool(annotations=annotations, structured_output=True)(tool)
    return server


def mcp_app():
    """The ASGI app: POST/GET /mcp behind the API's bearer tokens (401 without one)."""
    inner = build_server().streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        max_request_body_size=settings.REVIEWAPP_API_MAX_BODY_BYTES,
        # The Host header is checked against ALLOWED_HOSTS before this app is reached
        # (reviewapp.asgi), as Django checks it for every other path.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    guarded = Gate(AuthContextMiddleware(RequireAuthMiddleware(inner, required_scopes=[])))

    async def app(scope, receive, send):
        # The lifespan starts the SDK's session manager; requests pass the token check.
        if scope["type"] != "lifespan":
            await guarded(scope, receive, send)
            return

        async def sent(message):
            if message["type"] == "lifespan.shutdown.complete":
                await close_all()  # the connections the database threads keep
            await send(message)

        await inner(scope, receive, sent)

    return app
