"""Hostile input: each answered with a clear 4xx and nothing written, or taken and rendered inert.

The list, in one place:

- API bodies, against every POST endpoint: 10 MB, 10,000-deep JSON nesting
  (inside a field and at the top), lone surrogates (in a value and in a key),
  NUL (escaped and raw), invalid and overlong UTF-8, a byte-order mark, a form
  body, a JSON array, NaN → a JSON 4xx naming the problem, and no row written.
- A 1 MB single-line proposal: accepted, stored verbatim, evaluated, and its
  pages render quickly with the text escaped.
- Regex bombs: `must match /(a+)+$/` in a constraints lens, a constraints
  checker (also through the admin's "try it" service) and a regex checker,
  evaluated on a long response: each finishes in about its 0.5–1 s budget.
- `<script>` and `javascript:` in every text field a proposal, a lens, a panel,
  a client, a judgement, a claim and a reviewer's decision carry: stored
  verbatim, and rendered escaped and inert on every HTML page (the inbox, the
  proposal page, the lists, the verify page, the admin, the dashboard).
- Query strings with NUL, lone surrogates and 30-digit numbers on every page:
  never a server error.
"""

import hashlib
import json
import time
from html.parser import HTMLParser

import pytest
from django.test import Client

from reviewapp.ledger.keys import server_signer
from reviewapp.review.evaluation.tasks import evaluate_proposal
from reviewapp.review.models import (
    CheckerConfig,
    Claim,
    Decision,
    Escalation,
    Evidence,
    Judgement,
    Lens,
    Proposal,
)
from reviewapp.review.services.clients import api_client_create
from reviewapp.review.services.escalations import escalation_decide
from reviewapp.review.services.finalize import checker_evidence
from tests.factories import LensFactory, PanelFactory, ReviewerFactory, UserFactory, recorded
from tests.security.routes import all_routes

ALL_SCOPES = ["submit", "judge", "read", "review"]
MB = 1024 * 1024


def api_client(scopes=ALL_SCOPES, name=None):
    _, token = api_client_create(name=name or f"hostile-{time.monotonic_ns()}", scopes=scopes)
    return token


def post_raw(token, path, body: bytes, content_type="application/json", **extra):
    return Client().post(
        path, body, content_type=content_type, headers={"Authorization": f"Bearer {token}"}, **extra
    )


def row_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Proposal, Judgement, Claim, Evidence, Escalation, Decision)
    }


# ── API bodies ───────────────────────────────────────────────────────────────

DEEP = 10_000


def hostile_bodies(panel: str) -> dict[str, tuple[bytes, str, int]]:
    """name → (body, content type, expected status)."""
    ok = (
        f'"panel": "{panel}", "lens": "l", "verdict": "pass", '
        '"outcome": "approved", "rationale": "r"'
    )
    return {
        "10 MB body": (
            json.dumps({"panel": panel, "content": "x" * (10 * MB)}).encode(),
            "application/json",
            413,
        ),
        "10,000-deep nesting in a field": (
            ("{" + ok + ', "content": "x", "metadata": ' + "[" * DEEP + "]" * DEEP + "}").encode(),
            "application/json",
            422,
        ),
        "10,000-deep nesting at the top": (
            ("[" * DEEP + "]" * DEEP).encode(),
            "application/json",
            422,
        ),
        "10,000-deep objects": (
            ('{"a":' * DEEP + "1" + "}" * DEEP).encode(),
            "application/json",
            422,
        ),
        "lone surrogate in a value": (
            ("{" + ok + ', "content": "x \\ud83d y", "source": "\\ud83d", "cite": "x"}').encode(),
            "application/json",
            422,
        ),
        "lone surrogate in a key": (
            ("{" + ok + ', "content": "x", "metadata": {"\\udc00": 1}}').encode(),
            "application/json",
            422,
        ),
        "escaped NUL": (
            ("{" + ok + ', "content": "a\\u0000b", "source": "a\\u0000", "cite": "a"}').encode(),
            "application/json",
            422,
        ),
        "raw NUL byte": (
            ("{" + ok + ', "content": "a').encode() + b"\x00" + b'"}',
            "application/json",
            422,
        ),
        "invalid UTF-8": (
            ("{" + ok + ', "content": "').encode() + b"\xff\xfe\xfd" + b'"}',
            "application/json",
            422,
        ),
        "overlong UTF-8 slash": (
            ("{" + ok + ', "content": "').encode() + b"\xc0\xaf" + b'"}',
            "application/json",
            422,
        ),
        "UTF-8 byte-order mark": (
            b"\xef\xbb\xbf" + ("{" + ok + ', "content": "x"}').encode(),
            "application/json",
            422,
        ),
        "form-encoded body": (
            f"panel={panel}&content=x".encode(),
            "application/x-www-form-urlencoded",
            422,
        ),
        "JSON array": (b'["panel", "content"]', "application/json", 422),
        "NaN": (
            ("{" + ok + ', "content": "x", "metadata": {"n": NaN}}').encode(),
            "application/json",
            422,
        ),
    }


def post_paths(world) -> dict[str, str]:
    return {
        "submit": "/api/proposals",
        "judge": f"/api/proposals/{world['proposal'].pk}/judgements",
        "decide": f"/api/escalations/{world['escalation'].pk}/decision",
        "cite": "/api/cite/resolve",
    }


@pytest.fixture
def api_world(db):
    from tests.web.builders import make_panel, split_panel_proposal

    panel = make_panel("accuracy", "tone")
    proposal = split_panel_proposal(panel)
    return {
        "panel": panel,
        "proposal": proposal,
        "escalation": Escalation.objects.get(proposal=proposal),
        "token": api_client(),
    }


@pytest.mark.parametrize("endpoint", ["submit", "judge", "decide", "cite"])
def test_hostile_bodies_are_refused_with_a_json_4xx_and_nothing_written(api_world, endpoint):
    path = post_paths(api_world)[endpoint]
    before = row_counts()
    failures = {}
    for name, (body, content_type, expected) in hostile_bodies(api_world["panel"].name).items():
        started = time.monotonic()
        response = post_raw(api_world["token"], path, body, content_type)
        elapsed = time.monotonic() - started
        detail = (
            response.json().get("detail")
            if response["Content-Type"].startswith("application/json")
            else None
        )
        if response.status_code != expected or not detail or elapsed > 5:
            failures[name] = (response.status_code, str(detail)[:120], round(elapsed, 2))
    assert not failures, failures
    assert row_counts() == before


def test_a_10mb_body_is_refused_before_it_is_read(api_world):
    # Declared length over the limit: refused on the header, before auth and parsing.
    response = post_raw(api_world["token"], "/api/proposals", b"{}", CONTENT_LENGTH=str(10 * MB))
    assert response.status_code == 413
    assert "limit" in response.json()["detail"]


# ── a 1 MB single line ───────────────────────────────────────────────────────


def test_a_1mb_single_line_proposal_is_stored_verbatim_evaluated_and_rendered(db):
    tail = "the end <b>of</b> the line 🎯"
    content = ("word " * (MB // 5)).rstrip() + " " + tail  # one line, no newline, ~1 MB
    assert "\n" not in content and len(content.encode()) > MB
    lens = LensFactory(name="long-line")
    recorded(
        lens,
        content,
        json.dumps(
            {
                "verdict": "pass",
                "rationale": "ok",
                "claims": [{"cite": tail, "assessment": "verified"}],
            }
        ),
    )
    panel = PanelFactory(lenses=[lens], grounding_policy="reject")
    token = api_client()

    started = time.monotonic()
    response = post_raw(
        token, "/api/proposals", json.dumps({"panel": panel.name, "content": content}).encode()
    )
    assert response.status_code == 202, response.content[:300]
    proposal = Proposal.objects.get(pk=response.json()["id"])
    assert proposal.content == content
    assert proposal.content_sha256 == hashlib.sha256(content.encode()).hexdigest()

    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.status == "decided"
    claim = Claim.objects.get(judgement__proposal=proposal)
    assert claim.text == tail and claim.anchor_kind == "answer_body"

    reviewer = Client()
    reviewer.force_login(ReviewerFactory())
    page = reviewer.get(f"/proposals/{proposal.pk}")
    assert page.status_code == 200
    assert b"the end &lt;b&gt;of&lt;/b&gt; the line" in page.content
    assert b"<b>of</b>" not in page.content
    assert time.monotonic() - started < 30


# ── regex bombs in mandates ──────────────────────────────────────────────────

# Both backtrack catastrophically in a backtracking engine. Patterns run on Rust's regex
# crate, in time linear in the text, so each is simply decided: no time-out is involved.
BOMB_PATTERNS = ["(a+)+$", "(a|aa)+$"]
BOMB = "must match /(a|aa)+$/"
BOMB_TEXT = "a" * 40 + "!"
BUDGET_SECONDS = 5.0


def timed(fn):
    started = time.monotonic()
    result = fn()
    return result, time.monotonic() - started


def bomb_proposal(checkers=(), lenses=None):
    from reviewapp.review.services.proposals import proposal_submit

    lens = LensFactory()
    recorded(lens, BOMB_TEXT, json.dumps({"verdict": "pass", "rationale": "ok", "claims": []}))
    panel = PanelFactory(lenses=lenses or [lens], checkers=list(checkers))
    proposal, _ = proposal_submit(panel_name=panel.name, content=BOMB_TEXT)
    return proposal


@pytest.mark.parametrize("pattern", BOMB_PATTERNS)
def test_regex_bomb_in_a_constraints_checker_finishes_quickly_and_never_approves(db, pattern):
    checker = CheckerConfig(
        name="bomb", kind="constraints", settings={"mandate": f"must match /{pattern}/"}
    )
    checker.full_clean()  # the admin's door accepts it: the pattern is valid
    checker.save()
    proposal = bomb_proposal([checker])

    evidence, elapsed = timed(
        lambda: checker_evidence(proposal=proposal, checker=checker, signer=server_signer())
    )

    assert elapsed < BUDGET_SECONDS
    assert evidence.verdict.value != "pass"
    assert pattern in evidence.reason


def test_a_regex_bomb_in_a_constraints_checker_is_decided_and_rejects(db):
    checker = CheckerConfig.objects.create(
        name="bomb", kind="constraints", settings={"mandate": BOMB}
    )
    proposal = bomb_proposal([checker])
    evaluate_proposal(proposal.pk)

    proposal.refresh_from_db()
    assert Evidence.objects.get(proposal=proposal).verdict == "fail"
    assert proposal.status == "decided"


def test_a_proposal_too_large_to_match_makes_a_constraints_checker_inconclusive(
    db, monkeypatch
):
    from reviewapp.core import regex_dialect

    monkeypatch.setattr(regex_dialect, "MAX_INPUT_CHARS", len(BOMB_TEXT) - 1)
    checker = CheckerConfig.objects.create(
        name="bomb", kind="constraints", settings={"mandate": BOMB}
    )
    proposal = bomb_proposal([checker])
    evaluate_proposal(proposal.pk)

    proposal.refresh_from_db()
    assert Evidence.objects.get(proposal=proposal).verdict == "inconclusive"
    assert proposal.status == "escalated"


def test_an_instantly_answered_regex_bomb_in_a_constraints_lens_is_a_violation(db):
    from reviewapp.review.evaluation.evaluators import evaluate_lens

    lens = Lens.objects.create(
        name="bomb-lens", backend=Lens.Backend.CONSTRAINTS, mandate="must match /(a+)+$/"
    )
    outcome, elapsed = timed(
        lambda: evaluate_lens(lens=lens, proposal=bomb_proposal(lenses=[lens]))
    )
    assert elapsed < BUDGET_SECONDS
    assert outcome.verdict == "fail" and "(a+)+$" in outcome.rationale


def test_the_backtracking_bomb_in_a_constraints_lens_is_a_violation_too(db):
    from reviewapp.review.evaluation.evaluators import evaluate_lens

    lens = Lens.objects.create(name="bomb-lens", backend=Lens.Backend.CONSTRAINTS, mandate=BOMB)
    outcome, elapsed = timed(
        lambda: evaluate_lens(lens=lens, proposal=bomb_proposal(lenses=[lens]))
    )
    assert elapsed < BUDGET_SECONDS
    assert outcome.verdict == "fail" and "(a|aa)+$" in outcome.rationale


@pytest.mark.parametrize(("pattern", "verdict"), [("(a+)+$", "fail"), ("(a|aa)+$", "fail")])
def test_regex_bomb_in_a_regex_checker_finishes_quickly(db, pattern, verdict):
    checker = CheckerConfig.objects.create(
        name="bomb-regex", kind="regex", settings={"pattern": pattern, "must_match": True}
    )
    proposal = bomb_proposal([checker])

    evidence, elapsed = timed(
        lambda: checker_evidence(proposal=proposal, checker=checker, signer=server_signer())
    )

    assert elapsed < BUDGET_SECONDS
    assert evidence.verdict.value == verdict


def test_regex_bomb_through_the_admin_trial_finishes_quickly(db):
    from reviewapp.audit.trials import trial_run, trial_start

    checker = CheckerConfig.objects.create(
        name="bomb-trial", kind="constraints", settings={"mandate": BOMB}
    )
    trial = trial_start(kind="checker", target=checker, sample=BOMB_TEXT * 50)

    done, elapsed = timed(lambda: trial_run(trial.pk))

    assert elapsed < BUDGET_SECONDS
    assert done.result["verdict"] != "pass"


def test_constraints_preview_of_a_regex_bomb_answers_quickly(db, client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    mandate = "; ".join([BOMB] * 20)
    response, elapsed = timed(
        lambda: client.post("/admin/review/checkerconfig/constraints-preview/", {"text": mandate})
    )
    assert response.status_code < 500
    assert elapsed < BUDGET_SECONDS


# ── <script> and javascript: everywhere ──────────────────────────────────────


def payloads(field: str) -> str:
    return f'<script>alert("xss-{field}")</script> javascript:alert("xss-{field}")'


class InertChecker(HTMLParser):
    """Collects anything in a page that would run script: inline code, handlers, js: URLs."""

    URL_ATTRIBUTES = {
        "href",
        "src",
        "action",
        "formaction",
        "xlink:href",
        "data",
        "poster",
        "hx-get",
        "hx-post",
        "hx-put",
        "hx-delete",
        "hx-patch",
    }

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self._script: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name, value in attrs.items():
            value = (value or "").strip().lower()
            if name.startswith("on") and "xss-" in value:
                self.problems.append(f"<{tag} {name}=…> carries the payload")
            if name in self.URL_ATTRIBUTES and value.replace("\x00", "").startswith("javascript:"):
                self.problems.append(f"<{tag} {name}={value[:40]!r}>")
        if tag == "script":
            self._script = attrs

    def handle_data(self, data):
        if self._script is not None and "xss-" in data:
            kind = (self._script.get("type") or "").lower()
            if kind != "application/json":
                self.problems.append(f"the payload runs inside <script type={kind!r}>")

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None


def assert_inert(html: bytes, where: str) -> None:
    text = html.decode()
    assert "<script>alert(" not in text, f"{where}: raw <script> payload in the page"
    checker = InertChecker()
    checker.feed(text)
    assert not checker.problems, (where, checker.problems)


@pytest.fixture
def xss_world(db):
    """A proposal whose every text field, and every text field around it, carries the payloads."""
    from tests.web.builders import judgement

    lenses = [
        LensFactory(
            name=f'<script>alert("xss-lens{i}")</script>', description=payloads("lens-description")
        )
        for i in range(2)
    ]
    panel = PanelFactory(
        name='<script>alert("xss-panel")</script>', lenses=lenses, need=2, grounding_policy="repair"
    )
    token = api_client(name='<script>alert("xss-client")</script>')
    fields = {
        "title": payloads("title")[:300],
        "content": "Plain start. " + payloads("content") + " Plain end.",
        "thought_process": payloads("thought"),
        "external_ref": payloads("ref")[:200],
        "metadata": {payloads("meta-key"): payloads("meta-value")},
    }
    cite = payloads("content")
    recorded(
        lenses[0],
        fields["content"],
        judgement(
            "pass",
            {"cite": cite, "assessment": "verified", "note": payloads("note")},
            rationale=payloads("rationale"),
        ),
    )
    recorded(
        lenses[1],
        fields["content"],
        judgement(
            "fail",
            {"cite": "javascript:alert", "assessment": "refuted", "note": payloads("note2")},
            rationale=payloads("rationale2"),
        ),
    )
    response = post_raw(
        token, "/api/proposals", json.dumps({"panel": panel.name, **fields}).encode()
    )
    assert response.status_code == 202, response.content
    proposal = Proposal.objects.get(pk=response.json()["id"])
    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    assert proposal.status == "escalated"
    return {"proposal": proposal, "fields": fields, "token": token}


def test_script_payloads_are_stored_verbatim(xss_world):
    proposal, fields = xss_world["proposal"], xss_world["fields"]
    for name, value in fields.items():
        assert getattr(proposal, name) == value, name
    detail = (
        Client()
        .get(
            f"/api/proposals/{proposal.pk}",
            headers={"Authorization": f"Bearer {xss_world['token']}"},
        )
        .json()
    )
    for name in ("title", "content", "thought_process"):
        assert detail[name] == fields[name]
    rationales = {j["rationale"] for j in detail["judgements"]}
    assert payloads("rationale") in rationales
    cites = [c["text"] for j in detail["judgements"] for c in j["claims"]]
    assert payloads("content") in cites


def test_script_payloads_render_inert_on_the_inbox_and_the_proposal_page(xss_world, client):
    proposal = xss_world["proposal"]
    client.force_login(ReviewerFactory())

    inbox = client.get("/")
    assert inbox.status_code == 200
    assert_inert(inbox.content, "inbox")
    assert b"&lt;script&gt;alert(" in inbox.content  # the title shows, as text

    page = client.get(f"/proposals/{proposal.pk}")
    assert page.status_code == 200
    assert_inert(page.content, "proposal page")
    html = page.content.decode()
    for field in ("title", "content", "thought", "rationale", "note", "client", "panel"):
        assert f"&lt;script&gt;alert(&quot;xss-{field}&quot;)&lt;/script&gt;" in html, field


def test_a_reviewers_rationale_renders_inert(xss_world, client):
    reviewer = ReviewerFactory()
    escalation = Escalation.objects.get(proposal=xss_world["proposal"])
    decision = escalation_decide(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale=payloads("decision"),
        user=reviewer,
        decided_by_name=reviewer.username,
    )
    assert decision.rationale == payloads("decision")
    client.force_login(reviewer)
    for url in (
        f"/proposals/{xss_world['proposal'].pk}",
        "/decisions",
        f"/decisions/{decision.pk}/verify",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_inert(response.content, url)


def test_every_html_page_renders_the_payloads_inert(xss_world, client):
    """Every GET route, as a superuser (who sees the most), with ids of the payload rows."""
    proposal = xss_world["proposal"]
    escalation = Escalation.objects.get(proposal=proposal)
    superuser = UserFactory(is_staff=True, is_superuser=True)
    escalation_decide(
        escalation_id=escalation.pk,
        outcome="rejected",
        rationale=payloads("decision"),
        user=superuser,
        decided_by_name=superuser.username,
    )
    ids = {
        "proposals": proposal.pk,
        "escalations": escalation.pk,
        "decisions": Decision.objects.get(proposal=proposal).pk,
        "admin_proposal": proposal.pk,
        "admin_lens": proposal.panel.ordered_lenses()[0].pk,
        "admin_panel": proposal.panel_id,
        "admin_apiclient": proposal.client_id,
    }
    client.force_login(superuser)
    checked = 0
    for route in all_routes():
        if route.name in ("logout", "admin:logout"):
            continue
        response = client.get(route.url(ids))
        content_type = response.get("Content-Type", "")
        if response.status_code == 200 and content_type.startswith("text/html"):
            assert_inert(response.content, str(route))
            checked += 1
        if response.status_code == 200:
            assert response.get("X-Content-Type-Options") == "nosniff", route
    assert checked >= 10


# ── hostile query strings on every page ──────────────────────────────────────

QUERY_PARAMS = (
    "q",
    "page",
    "panel",
    "status",
    "reason",
    "outcome",
    "basis",
    "cursor",
    "limit",
    "after",
    "next",
    "o",
    "p",
    "e",
    "_changelist_filters",
)
HOSTILE_VALUES = {
    "NUL": "%00",
    "NUL inside": "a%00b",
    "lone surrogate": "%ED%A0%80",
    "30 digits": "9" * 30,
    "negative": "-1",
    "script": "%3Cscript%3Ealert(1)%3C/script%3E",
}


@pytest.mark.parametrize("value", HOSTILE_VALUES.values(), ids=HOSTILE_VALUES.keys())
def test_hostile_query_strings_never_cause_a_server_error(request, world, users, value):
    client = Client(raise_request_exception=False)
    client.force_login(users["superuser"])
    query = "&".join(f"{name}={value}" for name in QUERY_PARAMS)
    errors = {}
    for route in all_routes():
        if route.name in ("logout", "admin:logout", "healthz"):
            continue
        response = client.get(route.url(world["ids"]) + "?" + query)
        if response.status_code >= 500:
            errors[str(route)] = response.status_code
    assert not errors, errors
    if "script" in value:
        page = client.get("/proposals?" + query)
        assert_inert(page.content, "proposal list with a script in the query")


def test_hostile_path_ids_are_404_not_500(world, users, client):
    client.force_login(users["superuser"])
    for url in (
        "/proposals/" + "9" * 30,
        "/proposals/" + "9" * 30 + "/progress",
        "/decisions/" + "9" * 30 + "/verify",
    ):
        assert client.get(url).status_code == 404, url
    for url in ("/escalations/" + "9" * 30 + "/claim", "/escalations/" + "9" * 30 + "/decide"):
        assert client.post(url, {"outcome": "approved", "rationale": "x"}).status_code == 404, url
