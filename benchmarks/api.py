"""Requests per second for `POST /api/proposals` against gunicorn with 2 sync workers.

Run:  .venv/bin/python benchmarks/api.py [--duration 15] [--connections 2,8]

On a fresh `reviewapp_bench` database and Redis /14 it configures the pipeline
benchmark's panel, creates a `submit` token with `manage.py create_api_token`,
starts gunicorn (2 workers, `DEBUG=false`, the per-token rate limit raised to
10⁹/min through REVIEWAPP_API_RATE_LIMIT_PER_MINUTE) and drives it with `wrk`
(apt-get install -y wrk) from a Lua script: every request is a distinct,
realistic proposal (~400 bytes of content, a thought process, metadata and a
unique external_ref, as an idempotent client sends). No Celery worker runs, so
the figure is the web tier alone; the evaluation messages pile up in Redis /14
and are flushed at the end.

Prints, per connection count: requests/s, wrk's latency percentiles, gunicorn's
own server-time percentiles (from its access log, %(D)s), non-202 responses,
rows written, and gunicorn CPU per request; then, as a floor, the same
figures for a request that touches no database (an unknown /api/ path).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402

LUA = r"""
local counter = 0
local threads = {}
local body_template = %(body)s

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  non202 = 0
  counter = 0
end

request = function()
  counter = counter + 1
  local ref = string.format("wrk-%%s-%%d-%%d", "%(run)s", tid, counter)
  local body = string.gsub(body_template, "__REF__", ref)
  return wrk.format("POST", "/api/proposals", {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer %(token)s",
  }, body)
end

response = function(status, headers, body)
  if status ~= 202 then non202 = non202 + 1 end
end

done = function(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + t:get("non202") end
  io.write(string.format("RESULT requests=%%d duration_us=%%d non202=%%d errors=%%d\n",
    summary.requests, summary.duration, bad,
    summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.status + summary.errors.timeout))
  for _, p in ipairs({50, 90, 95, 99}) do
    io.write(string.format("RESULT p%%d_us=%%d\n", p, latency:percentile(p)))
  end
end
"""


def lua_string(text: str) -> str:
    return "[==[" + text + "]==]"


def access_log_times(path: Path, offset: int) -> list[float]:
    """Server time in ms of each POST /api/proposals logged after `offset`."""
    out = []
    with open(path, "rb") as f:
        f.seek(offset)
        for raw in f.read().decode(errors="replace").splitlines():
            parts = raw.split()
            if len(parts) == 4 and parts[0] == "POST" and parts[1] == "/api/proposals":
                out.append(int(parts[3]) / 1000)
    return out


def wrk(port: int, connections: int, duration: int, *, path: str, script: Path | None = None):
    threads = min(connections, 2)
    result = subprocess.run(
        [
            "wrk",
            "-t",
            str(threads),
            "-c",
            str(connections),
            "-d",
            f"{duration}s",
            "--timeout",
            "30s",
            *(["-s", str(script)] if script else []),
            f"http://127.0.0.1:{port}{path}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def run_wrk(port: int, script: Path, connections: int, duration: int) -> dict:
    output = wrk(port, connections, duration, path="/api/proposals", script=script)
    figures = {}
    for raw in output.splitlines():
        if raw.startswith("RESULT "):
            for pair in raw.split()[1:]:
                key, _, value = pair.partition("=")
                figures[key] = int(value)
    figures["raw"] = output
    return figures


def floor_cpu_per_request(port: int, web_pid: int, duration: int) -> tuple[float, float]:
    """(requests/s, gunicorn CPU s per request) for a request that touches no database:
    an unknown /api/ path, answered by Django's middleware and URL routing with a JSON 404."""
    meter = s.CpuMeter(web=web_pid)
    meter.start()
    output = wrk(port, 2, duration, path="/api/no-such-endpoint")
    cpu = meter.stop()["web"]
    requests = int(next(ln for ln in output.splitlines() if "requests in" in ln).split()[0])
    return requests / duration, cpu / max(requests, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=15, help="seconds per measurement")
    parser.add_argument("--connections", default="2,8", help="comma-separated wrk -c values")
    parser.add_argument("--web-workers", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install -y wrk")

    s.heading("API submit: POST /api/proposals, gunicorn with 2 sync workers, no worker")
    s.line("load average at start", s.load_average())
    env = s.fresh_stack("api")
    panel = s.pipeline_panel()
    token = s.api_token("bench-api", "submit")
    item = s.pipeline_contents(1)[0]
    body = json.dumps(
        {
            "panel": panel.name,
            "title": item["title"],
            "content": item["content"],
            "thought_process": item["thought_process"],
            "external_ref": "__REF__",
            "metadata": {"agent": "wrk", "ticket": "__REF__"},
        },
        ensure_ascii=False,
    )
    s.line("request body", f"{len(body.encode())} bytes")
    access_log = Path(env["REVIEWAPP_VAR_DIR"]) / "logs" / f"access-{time.time_ns()}.log"
    web, port = s.start_gunicorn(env, workers=args.web_workers, access_log=access_log)
    from reviewapp.review.models import Proposal

    results = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for connections in [int(c) for c in args.connections.split(",")]:
                script = Path(tmp) / f"post-{connections}.lua"
                script.write_text(
                    LUA % {"body": lua_string(body), "token": token, "run": f"c{connections}"}
                )
                # Warm-up (connections, caches), not measured.
                warm = Path(tmp) / "warm.lua"
                warm.write_text(LUA % {"body": lua_string(body), "token": token, "run": "warm"})
                run_wrk(port, warm, connections, 3)
                rows_before = Proposal.objects.count()
                offset = access_log.stat().st_size if access_log.exists() else 0
                meter = s.CpuMeter(web=web.pid)
                meter.start()
                figures = run_wrk(port, script, connections, args.duration)
                cpu = meter.stop()
                time.sleep(0.5)  # let gunicorn flush its access log
                server_ms = access_log_times(access_log, offset)
                figures["rows"] = Proposal.objects.count() - rows_before
                figures["server_ms"] = server_ms
                figures["cpu"] = cpu
                results.append((connections, figures))
                s.flush_redis(env["CELERY_BROKER_URL"])
        floor_rate, floor_cpu = floor_cpu_per_request(port, web.pid, args.duration)
    finally:
        web.stop()

    for connections, f in results:
        seconds = f["duration_us"] / 1e6
        s.heading(f"wrk -c {connections} for {seconds:.0f} s")
        s.line("requests/s", f"{f['requests'] / seconds:.1f}")
        s.line(
            "client latency p50 / p95 / p99",
            f"{f['p50_us'] / 1000:.1f} / {f['p95_us'] / 1000:.1f} / {f['p99_us'] / 1000:.1f} ms",
        )
        server = f["server_ms"]
        s.line(
            "server time p50 / p95 / p99 (gunicorn %(D)s)",
            f"{s.percentile(server, 50):.1f} / {s.percentile(server, 95):.1f} / "
            f"{s.percentile(server, 99):.1f} ms",
        )
        s.line("non-202 responses / socket errors", f"{f['non202']} / {f['errors']}")
        s.line("proposals written", f"{f['rows']} (requests {f['requests']})")
        cpu_web = f["cpu"]["web"]
        cpu_pg = f["cpu"]["postgres"]
        s.line(
            "CPU per request: gunicorn / PostgreSQL",
            f"{1000 * cpu_web / max(f['requests'], 1):.1f} ms / "
            f"{1000 * cpu_pg / max(f['requests'], 1):.1f} ms",
        )
    s.heading("floor: the same server answering a request that touches no database")
    s.line("requests/s (GET /api/no-such-endpoint, -c 2)", f"{floor_rate:.0f}")
    s.line("gunicorn CPU per request", f"{1000 * floor_cpu:.2f} ms")
    s.line("load average at end", s.load_average())


if __name__ == "__main__":
    main()
