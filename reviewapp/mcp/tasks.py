"""The MCP Tasks extension (`io.modelcontextprotocol/tasks`, revision 2026-07-28) on /mcp.

Followed from the extension's own text (modelcontextprotocol/ext-tasks,
`specification/…/tasks.md`, SEP-2663); the parts this server relies on, quoted:

- "Task creation is server-directed: the client signals support by including
  the extension in its per-request capabilities, and the server decides on a
  per-request basis whether to materialize a task." and "A server MUST NOT
  return CreateTaskResult to a client that did not include the extension
  capability on its request, regardless of prior declarations." — so
  `request_review` returns a task only to a 2026-07-28 request that declares
  the extension; every other caller gets the plain result, and `wait_for_review`
  stays for them.
- "Servers MUST set `resultType` to "task" when returning a CreateTaskResult"
  (`CreateTaskResult = Result & Task`: `taskId`, `status`, `statusMessage?`,
  `createdAt`, `lastUpdatedAt`, `ttlMs`, `pollIntervalMs?`).
- "A server MUST NOT return CreateTaskResult until the task is durably created
  — that is, until a tasks/get for the returned taskId would resolve." — a task
  here is its proposal, committed before the tool returns; the task id is the
  proposal's and the caller's ids signed with the server's key (Django's
  `signing`, SECRET_KEY and its fallbacks), so no other row is kept, any
  replica answers, and no third party can guess or enumerate one ("Servers MUST
  generate them with sufficient entropy…").
- tasks/get: "If the status is `completed`, the server MUST return a Task
  object with status `completed` and a `result` field containing the final
  result of the task" whose "structure matches the result type of the
  original request" (a CallToolResult), and "The `resultType` field MUST be set
  to "complete"". Statuses: queued, evaluating and escalated are `working`
  (the `statusMessage` says which, and an escalation's deadline); decided is
  `completed` with the review as `get_review` returns it, signed decision
  included; withdrawn is `cancelled`. No review ever needs `input_required`.
- tasks/cancel: "The server MUST acknowledge the request with an empty result"
  and "Cancellation is cooperative: … MAY ultimately reach a terminal status
  other than cancelled if the work finished before cancellation could take
  effect." — a proposal not yet decided is withdrawn; one already decided stays
  decided, and the acknowledgement says so in its `_meta` (`reviewapp/cancel`:
  `withdrawn`, `message`), the only place an empty result has for it.
- tasks/update: "A server SHOULD ignore any inputResponses responses mapped to
  a key that is not currently outstanding" — none ever is: acknowledged.
- "Invalid or nonexistent taskId: -32602 (Invalid params)" and "Servers MUST
  perform authentication and authorization checks on each task-related
  request": a task id another client's token presents is not found, exactly
  like one that never existed; "Missing required client capabilities: -32021"
  for a request that does not declare the extension.

The SDK (mcp 2.3) has the generic extension API (SEP-2133: `Extension`,
`MethodBinding`, `intercept_tool_call`; on the client `ClientExtension`,
`ResultClaim`, `name_param` for the `Mcp-Name` routing header) but no Tasks
extension of its own, so this module builds it on that API.
"""

import json
from collections.abc import Sequence
from typing import Any

from django.core import signing
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, INVALID_REQUEST, CallToolRequestParams, RequestParams
from pydantic import Field

from reviewapp.review.models import ApiClient

from . import tools
from .auth import calling_client_id
from .db import in_db

EXTENSION_ID = "io.modelcontextprotocol/tasks"
PROTOCOL_VERSIONS = frozenset({"2026-07-28"})
# The `_meta` key of a tasks/cancel acknowledgement: whether the proposal was withdrawn.
CANCEL_META_KEY = "reviewapp/cancel"
TASK_TOOLS = ("request_review",)

_signer = signing.Signer(salt="reviewapp.mcp.task")


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId", min_length=1, max_length=200)


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses", default_factory=dict)


def task_id_for(*, proposal_id: int, client_id: int) -> str:
    return _signer.sign(f"{proposal_id}.{client_id}")


def _proposal_of(task_id: str, client_id: int) -> int:
    """The proposal a task id names, if the calling client is the one it was given to."""
    try:
        proposal_id, owner = _signer.unsign(task_id).split(".")
    except (signing.BadSignature, ValueError):
        raise _not_found() from None
    if int(owner) != client_id:
        raise _not_found()
    return int(proposal_id)


def _not_found() -> MCPError:
    return MCPError(
        code=INVALID_PARAMS,
        message="Failed to retrieve task: Task not found (or it was given to another token)",
    )


def _declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    if ctx.protocol_version not in PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    return bool(
        capabilities and capabilities.extensions and EXTENSION_ID in capabilities.extensions
    )


async def _caller(ctx: ServerRequestContext[Any, Any], scope: str | None) -> int:
    require_client_extension(ctx, EXTENSION_ID)  # -32021 for a client that did not declare it
    try:
        return await calling_client_id(scope)
    except ToolError as exc:  # rate limit, scope: a protocol error on a task method
        raise MCPError(code=INVALID_REQUEST, message=str(exc)) from exc


async def task_get(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
    client_id = await _caller(ctx, ApiClient.Scope.READ)
    proposal_id = _proposal_of(params.task_id, client_id)
    try:
        task = await in_db(tools.task_state, client_id=client_id, proposal_id=proposal_id)
    except ToolError:
        raise _not_found() from None  # no longer visible to this client
    return {"resultType": "complete", "taskId": params.task_id, **task}


async def task_cancel(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
    client_id = await _caller(ctx, ApiClient.Scope.SUBMIT)
    proposal_id = _proposal_of(params.task_id, client_id)
    withdrawn, message = await in_db(
        tools.review_withdraw, client_id=client_id, proposal_id=proposal_id
    )
    return {
        "resultType": "complete",
        "_meta": {CANCEL_META_KEY: {"withdrawn": withdrawn, "message": message}},
    }


async def task_update(
    ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
) -> HandlerResult:
    client_id = await _caller(ctx, ApiClient.Scope.READ)
    proposal_id = _proposal_of(params.task_id, client_id)
    # Known and the caller's, or not found; no review ever asks for input, so any
    # responses answer nothing outstanding and are ignored, as the extension says.
    await in_db(tools.review_status, client_id=client_id, proposal_id=proposal_id)
    return {"resultType": "complete"}


class ReviewTasks(Extension):
    """`request_review` answers with a task to a caller that declared the extension."""

    identifier = EXTENSION_ID

    def methods(self) -> Sequence[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, task_get, protocol_versions=PROTOCOL_VERSIONS),
            MethodBinding(
                "tasks/update", UpdateTaskParams, task_update, protocol_versions=PROTOCOL_VERSIONS
            ),
            MethodBinding(
                "tasks/cancel", TaskParams, task_cancel, protocol_versions=PROTOCOL_VERSIONS
            ),
        ]

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        result = await call_next(ctx)
        if params.name not in TASK_TOOLS or not _declared(ctx):
            return result
        submitted = _structured(result)
        if submitted is None:  # the tool refused (isError): its result says why
            return result
        client_id = int(get_access_token().client_id)  # checked (and counted) by the tool
        task = await in_db(tools.task_state, client_id=client_id, proposal_id=submitted["id"])
        task_id = task_id_for(proposal_id=submitted["id"], client_id=client_id)
        return {"resultType": "task", "taskId": task_id, **_without_result(task)}


def _structured(result: HandlerResult) -> dict | None:
    """A successful tool result's structured content (None for an error result)."""
    body = result.model_dump(by_alias=True) if hasattr(result, "model_dump") else result
    if not isinstance(body, dict) or body.get("isError"):
        return None
    structured = body.get("structuredContent")
    if structured is None and body.get("content"):
        structured = json.loads(body["content"][0]["text"])
    return structured


def _without_result(task: dict) -> dict:
    """The seed state of a new task: a CreateTaskResult carries no `result` (a review
    decided already is read with tasks/get)."""
    return {k: v for k, v in task.items() if k not in ("result", "error")}
