"""A loopback OpenAI-compatible provider for llm_pipeline.py, in a process of its own.

    python -m benchmarks._provider --latency 1 [--fail-429 K]

Prints the port it listens on (127.0.0.1), then serves until killed:

- ``POST /v1/chat/completions``: after ``--latency`` seconds, a valid judgement
  (``pass``) citing the proposal's ``Ticket #…`` line verbatim, unless the
  mode refuses the call, at once, with 429 and a ``Retry-After``:
  - ``fail_429`` K: every K-th call (``Retry-After: 1``);
  - ``cap`` N: every call beyond N in flight (``Retry-After: 1``), as a
    provider's per-key concurrency limit answers;
  - ``refuse_percent`` P: P % of calls at random (``Retry-After: retry_after``);
  - ``only_429``: every call (``Retry-After: 1``).
- ``POST /mode``: sets those (a JSON object; what it leaves out is off), so
  one run can measure before and after.
- ``GET /stats``: calls, how many were answered 429, and the most calls in
  flight at once since the last ``POST /stats/reset``. A refused call counts
  as in flight only while it is being refused.

Why not ``tests/core/openai_stub.py``, which the tests script: that server is a
thread per connection in the benchmark's own process, and cost about 0.9 ms of
CPU a call, on the same two cores as the system it measures (a real provider's
CPU is not ours). This one is asyncio (aiohttp's server on uvloop, both
already dependencies) and costs a fraction of that; its CPU is still measured
and printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import socket
import sys

import uvloop
from aiohttp import web

from tests.core.openai_stub import completion

TICKET = re.compile(r"Ticket #[A-Za-z0-9-]+")


def judgement_for(body: dict) -> str:
    """A valid judgement citing the proposal's ticket line verbatim."""
    text = body["messages"][1]["content"]
    cite = TICKET.search(text).group(0)
    return json.dumps(
        {
            "verdict": "pass",
            "rationale": "The reply answers the ticket it names.",
            "claims": [{"cite": cite, "assessment": "verified", "note": "names the ticket"}],
        }
    )


MODES = {"fail_429": 0, "cap": 0, "refuse_percent": 0.0, "retry_after": 1, "only_429": False}


class Provider:
    def __init__(self, latency: float, fail_429: int) -> None:
        self.latency = latency
        self.mode = MODES | {"fail_429": fail_429}
        self.calls = self.rate_limited = self.in_flight = self.max_in_flight = 0
        self.random = random.Random(31)

    def _refusal(self) -> str | None:
        """The Retry-After of a call the mode refuses, or None to answer it."""
        mode = self.mode
        if mode["only_429"]:
            return "1"
        if mode["fail_429"] and self.calls % mode["fail_429"] == 0:
            return "1"
        if mode["cap"] and self.in_flight > mode["cap"]:
            return "1"
        if mode["refuse_percent"] and self.random.random() * 100 < mode["refuse_percent"]:
            return str(mode["retry_after"])
        return None

    async def complete(self, request: web.Request) -> web.Response:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            body = await request.json()
            retry_after = self._refusal()
            if retry_after is not None:
                self.rate_limited += 1
                return web.json_response(
                    {"error": {"message": "rate limited"}},
                    status=429,
                    headers={"Retry-After": retry_after},
                )
            await asyncio.sleep(self.latency)
            return web.json_response(
                completion(judgement_for(body), body.get("model", "bench-model"))
            )
        finally:
            # Over before its bytes go out: the client's next call cannot be
            # counted while this one still is.
            self.in_flight -= 1

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "calls": self.calls,
                "rate_limited": self.rate_limited,
                "max_in_flight": self.max_in_flight,
            }
        )

    async def reset(self, request: web.Request) -> web.Response:
        self.max_in_flight = self.in_flight
        return await self.stats(request)

    async def set_mode(self, request: web.Request) -> web.Response:
        asked = await request.json()
        unknown = set(asked) - set(MODES)
        if unknown:
            return web.json_response({"error": f"unknown mode {sorted(unknown)}"}, status=400)
        self.mode = MODES | asked
        return web.json_response(self.mode)


async def serve(latency: float, fail_429: int) -> None:
    provider = Provider(latency, fail_429)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", provider.complete)
    app.router.add_get("/stats", provider.stats)
    app.router.add_post("/stats/reset", provider.reset)
    app.router.add_post("/mode", provider.set_mode)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    await web.SockSite(runner, sock, backlog=4096).start()
    print(sock.getsockname()[1], flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds before each answer")
    parser.add_argument(
        "--fail-429", type=int, default=0, help="answer every K-th call 429 at once (0: never)"
    )
    args = parser.parse_args()
    try:
        # uvloop (a dependency of the app's LLM loop) for the least CPU a call.
        uvloop.run(serve(args.latency, args.fail_429))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
