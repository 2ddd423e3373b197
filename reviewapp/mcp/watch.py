"""Waiting for proposals to become final, for any number of calls, on one poll.

Each waiting call registers its proposal and sleeps on an event. While any
call waits, one task per process asks the database which of the watched
proposals are decided or escalated — one short query every `TICK` seconds,
whatever the number of waiters — and reads those in full in the same call,
so a woken call returns its review at once, without a database call of its
own (200 woken calls queueing for `db.DB_THREADS` threads made the last of
them return seconds late). A waiting call holds no thread and no database
connection. On PostgreSQL the transaction that makes a proposal final also
sends a NOTIFY (`review.final_notice`), delivered at its commit; the watch
LISTENs on a connection of its own and polls at once when one arrives, so a
call returns about a query after the commit. The tick remains for what a
notification misses (the listening connection broke, or the proposal became
final before the first LISTEN) and is all there is on SQLite. While anything
is watched the poll keeps one connection and the listener another. A call
whose token was revoked while it waited wakes with `Revoked` instead of the
review (the tokens of every call woken at once are checked in one query).
"""

import asyncio
import logging

import anyio

from reviewapp.review.final_notice import CHANNEL

from .db import Lane, Listener
from .tools import final_reviews, live_clients

TICK = 0.05

log = logging.getLogger(__name__)


class Revoked(Exception):
    """The waiting call's token stopped working before its review became final."""


class _Waiter:
    def __init__(self, client_id: int) -> None:
        self.client_id = client_id
        self.event = anyio.Event()
        self.review: dict | None = None
        self.revoked = False


class Watch:
    def __init__(self) -> None:
        self._waiting: dict[int, set[_Waiter]] = {}
        self._poller: asyncio.Task | None = None
        self._lane = Lane("mcp-watch")
        self._listener = Listener("mcp-listen", CHANNEL)

    async def until_final(self, proposal_id: int, timeout_s: float, client_id: int) -> dict | None:
        """The review (as `tools.review_detail` has it) once the proposal is final;
        None if `timeout_s` passes first; `Revoked` if the client's token died meanwhile."""
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
        if waiter.revoked:
            raise Revoked
        return waiter.review

    async def _poll(self) -> None:
        try:
            while self._waiting:
                try:
                    final = await self._lane.run(final_reviews, list(self._waiting))
                    woken = {pid: self._waiting.get(pid, set()) for pid in final}
                    clients = {w.client_id for waiters in woken.values() for w in waiters}
                    live = await self._lane.run(live_clients, clients) if clients else set()
                except Exception:
                    # A database outage must not end the watch: the waiters time out
                    # or the next tick finds their proposals.
                    log.warning("could not read which proposals are final", exc_info=True)
                    final, clients, live = {}, set(), set()
                for proposal_id, review in final.items():
                    for waiter in self._waiting.pop(proposal_id, ()):
                        # A call that began waiting during the check had its token
                        # checked as it started.
                        if waiter.client_id not in clients or waiter.client_id in live:
                            waiter.review = dict(review)
                        else:
                            waiter.revoked = True
                        waiter.event.set()
                await self._pause()
        finally:
            # No await between the loop's last check and this: a waiter arriving
            # now finds no poller and starts one.
            self._poller = None
        # Nothing watched: no connection kept either.
        await self._lane.close()
        await self._listener.close()

    async def _pause(self) -> None:
        """Until a proposal becomes final (PostgreSQL's NOTIFY at its commit) or `TICK`
        passes, whichever is first: the tick finds what a lost notification missed."""
        try:
            await self._listener.wait(TICK)
        except Exception:
            log.warning("could not listen for final proposals", exc_info=True)
            await asyncio.sleep(TICK)


watch = Watch()
