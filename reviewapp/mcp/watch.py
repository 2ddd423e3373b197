"""Waiting for proposals to become final, for any number of calls, on one poll.

Each waiting call registers its proposal and sleeps on an event. While any
call waits, one task per process asks the database which of the watched
proposals are decided or escalated — one short query every `TICK` seconds,
whatever the number of waiters — and reads those in full in the same trip,
so a woken call returns its review at once, without a database call of its
own (200 woken calls queueing for `db.DB_THREADS` threads made the last of
them return seconds late). A waiting call holds no thread and no database
connection. On PostgreSQL the transaction that makes a proposal final also
sends a NOTIFY (`review.final_notice`), delivered at its commit; the watch
LISTENs on a connection of its own and, when one arrives, reads at once the
notified proposals that calls wait on (only those: a notice for a proposal
nobody waits on costs no query), so a call returns about a read after the
commit. The tick remains for what a notification misses (the listening
connection broke, or the proposal became final before the first LISTEN) and
is all there is on SQLite. While anything is watched the poll keeps one
connection and the listener another. A call that may no longer read its review
when it wakes (its token revoked, or the proposal no longer visible to its
client: unbound from the lens that showed it) gets the error a call made then
would get instead of the review (asked for every call woken at once in a
constant number of queries, `tools.woken_refusals`).
"""

import asyncio
import logging
import math

import anyio
from mcp.server.mcpserver.exceptions import ToolError

from reviewapp.review.final_notice import CHANNEL

from .db import Lane, Listener
from .tools import final_among, final_reviews, woken_refusals

TICK = 0.05

log = logging.getLogger(__name__)


class _Waiter:
    def __init__(self, client_id: int) -> None:
        self.client_id = client_id
        self.event = anyio.Event()
        self.review: dict | None = None
        self.refusal: str | None = None  # the message, raised afresh in each call


class Watch:
    def __init__(self) -> None:
        self._waiting: dict[int, set[_Waiter]] = {}
        self._poller: asyncio.Task | None = None
        self._lane = Lane("mcp-watch")
        self._listener = Listener("mcp-listen", CHANNEL)

    async def until_final(self, proposal_id: int, timeout_s: float, client_id: int) -> dict | None:
        """The review (as `tools.review_detail` has it) once the proposal is final;
        None if `timeout_s` passes first. Raises the `ToolError` a call made now would get
        if the client may no longer read it (`tools.woken_refusals`)."""
        waiter = _Waiter(client_id)
        self._waiting.setdefault(proposal_id, set()).add(waiter)
        loop = asyncio.get_running_loop()
        # A poller belongs to its loop: a server started afresh (a new loop) starts its own.
        if self._poller is None or self._poller.get_loop() is not loop:
            self._poller = loop.create_task(self._poll())
        try:
            with anyio.move_on_after(timeout_s):
                await waiter.event.wait()
        finally:
            waiters = self._waiting.get(proposal_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiting[proposal_id]
        if waiter.refusal is not None:
            raise ToolError(waiter.refusal)
        return waiter.review

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        ticked = -math.inf  # when every watched proposal was last read
        notified: set[int] = set()
        try:
            while self._waiting:
                if ticking := loop.time() - ticked >= TICK:
                    ticked = loop.time()
                    proposal_ids = list(self._waiting)
                else:
                    # Woken early by a NOTIFY: read only the proposals it names that a
                    # call waits on (none: no query), not every watched one.
                    proposal_ids = [pid for pid in notified if pid in self._waiting]
                if proposal_ids:
                    await self._wake(proposal_ids, ticking=ticking)
                notified = await self._pause()
        finally:
            # No await between the loop's last check and this: a waiter arriving
            # now finds no poller and starts one.
            self._poller = None
        # Nothing watched: no connection kept either.
        await self._lane.close()
        await self._listener.close()

    async def _wake(self, proposal_ids: list[int], *, ticking: bool) -> None:
        """Wake the calls waiting on those of `proposal_ids` that are final."""
        clients_of = {pid: {w.client_id for w in self._waiting[pid]} for pid in proposal_ids}
        try:
            final, refusals = await self._lane.run(_read_woken, clients_of, ticking)
        except Exception:
            # A database outage must not end the watch: the waiters time out
            # or the next tick finds their proposals.
            log.warning("could not read which proposals are final", exc_info=True)
            return
        for proposal_id, review in final.items():
            for waiter in self._waiting.pop(proposal_id, ()):
                # A call that began waiting during the read was checked as it
                # started; a refusal of its client on this proposal holds for it too.
                refusal = refusals.get((proposal_id, waiter.client_id))
                if refusal is None:
                    waiter.review = dict(review)
                else:
                    waiter.refusal = str(refusal)
                waiter.event.set()

    async def _pause(self) -> set[int]:
        """Until a proposal becomes final (PostgreSQL's NOTIFY at its commit) or `TICK`
        passes, whichever is first; the ids notified (none at the tick). The tick finds
        what a lost notification missed."""
        try:
            payloads = await self._listener.wait(TICK)
        except Exception:
            log.warning("could not listen for final proposals", exc_info=True)
            await asyncio.sleep(TICK)
            return set()
        return {int(p) for p in payloads if p.isdigit()}


def _read_woken(
    clients_of: dict[int, set[int]], ticking: bool
) -> tuple[dict[int, dict], dict[tuple[int, int], ToolError]]:
    """The final ones among the proposals in `clients_of` (each as `review_detail` has it),
    and which of the calls waiting on those may no longer read them, with why: one trip
    to the lane's thread, a constant number of queries however many are woken."""
    # The tick asks about every watched proposal, mostly to hear that none is final: a
    # light query first, the full read only of those that are.
    proposal_ids = final_among(list(clients_of)) if ticking else list(clients_of)
    final = final_reviews(proposal_ids) if proposal_ids else {}
    woken = {pid: clients_of[pid] for pid in final}
    return final, woken_refusals(woken) if woken else {}


watch = Watch()
