"""Who may open what: every URL pattern of the project, for every kind of caller.

The URL list is enumerated from the resolver (tests/security/routes.py), not
written down, so a new view or endpoint is refused to strangers unless it is
added to PUBLIC below with a reason. The API's scope matrix is enumerated from
the NinjaAPI's registered operations the same way.
"""

import json
import re
from urllib.parse import urlparse

import pytest
from django.test import Client
from django.urls import reverse

from reviewapp.api import api
from reviewapp.api.auth import ApiAuth
from reviewapp.api.ledger import LedgerReader
from tests.security.routes import all_routes

ROUTES = all_routes()
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
CSRF_SECRET = "s" * 32

# Open to anyone, each for a reason. Matched against the route's name (or, for
# unnamed patterns, its pattern text) with re.fullmatch.
PUBLIC = {
    r"healthz": "load balancers and compose health checks probe it",
    r"login": "the way in",
    r"logout": "ending a session that does not exist is harmless",
    r"admin:login": "the admin's way in",
    r"admin:logout": "ending a session that does not exist is harmless",
    r"api:openapi-json|api:openapi-view|api:api-root": "the API's documentation is public",
    r"\^api/\(\?P<path>\.\*\)\$": "unknown API paths answer a JSON 404",
    r"api:ledger.*|.*ledger_public.*": "the ledger's verifiability endpoints are public by design",
    r"api:key_list": "the public keys that check the ledger's signatures, as a transparency "
    "log's are",
    # Entry bundles under it need a reader: tests/ledger/test_tiles.py.
    r"ledger_tiles_checkpoint|ledger_tile": "tlog-tiles: the checkpoint and hash tiles are public "
    "like the proofs",
}


def is_public(route) -> bool:
    return any(
        re.fullmatch(pattern, route.name) for pattern in PUBLIC
    ) or route.template.startswith("api/ledger")


PROTECTED = [r for r in ROUTES if not is_public(r)]
ADMIN = [r for r in ROUTES if r.template.startswith("admin/") and not is_public(r)]
LOGIN_PATHS = ("/login/", "/admin/login/")


def refused(response) -> bool:
    """401/403, or a redirect to a login page."""
    if response.status_code in (401, 403):
        return True
    if response.status_code in (301, 302, 303, 307, 308):
        return urlparse(response["Location"]).path in LOGIN_PATHS
    return False


def server_error(route, response) -> bool:
    # /healthz says 503 when no worker answers its ping: that is its job.
    if route.name == "healthz" and response.status_code == 503:
        return False
    return response.status_code >= 500


def outcome(client: Client, route, ids, **headers) -> dict[str, int]:
    """Status per method; fails on any refusal-shaped answer that is not one, or any 5xx."""
    url = route.url(ids)
    statuses = {}
    for method in METHODS:
        response = client.generic(method, url, data=b"", content_type="application/json", **headers)
        statuses[method] = response
    return statuses


def assert_refused_everywhere(client, route, ids, who: str, **headers) -> None:
    responses = outcome(client, route, ids, **headers)
    allowed = {
        m: r.status_code for m, r in responses.items() if not refused(r) and r.status_code != 405
    }
    assert not allowed, f"{who} got through to {route}: {allowed}"
    assert any(r.status_code != 405 for r in responses.values()), (
        f"{route}: every method answered 405, so nothing was checked"
    )


def test_the_route_list_covers_the_project():
    """The enumeration sees the admin, the API, the review pages and the health check."""
    names = {r.name for r in ROUTES}
    for expected in (
        "inbox",
        "proposal_detail",
        "my_tokens",
        "my_token_revoke",
        "my_progress",
        "api:proposal_create",
        "admin:index",
        "healthz",
    ):
        assert expected in names, expected
    assert len(ROUTES) > 40


@pytest.mark.parametrize("route", PROTECTED, ids=str)
def test_anonymous_callers_are_refused(client, world, route):
    assert_refused_everywhere(client, route, world["ids"], "an anonymous caller")


@pytest.mark.parametrize("route", PROTECTED, ids=str)
def test_signed_in_users_outside_the_reviewers_group_are_refused(client, world, users, route):
    client.force_login(users["plain"])
    assert_refused_everywhere(
        client, route, world["ids"], "a user who is neither reviewer nor staff"
    )


@pytest.mark.parametrize("route", ADMIN, ids=str)
def test_reviewers_who_are_not_staff_are_refused_by_the_admin(client, world, users, route):
    client.force_login(users["reviewer"])
    assert_refused_everywhere(client, route, world["ids"], "a reviewer without staff status")


@pytest.mark.parametrize("route", [r for r in ROUTES if is_public(r)], ids=str)
def test_public_routes_answer_without_a_server_error(client, world, route):
    for method, response in outcome(client, route, world["ids"]).items():
        assert not server_error(route, response), (route, method, response.status_code)


@pytest.mark.parametrize("role", ["anonymous", "plain", "reviewer", "staff", "superuser"])
def test_no_route_answers_a_server_error(client, world, users, role):
    if role != "anonymous":
        client.force_login(users[role])
    errors = {}
    for route in ROUTES:
        if route.name in ("logout", "admin:logout"):
            continue  # would end this loop's session
        for method, response in outcome(client, route, world["ids"]).items():
            if server_error(route, response):
                errors[f"{method} {route}"] = response.status_code
    assert not errors, errors


# ── the API: every operation × every credential ──────────────────────────────

SCOPES = ("submit", "judge", "read", "review")


def api_operations():
    """(method, path template, scope) of every operation.

    scope None: any credential will do; "client": any token, never a session
    (what belongs to an API client, such as its webhooks); "public": no
    credential is asked for.
    """
    out = []
    for prefix, router in api._routers:
        for path, path_view in router.path_operations.items():
            for operation in path_view.operations:
                auths = operation.auth_callbacks or []
                if not auths:
                    scope = "public"
                else:
                    (auth,) = auths
                    assert isinstance(auth, ApiAuth | LedgerReader), f"{path}: unexpected {auth!r}"
                    scope = auth.scope
                    if not getattr(auth, "sessions", True):
                        assert scope is None, f"{path}: a client-only operation with a scope"
                        scope = "client"
                for method in operation.methods:
                    out.append((method, "/api" + (prefix or "") + path, scope))
    return out


OPERATIONS = api_operations()


def op_url(path: str, ids: dict) -> str:
    return (
        path.replace("{proposal_id}", str(ids["proposals"]))
        .replace("{escalation_id}", str(ids["escalations"]))
        .replace("{decision_id}", str(ids["decisions"]))
        # GET /api/lenses/{name}/agreement: a lens of the world's panel, so a 404 hides nothing.
        .replace("{name}", "accuracy")
    )


def call(method, url, *, token=None, client=None, csrf=False):
    client = client or Client()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if csrf:
        headers["X-CSRFToken"] = CSRF_SECRET
    return client.generic(method, url, data=b"{}", content_type="application/json", headers=headers)


_tokens = iter(range(10**6))


def token_with(*scopes):
    from reviewapp.review.services.clients import api_client_create

    return api_client_create(name=f"sec-client-{next(_tokens)}", scopes=list(scopes))[1]


def test_every_api_operation_is_in_the_matrix():
    assert len(OPERATIONS) >= 10
    public = [op for op in OPERATIONS if op[2] == "public"]
    # The ledger's proofs, and the keys that check its signatures (a transparency log's).
    assert all(path.startswith("/api/ledger") or path == "/api/keys" for _, path, _ in public), (
        public
    )


@pytest.mark.parametrize(("method", "path", "scope"), OPERATIONS, ids=lambda v: str(v))
def test_api_without_credentials(world, method, path, scope):
    response = call(method, op_url(path, world["ids"]))
    if scope == "public":
        assert response.status_code < 500
    else:
        assert response.status_code == 401, response.content
        assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(("method", "path", "scope"), OPERATIONS, ids=lambda v: str(v))
def test_api_token_scope_matrix(world, method, path, scope):
    url = op_url(path, world["ids"])
    if scope in ("public", None, "client"):
        assert call(method, url, token=token_with("read")).status_code not in (401, 403)
        return
    others = [s for s in SCOPES if s != scope]
    wrong = call(method, url, token=token_with(*others))
    assert wrong.status_code == 403, (scope, wrong.status_code, wrong.content)
    assert f"'{scope}'" in json.loads(wrong.content)["detail"]
    right = call(method, url, token=token_with(scope))
    assert right.status_code not in (401, 403), (scope, right.status_code, right.content)
    assert right.status_code < 500


# Sessions: reviewers read and decide; staff read; nobody submits or judges with a cookie.
# (read:all: only raw ledger entries ask it of a token; staff and reviewers see every
# proposal anyway.) "client" (webhooks) is nobody's session: staff manage those in the admin.
SESSION_ALLOWED = {
    "plain": set(),
    "staff": {None, "read", "read:all"},
    "reviewer": {None, "read", "read:all", "review"},
    "superuser": {None, "read", "read:all", "review"},
}


@pytest.mark.parametrize("role", list(SESSION_ALLOWED))
def test_api_session_matrix(world, users, role):
    problems = []
    for method, path, scope in OPERATIONS:
        if scope == "public":
            continue
        client = Client(enforce_csrf_checks=True)
        client.force_login(users[role])
        client.cookies["csrftoken"] = CSRF_SECRET
        response = call(method, op_url(path, world["ids"]), client=client, csrf=True)
        expected_ok = scope in SESSION_ALLOWED[role]
        got_ok = response.status_code not in (401, 403)
        if expected_ok != got_ok or response.status_code >= 500:
            problems.append((method, path, scope, response.status_code))
    assert not problems, problems


def test_session_post_without_csrf_token_is_refused(world, users):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["reviewer"])
    url = op_url("/api/escalations/{escalation_id}/decision", world["ids"])
    response = client.post(
        url, {"outcome": "approved", "rationale": "x"}, content_type="application/json"
    )
    assert response.status_code == 403


def test_login_page_is_reachable_and_the_login_url_is_what_views_redirect_to(client):
    assert client.get(reverse("login")).status_code == 200
    assert urlparse(client.get(reverse("inbox"))["Location"]).path == reverse("login")


# Staff without model permissions may open the admin's own pages, nothing of a model.
STAFF_ONLY_PAGES = r"admin:(index|logout|password_change|password_change_done|jsi18n|autocomplete)"
MODEL_ADMIN = [
    r for r in ADMIN if not re.fullmatch(STAFF_ONLY_PAGES, r.name) and r.template.count("/") >= 3
]


@pytest.mark.parametrize("route", MODEL_ADMIN, ids=str)
def test_staff_without_permissions_cannot_use_model_admin_pages(client, world, users, route):
    client.force_login(users["staff"])
    url = route.url(world["ids"])
    for method in ("GET", "POST"):
        response = client.generic(method, url, data=b"")
        if response.status_code in (301, 302) and not refused(response):
            # The admin's bare object URL redirects to its change page, which refuses.
            target = urlparse(response["Location"]).path
            if target == "/admin/":
                continue  # "object does not exist": nothing shown
            assert target.startswith(url.rstrip("/")), (route, method, target)
            response = client.generic(method, target, data=b"")
        assert response.status_code in (403, 404) or refused(response), (
            route,
            method,
            response.status_code,
        )


def test_the_replay_pages_are_enumerated_as_model_admin_pages():
    """Staff-only, and refused to staff without the replay permissions, by the tests above."""
    names = {r.name for r in MODEL_ADMIN}
    for expected in (
        "admin:replay_replay_progress",
        "admin:replay_replay_start",
        "admin:replay_replay_cancel",
        "admin:replay_replay_change",
        "admin:replay_regressioncase_add_proposal",
    ):
        assert expected in names, expected
