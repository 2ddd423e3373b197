"""The interactive API docs work with no network beyond the server itself."""

from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.browser


def test_the_docs_page_renders_every_operation_with_requests_outside_the_server_blocked(
    chromium, live_server
):
    server = urlsplit(live_server.url).netloc
    blocked: list[str] = []

    def only_the_server(route):
        if urlsplit(route.request.url).netloc == server:
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context = chromium.new_context(base_url=live_server.url)
    try:
        context.route("**/*", only_the_server)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # Refusals by the Content-Security-Policy show up as console errors.
        page.on(
            "console",
            lambda message: errors.append(message.text)
            if message.type == "error" and "Content Security Policy" in message.text
            else None,
        )
        page.goto("/api/docs")

        operations = page.locator(".opblock-summary-path")
        operations.first.wait_for(timeout=15_000)
        paths = set(operations.all_inner_texts())
        assert {"/api/proposals", "/api/cite/resolve", "/api/ledger/checkpoint"} <= {
            p.replace("\u200b", "") for p in paths
        }
        assert blocked == []
        assert errors == []
    finally:
        context.close()
