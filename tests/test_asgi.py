"""The web process's ASGI app: Django's pages and API beside the MCP server, one origin."""

import httpx

from tests.mcp.conftest import server  # noqa: F401  (the fixture)


def test_pages_the_api_and_static_files_are_served_beside_mcp(server):  # noqa: F811
    assert httpx.get(f"{server.url}/login/").status_code == 200
    assert httpx.get(f"{server.url}/api/openapi.json").json()["info"]["title"] == "reviewapp API"
    assert httpx.get(f"{server.url}/healthz").status_code in (200, 503)
    assert httpx.post(f"{server.url}/mcp", json={}).status_code == 401


def test_mcp_refuses_a_host_outside_allowed_hosts_as_django_does(server):  # noqa: F811
    headers = {"Host": "attacker.example"}

    assert httpx.post(f"{server.url}/mcp", json={}, headers=headers).status_code == 400
    assert httpx.get(f"{server.url}/login/", headers=headers).status_code == 400
