"""Following a review as an MCP task (the `io.modelcontextprotocol/tasks` extension).

reviewapp's MCP server answers `request_review` with a task to a client that
declares the Tasks extension (revision 2026-07-28). With the official `mcp` SDK
(`pip install "reviewapp-client[mcp]"`)::

    from mcp import Client
    from reviewapp_client.mcp_tasks import ReviewTasks

    async with Client(transport, extensions=[ReviewTasks()]) as client:
        result = await client.call_tool("request_review", {...})  # the decided review

`ReviewTasks()` declares the extension and follows the task it gets back:
`tasks/get` every `pollIntervalMs` until the review is decided (the result is
what `get_review` returns, signed decision included) or withdrawn, and
`call_tool` returns that, as if the call had waited. To keep the task instead
(a human may take days: persist its id and come back), call with
`allow_claimed=True`, and use `task_get` / `task_cancel` on its `task_id`.

The SDK has the generic extension API but no Tasks extension of its own; this
is that extension's client half for reviewapp, written to the extension's text.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

import anyio
from mcp import types
from mcp.client import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from pydantic import Field

EXTENSION_ID = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")
CANCEL_META_KEY = "reviewapp/cancel"
DEFAULT_POLL_S = 5.0


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class Task(types.Result):
    """A task's state, as `tasks/get` returns it (a `DetailedTask`)."""

    task_id: str = Field(alias="taskId")
    status: str
    status_message: str | None = Field(default=None, alias="statusMessage")
    created_at: str = Field(alias="createdAt")
    last_updated_at: str = Field(alias="lastUpdatedAt")
    ttl_ms: int | None = Field(default=None, alias="ttlMs")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


class CreatedTask(Task):
    """What `request_review` returns to a client that declared the extension."""

    result_type: Literal["task"] = Field(default="task", alias="resultType")


class _TaskRequest(types.Request[TaskParams, Any]):
    params: TaskParams
    # The extension: "the client MUST set the Mcp-Name header to the value of params.taskId".
    name_param = "taskId"


class GetTaskRequest(_TaskRequest):
    method: Literal["tasks/get"] = "tasks/get"


class CancelTaskRequest(_TaskRequest):
    method: Literal["tasks/cancel"] = "tasks/cancel"


class TaskFailed(RuntimeError):
    """The task ended `failed`: a protocol error while it ran (its `error` says which)."""


async def task_get(session: ClientSession, task_id: str) -> Task:
    """The task's state now."""
    return await session.send_request(GetTaskRequest(params=TaskParams(taskId=task_id)), Task)


async def task_cancel(session: ClientSession, task_id: str) -> tuple[bool, str]:
    """Withdraw the review behind a task, unless it is decided: (withdrawn, what happened)."""
    ack = await session.send_request(
        CancelTaskRequest(params=TaskParams(taskId=task_id)), types.Result
    )
    said = (ack.meta or {}).get(CANCEL_META_KEY, {})
    return bool(said.get("withdrawn")), str(said.get("message", ""))


async def task_wait(
    session: ClientSession, task_id: str, *, timeout_s: float | None = None
) -> Task:
    """Poll the task, at the interval the server asks, until it is terminal (or `timeout_s`
    passes: then its last state)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        task = await task_get(session, task_id)
        if task.terminal:
            return task
        pause = (task.poll_interval_ms or DEFAULT_POLL_S * 1000) / 1000
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return task
            pause = min(pause, left)
        await anyio.sleep(pause)


def task_outcome(task: Task) -> types.CallToolResult:
    """A terminal task as the call's own result: the decided review, or an error result
    saying it was withdrawn. A `failed` task raises `TaskFailed`."""
    if task.status == "completed":
        return types.CallToolResult.model_validate(task.result)
    if task.status == "cancelled":
        message = task.status_message or "the review was withdrawn"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )
    raise TaskFailed(f"task {task.task_id} failed: {task.error or task.status_message}")


class ReviewTasks(ClientExtension):
    """Declares the Tasks extension and follows `request_review`'s task to its end."""

    identifier = EXTENSION_ID

    def __init__(self, *, timeout_s: float | None = None) -> None:
        self.timeout_s = timeout_s

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._follow)]

    async def _follow(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        task = await task_wait(ctx.session, created.task_id, timeout_s=self.timeout_s)
        if not task.terminal:
            text = f"still {task.status} after {self.timeout_s} s: {task.status_message or ''}"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)],
                structured_content={"task_id": task.task_id, "status": task.status},
                is_error=True,
            )
        return task_outcome(task)
