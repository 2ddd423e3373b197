"""The configuration admin is staff-only: reviewers without staff status cannot reach it."""

import pytest

from reviewapp.audit.models import Trial
from tests.factories import CheckerFactory, LensFactory, UserFactory

pytestmark = pytest.mark.django_db


def admin_urls():
    lens = LensFactory(name="accuracy")
    checker = CheckerFactory(name="gate")
    trial = Trial.objects.create(kind="lens", target_id=lens.pk, target_name="accuracy", sample="x")
    return [
        ("get", "/admin/"),
        ("get", "/admin/review/lens/"),
        ("get", "/admin/review/lens/add/"),
        ("get", f"/admin/review/lens/{lens.pk}/change/"),
        ("get", f"/admin/review/lens/{lens.pk}/try/"),
        ("post", f"/admin/review/lens/{lens.pk}/try/"),
        ("get", "/admin/review/panel/add/"),
        ("get", f"/admin/review/checkerconfig/{checker.pk}/try/"),
        ("post", "/admin/review/checkerconfig/constraints-preview/"),
        ("get", "/admin/review/apiclient/add/"),
        ("post", "/admin/review/apiclient/add/"),
        ("get", "/admin/ledger/signingkey/"),
        ("post", "/admin/ledger/signingkey/rotate/"),
        ("get", "/admin/audit/auditentry/"),
        ("get", f"/admin/audit/trial/{trial.pk}/result/"),
        ("get", f"/admin/audit/trial/{trial.pk}/status/"),
    ]


def test_a_reviewer_without_staff_status_cannot_reach_any_admin_page(client, reviewer):
    client.force_login(reviewer)
    for method, url in admin_urls():
        response = getattr(client, method)(url, {"name": "x", "scopes": ["read"], "sample": "s"})
        assert response.status_code == 302, (url, response.status_code)
        assert response["Location"].startswith("/admin/login/"), url
    from reviewapp.review.models import ApiClient

    assert not ApiClient.objects.exists()
    assert Trial.objects.count() == 1


def test_anonymous_visitors_are_sent_to_the_admin_login(client):
    for method, url in admin_urls():
        response = getattr(client, method)(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url


def test_staff_without_permissions_are_refused(client):
    client.force_login(UserFactory(username="stan", is_staff=True))
    lens = LensFactory()
    assert client.get("/admin/review/lens/").status_code == 403
    assert client.get(f"/admin/review/lens/{lens.pk}/try/").status_code == 403
    assert client.post("/admin/ledger/signingkey/rotate/").status_code == 403
    assert (
        client.post(
            "/admin/review/checkerconfig/constraints-preview/", {"mandate": "x"}
        ).status_code
        == 403
    )


def test_a_superuser_reaches_every_page(admin_client_ada):
    for method, url in admin_urls():
        if method == "get":
            assert admin_client_ada.get(url).status_code == 200, url
