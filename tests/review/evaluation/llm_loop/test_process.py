"""A worker process's LLM loop: its HTTP sessions (proxies, credentials), its loop, its limits."""

import resource

import pytest

from reviewapp.review.evaluation.llm_loop import process
from reviewapp.review.models import Lens
from tests.conftest import wait_for
from tests.core.openai_stub import Answer
from tests.factories import LensFactory
from tests.review.evaluation.llm_loop.support import CITE, Outcomes, judge
from tests.review.helpers import judgement

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_loop_never_sends_netrc_credentials(
    runtime, lens, openai_server, tmp_path, monkeypatch
):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password hunter2\n")
    monkeypatch.setenv("NETRC", str(netrc))
    judge(runtime, Outcomes().job(lens))
    assert openai_server.requests[0].authorization is None


def test_the_loop_sends_calls_through_the_proxy_the_environment_names(
    runtime, openai_server, monkeypatch
):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    proxy = openai_server.base_url.removesuffix("/v1")
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.setenv("NO_PROXY", "")
    lens = LensFactory(
        backend=Lens.Backend.LLM, base_url="http://llm.example.invalid/v1", model="m"
    )
    outcomes = Outcomes()
    judge(runtime, outcomes.job(lens))
    assert openai_server.requests[0].path == "http://llm.example.invalid/v1/chat/completions"
    [(_, _, answers)] = wait_for(lambda: outcomes.here, timeout=5)
    assert answers[0]["verdict"] == "pass"


def test_no_proxy_keeps_an_endpoint_off_the_proxy(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "llm.internal")
    assert process.env_proxy("https://llm.internal/v1") == (None, None)
    proxy, _ = process.env_proxy("https://api.example.com/v1")
    assert str(proxy) == "http://proxy.internal:3128"


def test_the_loop_is_uvloops(runtime):
    import uvloop  # a dependency wherever it is built (not on Windows)

    assert isinstance(runtime.loop, uvloop.Loop)


def test_a_loop_lifts_its_processs_open_files_limit_for_the_sockets_of_its_calls():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
    try:
        process.allow_open_sockets()  # as a process's loop does when it starts
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
