"""MCP wait_for_review: many calls held open cost no worker slot and few connections.

Starts the web server (`uvicorn reviewapp.asgi:application`, production
settings) on PostgreSQL, submits `--calls` proposals to a panel whose one
lens is external, and holds one `wait_for_review` call open per proposal
through the official `mcp` SDK client over streamable HTTP, from
`--client-processes` processes sharing the calls (each client's first call
returns at once, timeout 0, as an agent that polls makes, so the SDK's
one-time work for the tool is done before the timed call). While they wait
it prints the bench database's connections (`pg_stat_activity`), the web
process's threads and the time a REST request takes beside them. Then
another process decides the proposals one after another (the external
judgement, then the final step a worker would run), noting when each
decision's transaction has committed; each call's return at its client
minus that time (time.time(), one clock on one machine) is its lag:
p50, p95, max and how many exceed 100 ms.

Target: 200 calls held cost no worker slot and at most a fixed number of
database connections; each returns within 100 ms of its decision.

`--starve`: one client cannot starve the others. `--calls` (1,000) calls wait
on proposals nobody decides, held by two agents' tokens (half each) as raw
JSON-RPC POSTs from `--client-processes` processes, with `--wait-timeout`
seconds (30), started evenly over `--ramp` seconds (10; 0: all at once);
meanwhile an unrelated client's token calls `list_panels` every 100 ms. It
prints list_panels' latency (p50, p95, max) as the calls arrive, while they
wait and as they time out, how late each wait returned after its timeout (its
return at the client minus its start minus the timeout), and the web
process's CPU per wait. Target: list_panels p95 < 500 ms; every wait within
1 s of its timeout.

Database `reviewapp_bench_mcp` (override with `BENCH_MCP_DB`); Redis
`BENCH_MCP_BROKER_URL` (default redis://127.0.0.1:6379/12), which holds the
final-step tasks that no worker consumes here.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from pathlib import Path

# The repository root in place of benchmarks/, whose mcp.py would shadow the SDK.
sys.path[0] = str(Path(__file__).resolve().parents[1])

from benchmarks import support as s  # noqa: E402

DATABASE = os.environ.get("BENCH_MCP_DB", "reviewapp_bench_mcp")
BROKER = os.environ.get("BENCH_MCP_BROKER_URL", "redis://127.0.0.1:6379/12")
CONTENT = "Refunds are issued within 14 days of the request."


def start_uvicorn(env: dict[str, str], *, processes: int) -> tuple[s.Service, int]:
    port = s.free_port()
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "reviewapp.asgi:application",
        "--port",
        str(port),
        "--workers",
        str(processes),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    service = s.Service("uvicorn", argv, env, Path(env["REVIEWAPP_VAR_DIR"]) / "logs")
    s.wait_port(port, timeout=60)
    return service, port


def awaiting_proposals(count: int, agents: int = 1) -> tuple[list[int], list[str], str]:
    """`count` proposals awaiting one external lens, submitted by `agents` agents in turn;
    the agents' tokens and the judge's."""
    from reviewapp.review.models import ApiClient, Lens, Panel, PanelLens
    from reviewapp.review.services.proposals import proposal_submit

    names = ["mcp-agent", *(f"mcp-agent-{n}" for n in range(2, agents + 1))]
    agent_tokens = [s.api_token(name, "submit,read") for name in names]
    judge_token = s.api_token("mcp-judge", "judge,read")
    lens = Lens.objects.create(name="outside", backend=Lens.Backend.EXTERNAL)
    lens.judge_clients.add(ApiClient.objects.get(name="mcp-judge"))
    panel = Panel.objects.create(name="mcp-bench", need=1)
    PanelLens.objects.create(panel=panel, lens=lens, position=0)
    clients = [ApiClient.objects.get(name=name) for name in names]
    ids = [
        proposal_submit(
            panel_name=panel.name,
            content=CONTENT,
            external_ref=f"mcp-{i}",
            client=clients[i % agents],
        )[0].pk
        for i in range(count)
    ]
    return ids, agent_tokens, judge_token


def database_connections() -> int:
    """Backends connected to the bench database, less this process's own."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [DATABASE],
        )
        return cursor.fetchone()[0]


def threads_of(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                total += int(line.split()[1])
    return total


def decide_all(ids: list[int], judge_client_name: str) -> dict[int, float]:
    """Judge and finalize each proposal; when each decision had committed (time.time())."""
    from reviewapp.review.evaluation.tasks import finalize_proposal
    from reviewapp.review.models import ApiClient, Proposal
    from reviewapp.review.services.judgements import external_judgement_submit

    judge = ApiClient.objects.get(name=judge_client_name)
    committed = {}
    for proposal_id in ids:
        external_judgement_submit(
            proposal=Proposal.objects.get(pk=proposal_id),
            lens_name="outside",
            verdict="pass",
            rationale="Checked.",
            claims=[],
            client=judge,
        )
        finalize_proposal(proposal_id)  # commits before it returns (autocommit)
        committed[proposal_id] = time.time()
    return committed


async def wait_call(url: str, token: str, proposal_id: int, opened: asyncio.Event, count: list):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            # A first call that returns at once (timeout 0: not final yet), as an agent
            # that polls makes: the SDK does its one-time work for the tool on this
            # result (it lists the tools, then compiles the output schema), which every
            # client would otherwise do at once, in the timed moment.
            await client.call_tool("wait_for_review", {"id": proposal_id, "timeout_s": 0})
            count[0] += 1
            if count[0] == count[1]:
                opened.set()
            result = await client.call_tool("wait_for_review", {"id": proposal_id, "timeout_s": 60})
            returned = time.time()
    content = result.structured_content or {}
    return proposal_id, returned, content.get("status"), result.is_error


async def hold(url: str, token: str, ids: list[int]) -> None:
    """A client process: one held call per id. Prints "connected" once every call has
    made its first; "waiting <n>" for each "count" line read; at the end, a JSON line
    of each call's (id, return time, status, is_error)."""
    opened = asyncio.Event()
    count = [0, len(ids)]
    calls = [asyncio.create_task(wait_call(url, token, i, opened, count)) for i in ids]
    opening = asyncio.create_task(opened.wait())
    await asyncio.wait([opening, *calls], timeout=120, return_when=asyncio.FIRST_COMPLETED)
    for call in calls:
        if call.done():
            call.result()  # a call that ended before any decision: say why
    assert opening.done(), "the MCP clients did not all connect within 120 s"
    # This process's agents share one heap: a full collection of it (0.7 s measured with
    # 200 in one process, under load) would stall them all at once, as agents' own
    # processes would not. What exists now lives until the end: out of the collector's sight.
    gc.collect()
    gc.freeze()
    print("connected", flush=True)
    while (await asyncio.to_thread(sys.stdin.readline)).strip() == "count":
        print(f"waiting {sum(not c.done() for c in calls)}", flush=True)
    print(json.dumps(await asyncio.gather(*calls)), flush=True)


async def hold_and_decide(
    port: int, pids: list[int], ids: list[int], agent: str, processes: int, settle: float
):
    import httpx

    # The calls in client processes of their own, a share each (as agents are not one
    # process), and the deciding in another: deciding takes CPU and the GIL, and 200
    # clients' replies in one event loop would queue behind one another.
    url = f"http://127.0.0.1:{port}/mcp"
    holders = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--hold",
            url,
            ",".join(map(str, ids[i::processes])),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "BENCH_MCP_TOKEN": agent},
        )
        for i in range(processes)
    ]
    for holder in holders:
        line = await asyncio.wait_for(holder.stdout.readline(), 150)
        assert line == b"connected\n", "a client process did not hold its calls (see above)"
    # Every client is connected; give the calls time to reach the server and wait.
    await asyncio.sleep(settle)
    samples = []
    rest_ms = []
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {agent}"}, timeout=60) as rest:
        for _ in range(10):
            samples.append(await asyncio.to_thread(database_connections))
            started = time.perf_counter()
            response = await rest.get(f"http://127.0.0.1:{port}/api/proposals/{ids[0]}")
            assert response.status_code == 200, response.text
            rest_ms.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.3)
    still_waiting = 0
    for holder in holders:
        holder.stdin.write(b"count\n")
        await holder.stdin.drain()
        still_waiting += int((await holder.stdout.readline()).split()[1])
    threads = threads_of(pids)
    s.heading(f"{len(ids)} wait_for_review calls held open")
    s.line("calls still waiting", f"{still_waiting} of {len(ids)} ({processes} client processes)")
    s.line("bench DB connections", f"min {min(samples)}, max {max(samples)} (10 samples over 3 s)")
    s.line("web process threads", str(threads))
    s.line(
        "REST GET beside them",
        f"p50 {s.percentile(rest_ms, 50):.1f} ms, max {max(rest_ms):.1f} ms",
    )

    decider = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--decide",
        ",".join(map(str, ids)),
        stdout=asyncio.subprocess.PIPE,
    )
    output, _ = await decider.communicate()
    committed = {int(k): v for k, v in json.loads(output.decode().splitlines()[-1]).items()}
    results = []
    for holder in holders:
        holder.stdin.close()
        output, _ = await holder.communicate()
        results += [tuple(r) for r in json.loads(output.decode().splitlines()[-1])]
    return results, committed


# ── --starve: 1,000 waits held by two tokens, list_panels from a third ─────

PROTOCOL = {"MCP-Protocol-Version": "2025-06-18", "Accept": "application/json, text/event-stream"}


async def rpc(http, url: str, method: str, params: dict) -> dict:
    """One JSON-RPC request as the SDK sends it (stateless: no session to set up first);
    its result, from the JSON or the SSE message the server answers with."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await http.post(url, json=body, headers=PROTOCOL)
    response.raise_for_status()
    text = response.text
    if "data:" in text:
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    answer = json.loads(text)
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return answer["result"]


async def timed_wait(
    http, url: str, proposal_id: int, timeout_s: float, delay: float = 0.0
) -> tuple[float, bool]:
    """A wait on a proposal nobody decides, started after `delay`: how far past `timeout_s`
    it returned (s)."""
    await asyncio.sleep(delay)
    arguments = {"id": proposal_id, "timeout_s": timeout_s}
    started = time.time()
    result = await rpc(http, url, "tools/call", {"name": "wait_for_review", "arguments": arguments})
    return time.time() - started - timeout_s, bool(result.get("isError"))


async def hold_waits(
    url: str, tokens: list[str], ids: list[tuple[int, int, float]], timeout_s: float
) -> None:
    """A client process: its share of the waits, each with its submitter's token (the
    proposals' agents take turns) after its delay in the ramp. Prints "started", then a
    JSON list of (overrun s, is_error) per call."""
    import httpx

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    clients = [
        httpx.AsyncClient(headers={"Authorization": f"Bearer {t}"}, timeout=300, limits=limits)
        for t in tokens
    ]
    calls = [
        timed_wait(clients[agent], url, proposal_id, timeout_s, delay)
        for proposal_id, agent, delay in ids
    ]
    print("started", flush=True)
    results = await asyncio.gather(*calls, return_exceptions=True)
    for client in clients:
        await client.aclose()
    print(json.dumps([r if isinstance(r, tuple) else (None, repr(r)) for r in results]))


async def probe_list_panels(url: str, token: str, until: asyncio.Event) -> list[tuple[float, ...]]:
    """list_panels every 100 ms from an unrelated client until `until`: (when, ms) each."""
    import httpx

    samples = []
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
        while not until.is_set():
            started = time.perf_counter()
            await rpc(http, url, "tools/call", {"name": "list_panels", "arguments": {}})
            samples.append((time.time(), (time.perf_counter() - started) * 1000))
            await asyncio.sleep(0.1)
    return samples


async def starve(
    port: int, web_pid: int, ids: list[int], agents: list[str], other: str, args
) -> None:
    url = f"http://127.0.0.1:{port}/mcp"
    processes = args.client_processes
    step = args.ramp / len(ids)
    holders = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--hold-waits",
            url,
            ",".join(
                f"{pid}/{n % len(agents)}/{n * step:.4f}"
                for n, pid in enumerate(ids)
                if n % processes == i
            ),
            str(args.wait_timeout),
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "BENCH_MCP_TOKENS": ",".join(agents)},
        )
        for i in range(processes)
    ]
    for holder in holders:
        line = await asyncio.wait_for(holder.stdout.readline(), 60)
        assert line == b"started\n", "a client process did not start its calls"
    started = time.time()
    cpu_before = s.cpu_seconds([web_pid])[web_pid]
    done = asyncio.Event()
    prober = asyncio.create_task(probe_list_panels(url, other, done))
    results = []
    for holder in holders:
        output, _ = await holder.communicate()
        results += [tuple(r) for r in json.loads(output.decode().splitlines()[-1])]
    cpu = s.cpu_seconds([web_pid])[web_pid] - cpu_before
    done.set()
    samples = await prober
    arrived = started + args.ramp + 1
    timeout_at = started + args.wait_timeout
    s.heading(
        f"{len(ids)} wait_for_review calls held by 2 tokens (started over {args.ramp:g} s, "
        f"timeout {args.wait_timeout:g} s), list_panels by a third"
    )
    for label, chosen in (
        ("list_panels as they arrive", [ms for t, ms in samples if t < arrived]),
        ("list_panels while they wait", [ms for t, ms in samples if arrived <= t < timeout_at]),
        ("list_panels as they time out", [ms for t, ms in samples if t >= timeout_at]),
        ("list_panels, whole run", [ms for _, ms in samples]),
    ):
        if chosen:
            s.line(
                label,
                f"{len(chosen)} calls: p50 {s.percentile(chosen, 50):.0f} ms, "
                f"p95 {s.percentile(chosen, 95):.0f} ms, max {max(chosen):.0f} ms "
                "(target: p95 < 500 ms)",
            )
    overruns = [r[0] for r in results if r[0] is not None and not r[1]]
    failed = len(results) - len(overruns)
    s.line("waits returned", f"{len(overruns)} of {len(ids)} ({failed} errors)")
    if overruns:
        s.line(
            "return − (start + timeout)",
            f"p50 {s.percentile(overruns, 50) * 1000:.0f} ms, "
            f"p95 {s.percentile(overruns, 95) * 1000:.0f} ms, max {max(overruns) * 1000:.0f} ms "
            "(target: every one < 1 s)",
        )
        s.line("waits over 1 s late", f"{sum(o >= 1 for o in overruns)} of {len(overruns)}")
    errors = [r[1] for r in results if r[0] is None][:3]
    if errors:
        s.line("first errors", "; ".join(map(str, errors)))
    s.line(
        "web process CPU",
        f"{cpu:.1f} s in all, {cpu / (len(ids) + len(samples)) * 1000:.1f} ms per call",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=None, help="default 200; 1000 --starve")
    parser.add_argument("--web-processes", type=int, default=1)
    parser.add_argument("--client-processes", type=int, default=4)
    parser.add_argument(
        "--starve", action="store_true", help="waits held by two tokens, list_panels by a third"
    )
    parser.add_argument("--wait-timeout", type=float, default=30.0, help="--starve: timeout_s")
    parser.add_argument(
        "--ramp", type=float, default=10.0, help="--starve: seconds over which the waits start"
    )
    parser.add_argument(
        "--settle", type=float, default=10.0,
        help="seconds the held calls get to reach the server before they are measured",
    )
    parser.add_argument("--decide", help=argparse.SUPPRESS)  # the deciding child process
    parser.add_argument("--hold", nargs=2, help=argparse.SUPPRESS)  # a client process
    parser.add_argument("--hold-waits", nargs=3, help=argparse.SUPPRESS)  # a --starve client
    args = parser.parse_args()
    if args.calls is None:
        args.calls = 1000 if args.starve else 200
    if args.hold:
        url, ids = args.hold
        asyncio.run(hold(url, os.environ["BENCH_MCP_TOKEN"], [int(i) for i in ids.split(",")]))
        return
    if args.hold_waits:
        url, ids, timeout_s = args.hold_waits
        tokens = os.environ["BENCH_MCP_TOKENS"].split(",")
        calls = [
            (int(pid), int(agent), float(delay))
            for pid, agent, delay in (call.split("/") for call in ids.split(","))
        ]
        asyncio.run(hold_waits(url, tokens, calls, float(timeout_s)))
        return
    env = s.bench_env("mcp", database_url=f"{s.PG_URL}/{DATABASE}", broker_url=BROKER)
    if args.decide:
        s.django_setup(env)
        ids = [int(i) for i in args.decide.split(",")]
        print(json.dumps(decide_all(ids, "mcp-judge")))
        return
    s.reset_database(DATABASE)
    s.flush_redis(BROKER)
    s.django_setup(env)
    s.migrate()
    s.collectstatic()
    print(f"load average: {s.load_average()}")
    ids, agents, _ = awaiting_proposals(args.calls, agents=2 if args.starve else 1)
    agent = agents[0]
    web, port = start_uvicorn(env, processes=args.web_processes)
    if args.starve:
        try:
            other = s.api_token("mcp-other", "read")
            asyncio.run(starve(port, web.pid, ids, agents, other, args))
            print(f"load average: {s.load_average()}")
        finally:
            web.stop()
        return
    try:
        pids = [web.pid, *web.children()] if args.web_processes > 1 else [web.pid]
        s.line("idle bench DB connections", str(database_connections()))
        results, decided = asyncio.run(
            hold_and_decide(port, pids, ids, agent, args.client_processes, args.settle)
        )
        lags = [
            (returned - decided[pid]) * 1000
            for pid, returned, status, error in results
            if status == "decided" and not error and pid in decided
        ]
        s.heading("return − decision commit")
        s.line("calls returned decided", f"{len(lags)} of {len(ids)}")
        early = sum(pid not in decided or returned < decided[pid] for pid, returned, *_ in results)
        s.line("returned before their decision (timeout, error)", str(early))
        s.line(
            "lag",
            f"p50 {s.percentile(lags, 50):.0f} ms, p95 {s.percentile(lags, 95):.0f} ms, "
            f"max {max(lags):.0f} ms (target: every one ≤ 100 ms)",
        )
        s.line("calls later than 100 ms", f"{sum(lag > 100 for lag in lags)} of {len(lags)}")
        print(f"load average: {s.load_average()}")
    finally:
        web.stop()


if __name__ == "__main__":
    main()
