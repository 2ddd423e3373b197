"""Content-Security-Policy and Permissions-Policy, checked in headless Chromium.

Every page type is loaded under the enforced policy; the browser reports each
blocked script, style or style attribute as a `securitypolicyviolation` event,
and the page must report none (and still work: the admin's JavaScript runs,
Swagger UI renders the operations).
"""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from reviewapp.review.models import Decision, Escalation, Lens
from tests.factories import ReviewerFactory, UserFactory
from tests.web.builders import judgement, make_panel, run_panel, split_panel_proposal

# Recorded from the start of every document, before any script runs.
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(
    `${e.effectiveDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber}`
));
"""


@pytest.fixture
def site(transactional_db):
    Group.objects.get_or_create(name="reviewers")
    panel = make_panel("accuracy", "tone")
    escalated = split_panel_proposal(panel, title="Split verdict")
    decided = run_panel(
        make_panel("solo", need=1), "All good.", {"solo": judgement("pass", "All good")}
    )
    return {
        "escalated": escalated,
        "escalation": Escalation.objects.get(proposal=escalated),
        "decision": Decision.objects.get(proposal=decided),
        "lens": Lens.objects.get(name="accuracy"),
    }


def _open(open_as, user, path):
    page = open_as(user, "about:blank")
    page.add_init_script(RECORD_VIOLATIONS)
    console = []
    page.on(
        "console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None
    )
    response = page.goto(path)
    page.wait_for_load_state("networkidle")
    return page, response, console


def _violations(page, console) -> list[str]:
    return page.evaluate("window.__cspViolations") + console


def _reviewer_pages(site):
    return [
        reverse("inbox"),
        reverse("proposal_list") + "?q=sky",
        reverse("proposal_detail", args=[site["escalated"].pk]),
        reverse("decision_list"),
        reverse("decision_verify", args=[site["decision"].pk]),
        reverse("dashboard"),
    ]


@pytest.mark.browser
def test_reviewer_pages_run_under_the_policy_without_a_violation(open_as, site):
    reviewer = ReviewerFactory(username="rita")
    for path in _reviewer_pages(site):
        page, response, console = _open(open_as, reviewer, path)
        assert response.status == 200, path
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy, policy
        assert _violations(page, console) == [], path
        assert page.errors == [], path


@pytest.mark.browser
def test_the_inbox_still_polls_under_the_policy(open_as, site, fast_polls):
    page, _, console = _open(open_as, ReviewerFactory(username="rita"), reverse("inbox"))
    with page.expect_request(lambda r: r.headers.get("hx-request") == "true", timeout=10_000):
        pass
    assert _violations(page, console) == []


@pytest.mark.browser
def test_admin_pages_run_under_the_policy_and_their_scripts_work(open_as, site):
    admin = UserFactory(username="ada", is_staff=True, is_superuser=True)
    for path in (
        reverse("admin:index"),
        reverse("admin:review_lens_changelist"),
        reverse("admin:review_lens_change", args=[site["lens"].pk]),
        reverse("admin:review_panel_add"),
        reverse("admin:audit_auditentry_changelist"),
    ):
        page, response, console = _open(open_as, admin, path)
        assert response.status == 200, path
        assert _violations(page, console) == [], path
        assert page.errors == [], path
    # The admin's own JavaScript ran (it is nonce-less, from 'self').
    page, _, console = _open(open_as, admin, reverse("admin:review_lens_changelist"))
    assert page.evaluate("typeof window.django === 'object'")


@pytest.mark.browser
def test_api_docs_render_under_the_policy(open_as, site):
    admin = UserFactory(username="ada", is_staff=True, is_superuser=True)
    page, response, console = _open(open_as, admin, "/api/docs")
    assert response.status == 200
    page.wait_for_selector(".opblock", timeout=15_000)  # Swagger UI drew the operations
    assert _violations(page, console) == []


def test_every_response_carries_the_policies(reviewer_client):
    response = reviewer_client.get(reverse("inbox"))
    policy = response["Content-Security-Policy"]
    for directive in (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
        "base-uri 'none'",
        "object-src 'none'",
    ):
        assert directive in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "camera=()" in response["Permissions-Policy"]
    api = reviewer_client.get("/api/proposals")
    assert "Content-Security-Policy" in api and "Permissions-Policy" in api


def test_templates_carry_no_inline_script_style_or_handler():
    """Inline code would need 'unsafe-inline'; nothing here may rely on it."""
    import re
    from pathlib import Path

    from django.conf import settings

    offenders = []
    for path in Path(settings.BASE_DIR, "templates").rglob("*.html"):
        text = path.read_text()
        for pattern in (
            r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>",
            r"<style\b",
            r"\sstyle=",
            r"\son[a-z]+=",
            r"hx-on",
            r"javascript:",
        ):
            offenders += [f"{path.name}: {m.group(0)}" for m in re.finditer(pattern, text)]
    assert offenders == []
