"""Failure drills: kill a worker, restart Redis and PostgreSQL, race two reviewers, break the LLM.

Run:  .venv/bin/python benchmarks/drills.py [kill-worker restart-redis restart-postgres
                                             double-decide llm-failures] [--n 200]

No drill touches the machine's shared servers. Each runs against a private
PostgreSQL cluster (initdb/pg_ctl as the `postgres` user, port 55432, data
under /tmp) and a private redis-server (port 56379, no persistence, so a
restart loses every queued message), which the drill restarts at will. The
stack is real: gunicorn (2 workers) takes submissions over HTTP and a Celery
worker (`--concurrency 2 --beat`, REVIEWAPP_STUCK_AFTER_SECONDS=5,
REVIEWAPP_SWEEP_EVERY_SECONDS=2) evaluates them.

- kill-worker: 2 recorded lenses + 1 LLM lens (a loopback stub answering after
  0.3 s, so kills land mid-evaluation) and a constraints checker. SIGKILL one
  pool process while its LLM loop has a call open (its task already returned),
  later SIGKILL the whole worker (main process, pool, beat), start a new one.
- restart-redis: restart the broker mid-run (every queued message is lost).
- restart-postgres: fast-restart the database mid-run (every session is cut).
  Each of these three prints: HTTP answers, accepted proposals, rows, final,
  and per proposal decisions + open escalations (must be exactly 1: none lost,
  none duplicated), duplicate judgements/evidence, and the decision chain check.
- double-decide: two reviewers decide the same escalation at the same moment,
  for 40 escalations, three ways: two API tokens through gunicorn (2 processes),
  two threads calling the service, and two browser sessions claiming and then
  deciding through the review pages. Exactly one decision each.
- llm-failures: lenses whose endpoint is down (closed port), slow (answers
  after 30 s; lens timeout 2 s), trickling bytes, hanging up, answering 503,
  answering a non-JSON body, answering prose. Every lens fails cleanly, every
  escalation names them, and no task runs past the (drill's) task time limit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import socket
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import support as s  # noqa: E402

DRILL_DB = "reviewapp_drill"
SLOW_LENS_SECONDS = 0.3
STUCK_AFTER = 5
SWEEP_EVERY = 2
TIME_LIMIT, SOFT_TIME_LIMIT = 60, 50
ALL = ["kill-worker", "restart-redis", "restart-postgres", "double-decide", "llm-failures"]


class Stack:
    """Private PostgreSQL and Redis, the env pointing at them, and this process set up on it."""

    def __init__(self):
        self.pg = s.PrivatePostgres().start()
        self.redis = s.PrivateRedis().start()
        self.env = s.bench_env(
            "drills",
            database_url=f"{self.pg.url}/{DRILL_DB}",
            broker_url=self.redis.url,
            REVIEWAPP_STUCK_AFTER_SECONDS=str(STUCK_AFTER),
            REVIEWAPP_SWEEP_EVERY_SECONDS=str(SWEEP_EVERY),
        )
        s.reset_database(DRILL_DB, self.pg.url)
        s.django_setup(self.env)
        s.collectstatic()  # DEBUG=false: pages need the static manifest

    def reset(self) -> None:
        from django.db import connections

        connections.close_all()
        s.reset_database(DRILL_DB, self.pg.url)
        s.migrate()
        self.redis.restart()
        from django.core.cache import cache

        with contextlib.suppress(Exception):
            cache.close()

    def close(self) -> None:
        from django.db import connections

        connections.close_all()
        self.redis.destroy()
        self.pg.destroy()


def db_retry(fn, *, attempts: int = 60):
    """Run a query from this process, riding out a database restart."""
    from django.db import InterfaceError, OperationalError, connection

    for _ in range(attempts):
        try:
            return fn()
        except (OperationalError, InterfaceError):
            connection.close()
            time.sleep(0.5)
    return fn()


def wait_settled(expected: int, timeout: float) -> float:
    """Until no proposal is queued or evaluating (and at least `expected` exist)."""
    from reviewapp.review.models import Proposal

    started = time.monotonic()
    deadline = started + timeout
    last = -1
    while time.monotonic() < deadline:
        pending, total = db_retry(
            lambda: (
                Proposal.objects.filter(status__in=["queued", "evaluating"]).count(),
                Proposal.objects.count(),
            )
        )
        if pending == 0 and total >= expected:
            return time.monotonic() - started
        if pending != last:
            last = pending
        time.sleep(0.5)
    raise TimeoutError(f"{last} proposals still pending after {timeout}s")


class Submitter(threading.Thread):
    """Submits items over HTTP from a few threads, in the background; records every answer."""

    def __init__(
        self,
        port: int,
        token: str,
        panel: str,
        items: list[dict],
        clients: int = 4,
        spread_seconds: float = 10.0,
    ):
        super().__init__(daemon=True)
        self.interval = spread_seconds / max(len(items), 1)
        self.timeline: list[tuple[float, str]] = []
        self.started = time.monotonic()
        self.url = f"http://127.0.0.1:{port}/api/proposals"
        self.headers = {"Authorization": f"Bearer {token}"}
        self.panel = panel
        self.items = items
        self.clients = clients
        self.answers: Counter[str] = Counter()
        self.accepted: list[int] = []
        self.lock = threading.Lock()
        self.done = 0

    def _one(self, item: dict) -> None:
        import httpx

        body = {
            "panel": self.panel,
            "title": item["title"],
            "content": item["content"],
            "thought_process": item["thought_process"],
        }
        try:
            response = httpx.post(self.url, json=body, headers=self.headers, timeout=30)
            key = str(response.status_code)
            accepted = response.json()["id"] if response.status_code == 202 else None
        except httpx.HTTPError as exc:
            key, accepted = type(exc).__name__, None
        with self.lock:
            self.timeline.append((time.monotonic(), key))
            self.answers[key] += 1
            self.done += 1
            if accepted is not None:
                self.accepted.append(accepted)

    def run(self) -> None:
        self.started = time.monotonic()
        with ThreadPoolExecutor(self.clients) as pool:
            for item in self.items:
                pool.submit(self._one, item)
                time.sleep(self.interval)  # a steady stream: before, during and after a fault

    def phases(self, fault_at: float, back_at: float) -> str:
        """HTTP answers before the fault, while the server was down, and after it came back."""
        parts = []
        for label, lo, hi in (
            ("before", 0, fault_at),
            ("during", fault_at, back_at),
            ("after", back_at, float("inf")),
        ):
            got = Counter(k for t, k in self.timeline if lo <= t < hi)
            parts.append(
                f"{label}: " + (", ".join(f"{k}×{v}" for k, v in sorted(got.items())) or "-")
            )
        return "; ".join(parts)


class PageProber(threading.Thread):
    """A reviewer's browser: GETs the inbox every 50 ms and records each answer."""

    def __init__(self, port: int, session_cookie: str):
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/"
        self.cookies = {"sessionid": session_cookie}
        self.answers: Counter[str] = Counter()
        self.stopping = threading.Event()

    def run(self) -> None:
        import httpx

        with httpx.Client(cookies=self.cookies, timeout=10) as client:
            while not self.stopping.wait(0.05):
                try:
                    response = client.get(self.url)
                    key = str(response.status_code)
                    if response.status_code == 503 and "Retry-After" not in response.headers:
                        key += " without Retry-After"
                except httpx.HTTPError as exc:
                    key = type(exc).__name__
                self.answers[key] += 1

    def stop(self) -> str:
        self.stopping.set()
        self.join(15)
        return ", ".join(f"{k}×{v}" for k, v in sorted(self.answers.items()))


def recorded_and_llm_panel(stub_url: str):
    """2 recorded lenses + 1 slow LLM lens (need 2) + a constraints checker."""
    from reviewapp.review.models import CheckerConfig, Lens
    from reviewapp.review.services.panels import panel_configure

    s.pipeline_panel()  # creates the recorded lenses and the checker
    lenses = list(Lens.objects.filter(name__in=s.PIPELINE_LENSES[:2]).order_by("name"))
    llm = Lens.objects.create(
        name="drill-llm",
        backend=Lens.Backend.LLM,
        base_url=stub_url,
        model="stub",
        instructions="Judge the reply.",
        timeout_seconds=10,
    )
    checker = CheckerConfig.objects.get(name="bench-mandate")
    return panel_configure(
        name="drill-panel",
        need=2,
        lenses=[*lenses, llm],
        checkers=[checker],
        grounding_policy="repair",
    )


def stub_answer() -> str:
    # "Ticket #" is in every drill proposal, so the cite always grounds.
    return json.dumps(
        {
            "verdict": "pass",
            "rationale": "Fine.",
            "claims": [{"cite": "Ticket #", "assessment": "verified"}],
        }
    )


def report_outcome(name: str, submitter: Submitter, settle_seconds: float, worker_logs) -> bool:
    audit = db_retry(s.outcome_audit)
    checked, problem = db_retry(s.verify_chain)
    reruns = Counter()
    for log in worker_logs:
        for task, runs in s.task_runtimes(log).items():
            reruns[task.rsplit(".", 1)[-1]] += len(runs)
    from reviewapp.review.models import Proposal

    accepted = set(submitter.accepted)
    final_accepted = db_retry(
        lambda: Proposal.objects.filter(
            pk__in=accepted, status__in=["decided", "escalated"]
        ).count()
    )
    ok = (
        final_accepted == len(accepted)
        and audit["exactly_once"] == audit["proposals"]
        and audit["duplicated"] == 0
        and audit["no_outcome"] == 0
        and audit["duplicate_judgements"] == 0
        and audit["duplicate_evidence"] == 0
        and problem is None
    )
    s.heading(f"{name}: {'PASS' if ok else 'FAIL'}")
    s.line(
        "HTTP answers to submissions",
        ", ".join(f"{k}×{v}" for k, v in sorted(submitter.answers.items())),
    )
    s.line("accepted (202) / final among them", f"{len(accepted)} / {final_accepted}")
    s.line(
        "rows written / of them without a 202 answer",
        f"{audit['proposals']} / {audit['proposals'] - len(accepted)}",
    )
    s.line("final (decided or escalated) / not final", f"{audit['final']} / {audit['not_final']}")
    s.line(
        "exactly one outcome / none / more than one",
        f"{audit['exactly_once']} / {audit['no_outcome']} / {audit['duplicated']}",
    )
    s.line("decisions / open escalations", f"{audit['decisions']} / {audit['open_escalations']}")
    s.line(
        "duplicate judgements / duplicate evidence",
        f"{audit['duplicate_judgements']} / {audit['duplicate_evidence']}",
    )
    s.line("decision chain", f"{checked} verified" + (f"; PROBLEM: {problem}" if problem else ""))
    s.line(
        "task runs (redeliveries and sweeps included)",
        ", ".join(f"{k} {v}" for k, v in sorted(reruns.items()) if not k.startswith("noop")),
    )
    s.line("time to settle after the fault", f"{settle_seconds:.1f} s")
    return ok


def pipeline_drill(stack: Stack, name: str, n: int) -> bool:
    from tests.core.openai_stub import OpenAIStub, Slow

    stack.reset()
    with OpenAIStub() as stub:
        quiet(stub)
        stub.script([Slow(SLOW_LENS_SECONDS, stub_answer()) for _ in range(n * 4)])
        panel = recorded_and_llm_panel(stub.base_url)
        items = s.pipeline_contents(n, tag=f"{name}-")
        s.record_answers(items)
        token = s.api_token(f"drill-{name}", "submit,read")
        web, port = s.start_gunicorn(stack.env)
        worker = s.start_worker(stack.env, beat=True, name=f"{name}-a")
        workers = [worker]
        submitter = Submitter(port, token, panel.name, items)
        notes = []
        try:
            submitter.start()
            time.sleep(3)
            fault_at = time.monotonic()
            if name == "kill-worker":
                victim = None
                deadline = time.monotonic() + 10
                while victim is None and time.monotonic() < deadline:
                    victim = next(iter(talking_to(worker.children(), stub_port(stub))), None)
                    time.sleep(0.02)
                if victim:
                    os.kill(victim, 9)
                    notes.append(
                        f"SIGKILLed pool process {victim} while its LLM loop held a connection "
                        "to the model"
                    )
                else:
                    notes.append("found no pool process mid-evaluation to kill")
                time.sleep(3)
                worker.kill()
                notes.append("SIGKILLed the whole worker (main, pool, beat) at t=6 s")
                time.sleep(2)
                workers.append(s.start_worker(stack.env, beat=True, name=f"{name}-b"))
                notes.append("started a new worker at t=8 s")
            elif name == "restart-redis":
                stack.redis.restart(down_seconds=2)
                notes.append("restarted Redis at t=3 s (down 2 s; queued messages lost)")
            elif name == "restart-postgres":
                _, cookie = s.reviewer_session()
                prober = PageProber(port, cookie)
                prober.start()
                stack.pg.restart(down_seconds=2)
                notes.append("fast-restarted PostgreSQL at t=3 s (down 2 s)")
                notes.append(f"inbox page while it was down and coming back: {prober.stop()}")
            back_at = time.monotonic()
            submitter.join(300)
            wait_settled(len(submitter.accepted), timeout=300)
            settle = time.monotonic() - fault_at
        finally:
            for w in workers:
                w.stop()
            web.stop()
    for note in notes:
        print(f"  [{name}] {note}")
    print(f"  [{name}] HTTP answers by phase: {submitter.phases(fault_at, back_at)}")
    return report_outcome(name, submitter, settle, [w.log_path for w in workers])


def double_decide_drill(stack: Stack, count: int = 40) -> bool:
    import httpx

    from reviewapp.review.evaluation.tasks import evaluate_proposal
    from reviewapp.review.models import Decision, Escalation
    from reviewapp.review.services.escalations import (
        ClaimHeldByOther,
        EscalationClosed,
        escalation_decide,
    )
    from reviewapp.review.services.proposals import proposal_submit

    stack.reset()
    # Expected lens failures.
    logging.getLogger("reviewapp.review.evaluation.tasks").setLevel(logging.ERROR)
    panel = s.pipeline_panel()
    items = [i for i in s.pipeline_contents(count * 31, tag="dd-") if i["route"] == "lens_failed"]
    items = items[: count * 3]
    s.record_answers(items)
    for item in items:
        proposal, _ = proposal_submit(
            panel_name=panel.name, content=item["content"], title=item["title"]
        )
        evaluate_proposal.run(proposal.pk)  # its recorded lenses and final step, here
    stack.redis.restart()  # drop the enqueued evaluations: these were evaluated in-process
    escalations = list(
        Escalation.objects.filter(status="open").order_by("id").values_list("pk", flat=True)
    )
    assert len(escalations) >= count * 3, len(escalations)
    api_set, thread_set, web_set = (
        escalations[:count],
        escalations[count : 2 * count],
        escalations[2 * count : 3 * count],
    )
    ok = True
    web, port = s.start_gunicorn(stack.env)
    try:
        # 1. Two API clients (review scope; read:all, since no client submitted these)
        # through gunicorn's two processes.
        tokens = [s.api_token(f"reviewer-bot-{k}", "review,read:all") for k in range(2)]
        answers: Counter[str] = Counter()
        for escalation_id in api_set:
            barrier = threading.Barrier(2)

            def decide(token, outcome, escalation_id=escalation_id, barrier=barrier):
                with httpx.Client(timeout=30) as client:
                    barrier.wait()
                    return client.post(
                        f"http://127.0.0.1:{port}/api/escalations/{escalation_id}/decision",
                        json={"outcome": outcome, "rationale": f"Checked by {token[:8]}."},
                        headers={"Authorization": f"Bearer {token}"},
                    ).status_code

            with ThreadPoolExecutor(2) as pool:
                codes = sorted(pool.map(decide, tokens, ["approved", "rejected"]))
            answers[str(codes)] += 1
        api_ok = answers == Counter({"[201, 409]": len(api_set)})
        ok &= api_ok

        # 2. Two threads calling the service (two reviewers, no claim: the row lock decides).
        from django.contrib.auth import get_user_model
        from django.db import connection

        users = [s.reviewer_session(f"race-{k}")[0] for k in range(2)]
        results: Counter[str] = Counter()
        for escalation_id in thread_set:
            barrier = threading.Barrier(2)

            def service_decide(user, escalation_id=escalation_id, barrier=barrier):
                try:
                    barrier.wait()
                    escalation_decide(
                        escalation_id=escalation_id,
                        outcome="approved",
                        rationale="Race.",
                        user=get_user_model().objects.get(pk=user.pk),
                        decided_by_name=user.username,
                    )
                    return "decided"
                except (EscalationClosed, ClaimHeldByOther) as exc:
                    return type(exc).__name__
                finally:
                    connection.close()

            with ThreadPoolExecutor(2) as pool:
                results[str(sorted(pool.map(service_decide, users)))] += 1
        thread_ok = results == Counter({"['EscalationClosed', 'decided']": len(thread_set)})
        ok &= thread_ok

        # 3. Two browser sessions: both claim at once, then both try to decide.
        from django.conf import settings

        sessions = [s.reviewer_session(f"browser-{k}")[1] for k in range(2)]
        claim_results: Counter[str] = Counter()
        for escalation_id in web_set:
            proposal_id = Escalation.objects.get(pk=escalation_id).proposal_id
            clients = []
            for cookie in sessions:
                c = httpx.Client(
                    base_url=f"http://127.0.0.1:{port}",
                    timeout=30,
                    cookies={settings.SESSION_COOKIE_NAME: cookie},
                )
                page = c.get(f"/proposals/{proposal_id}")  # sets the CSRF cookie
                assert page.status_code == 200, (page.status_code, page.text[:300])
                clients.append(c)
            barrier = threading.Barrier(2)

            def post(client, action, data, barrier=barrier, escalation_id=escalation_id):
                token = client.cookies.get(settings.CSRF_COOKIE_NAME, "")
                barrier.wait()
                return client.post(
                    f"/escalations/{escalation_id}/{action}",
                    data={**data, "csrfmiddlewaretoken": token},
                    headers={"Referer": f"http://127.0.0.1:{port}/"},
                ).status_code

            with ThreadPoolExecutor(2) as pool:
                claim_codes = list(pool.map(post, clients, ["claim"] * 2, [{}] * 2))
            claimed_by = Escalation.objects.get(pk=escalation_id).claimed_by
            holder = claimed_by.username if claimed_by else None
            second = threading.Barrier(2)
            decide = {"outcome": "approved", "rationale": "Seen."}
            with ThreadPoolExecutor(2) as pool:
                decide_codes = list(
                    pool.map(post, clients, ["decide"] * 2, [decide] * 2, [second] * 2)
                )
            for c in clients:
                c.close()
            decisions = Decision.objects.filter(escalation_id=escalation_id).count()
            claim_results[
                f"claim HTTP {sorted(claim_codes)}, decide HTTP {sorted(decide_codes)}, "
                f"holder {holder in ('browser-0', 'browser-1')}, decisions {decisions}"
            ] += 1
        web_ok = all(k.endswith("decisions 1") for k in claim_results)
        ok &= web_ok
    finally:
        web.stop()

    per_escalation = Counter(
        Decision.objects.filter(escalation_id__in=escalations[: 3 * count]).values_list(
            "escalation_id", flat=True
        )
    )
    exactly_one = sum(1 for e in escalations[: 3 * count] if per_escalation[e] == 1)
    checked, problem = s.verify_chain()
    ok &= exactly_one == 3 * count and problem is None
    s.heading(f"double-decide: {'PASS' if ok else 'FAIL'}")
    s.line(
        f"API, 2 tokens × {len(api_set)} escalations",
        ", ".join(f"{k}×{v}" for k, v in answers.items()) + (" ✓" if api_ok else " ✗"),
    )
    s.line(
        f"service, 2 threads × {len(thread_set)}",
        ", ".join(f"{k}×{v}" for k, v in results.items()) + (" ✓" if thread_ok else " ✗"),
    )
    for key, v in claim_results.items():
        s.line(f"browser, 2 sessions × {len(web_set)}", f"{key} ×{v}" + (" ✓" if web_ok else " ✗"))
    s.line("escalations with exactly one decision", f"{exactly_one} / {3 * count}")
    s.line("decision chain", f"{checked} verified" + (f"; PROBLEM: {problem}" if problem else ""))
    return ok


def quiet(stub) -> None:
    """A killed or timed-out client resets its connection; the stub need not print that."""
    stub._server.handle_error = lambda request, client_address: None


def stub_port(stub) -> int:
    return int(stub.base_url.rsplit(":", 1)[1].split("/")[0])


def talking_to(pids: list[int], port: int) -> list[int]:
    """Those of `pids` holding a TCP connection to 127.0.0.1:`port` (mid-request)."""
    remote = f"0100007F:{port:04X}"
    inodes = set()
    for table in ("/proc/net/tcp",):
        for row in Path(table).read_text().splitlines()[1:]:
            cols = row.split()
            if cols[2] == remote and cols[3] == "01":  # ESTABLISHED
                inodes.add(cols[9])
    out = []
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    link = os.readlink(fd)
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        out.append(pid)
                        break
    return out


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again on leaving: nothing listens there


def llm_failures_drill(stack: Stack, count: int = 3) -> bool:
    from reviewapp.review.models import Escalation, Lens, LensFailure, Proposal
    from reviewapp.review.services.panels import panel_configure
    from tests.core.openai_stub import (
        Answer,
        CloseConnection,
        HttpError,
        MalformedBody,
        OpenAIStub,
        Slow,
        Trickle,
    )

    stack.reset()
    behaviours = {
        "llm-down": None,  # closed port
        "llm-slow": lambda: Slow(30, stub_answer()),
        "llm-trickle": lambda: Trickle(stub_answer(), interval=0.5, chunk_size=4),
        "llm-hangup": lambda: CloseConnection(),
        "llm-503": lambda: HttpError(503),
        "llm-not-json": lambda: MalformedBody("<html>502 Bad Gateway</html>"),
        "llm-prose": lambda: Answer("Looks fine to me, honestly."),
    }
    stubs = {}
    lenses = []
    with contextlib.ExitStack() as exits:
        for name, step in behaviours.items():
            if step is None:
                url = f"http://127.0.0.1:{closed_port()}/v1"
            else:
                stub = exits.enter_context(OpenAIStub())
                quiet(stub)
                stub.script([step() for _ in range(count * 10)])
                stubs[name] = stub
                url = stub.base_url
            lenses.append(
                Lens.objects.create(
                    name=name,
                    backend=Lens.Backend.LLM,
                    base_url=url,
                    model="stub",
                    instructions="Judge it.",
                    timeout_seconds=2,
                )
            )
        broken = panel_configure(
            name="broken-llms", need=4, lenses=lenses, grounding_policy="repair"
        )
        s.pipeline_panel()
        healthy = list(Lens.objects.filter(name__in=s.PIPELINE_LENSES[:2]).order_by("name"))
        mixed = panel_configure(
            name="two-good-one-down",
            need=2,
            lenses=[*healthy, lenses[0]],
            grounding_policy="repair",
        )
        items = [
            i for i in s.pipeline_contents(count * 10, tag="llm-") if i["route"] == "approved"
        ][:count]
        s.record_answers(items)
        token = s.api_token("drill-llm", "submit,read")
        env = {
            **stack.env,
            "CELERY_TASK_TIME_LIMIT": str(TIME_LIMIT),
            "CELERY_TASK_SOFT_TIME_LIMIT": str(SOFT_TIME_LIMIT),
            # No sweeps during the drill: a slow lens must finish on its own.
            "REVIEWAPP_STUCK_AFTER_SECONDS": "600",
        }
        web, port = s.start_gunicorn(env)
        worker = s.start_worker(env, beat=True, name="llm")
        try:
            started = time.monotonic()
            submitters = [Submitter(port, token, p.name, items, clients=2) for p in (broken, mixed)]
            for sub in submitters:
                sub.start()
            for sub in submitters:
                sub.join(120)
            settle = wait_settled(2 * count, timeout=TIME_LIMIT * 4)
            wall = time.monotonic() - started
        finally:
            worker.stop()
            web.stop()
    runtimes = s.task_runtimes(worker.log_path)
    log_text = worker.log_path.read_text(errors="replace")
    # A proposal's task hands its LLM lenses to the loop: even a lens that is
    # slow to fail must not keep it in its slot.
    task_runs = runtimes.get("reviewapp.review.tasks.evaluate_proposal", [])
    proposals = list(Proposal.objects.order_by("id"))
    latencies = [
        (p.finalized_at - p.created_at).total_seconds() for p in proposals if p.finalized_at
    ]
    by_panel = {}
    for p in proposals:
        esc = Escalation.objects.filter(proposal=p).first()
        by_panel.setdefault(p.panel.name, []).append(
            (
                p.status,
                tuple(esc.reasons) if esc else (),
                tuple(sorted(esc.detail["failed_lenses"])) if esc else (),
            )
        )
    failures = Counter(LensFailure.objects.values_list("lens_name", flat=True))
    errors = {
        f.lens_name: f.error for f in LensFailure.objects.order_by("lens_name", "id").distinct()
    }
    expected_broken = tuple(sorted(behaviours))
    broken_ok = (
        all(
            st == "escalated"
            and "lens_failed" in reasons
            and "no_quorum" in reasons
            and failed == expected_broken
            for st, reasons, failed in by_panel.get("broken-llms", [])
        )
        and len(by_panel.get("broken-llms", [])) == count
    )
    mixed_ok = (
        all(
            st == "escalated" and reasons == ("lens_failed",) and failed == ("llm-down",)
            for st, reasons, failed in by_panel.get("two-good-one-down", [])
        )
        and len(by_panel.get("two-good-one-down", [])) == count
    )
    limit_ok = (
        max(task_runs, default=0) < SOFT_TIME_LIMIT
        and "TimeLimitExceeded" not in log_text
        and "SoftTimeLimitExceeded" not in log_text
        and max(latencies, default=0) < TIME_LIMIT * 2
    )
    ok = broken_ok and mixed_ok and limit_ok
    s.heading(f"llm-failures: {'PASS' if ok else 'FAIL'}")
    for panel_name, rows in by_panel.items():
        for (st, reasons, failed), k in Counter(rows).items():
            s.line(f"{panel_name} ×{k}", f"{st}, reasons {list(reasons)}, names {list(failed)}")
    s.line("lens failures recorded", ", ".join(f"{k} {v}" for k, v in sorted(failures.items())))
    for name, error in sorted(errors.items()):
        s.line(f"  {name}", error[:110])
    s.line(
        "evaluate_proposal durations max / p50",
        f"{max(task_runs, default=0):.1f} s / "
        f"{s.percentile(task_runs, 50):.1f} s "
        f"(soft limit {SOFT_TIME_LIMIT} s, hard {TIME_LIMIT} s)",
    )
    s.line("time-limit kills in the worker log", str(log_text.count("TimeLimitExceeded")))
    s.line(
        "submit→final max",
        f"{max(latencies, default=0):.1f} s; all settled {settle:.1f} s "
        f"after the last submission ({wall:.1f} s overall)",
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("drills", nargs="*", help=f"any of {', '.join(ALL)} (default: all)")
    parser.add_argument("--n", type=int, default=200, help="proposals per pipeline drill")
    args = parser.parse_args()
    random.seed(1)
    drills = args.drills or ALL
    unknown = [d for d in drills if d not in ALL]
    if unknown:
        parser.error(f"unknown drill {', '.join(unknown)}; choose from {', '.join(ALL)}")
    s.heading(f"drills: {', '.join(drills)}")
    s.line("load average at start", s.load_average())
    stack = Stack()
    results = {}
    try:
        for name in drills:
            if name in ("kill-worker", "restart-redis", "restart-postgres"):
                results[name] = pipeline_drill(stack, name, args.n)
            elif name == "double-decide":
                results[name] = double_decide_drill(stack)
            elif name == "llm-failures":
                results[name] = llm_failures_drill(stack)
    finally:
        stack.close()
    s.heading("summary")
    for name, ok in results.items():
        s.line(name, "PASS" if ok else "FAIL")
    sys.exit(0 if all(results.values()) else 1)


if __name__ == "__main__":
    main()
