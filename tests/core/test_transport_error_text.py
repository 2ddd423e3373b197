"""What a transport failure says to API clients: never credentials from a proxy or a lens URL."""

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey

from reviewapp.core.judging.transport import error_text, shown_url


# A proxy's credentials reach the connection key as a BasicAuth, which is how aiohttp 3
# (its get_env_proxy_for_url, as the LLM loop uses it) still hands them over.
@pytest.mark.filterwarnings("ignore:BasicAuth is deprecated:DeprecationWarning")
def test_a_connection_error_is_described_without_the_proxys_password():
    key = ConnectionKey(
        host="llm.example",
        port=443,
        is_ssl=True,
        ssl=True,
        proxy="http://proxy.internal:3128",
        proxy_auth=aiohttp.BasicAuth("svc", "hunter2-proxy-secret"),
        proxy_headers_hash=None,
    )
    exc = aiohttp.ClientConnectorError(key, OSError(111, "Connection refused"))
    assert "hunter2-proxy-secret" in repr(exc)  # why the repr is never shown

    text = error_text(exc)

    assert "hunter2-proxy-secret" not in text
    assert text.startswith("ClientConnectorError: Cannot connect to host llm.example:443")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pa55@llm.example/v1", "https://llm.example/v1"),
        ("https://llm.example:8443/v1", "https://llm.example:8443/v1"),
        ("http://token@10.0.0.5:8000/v1", "http://10.0.0.5:8000/v1"),
    ],
)
def test_a_url_is_shown_without_its_user_and_password(url, shown):
    assert shown_url(url) == shown
