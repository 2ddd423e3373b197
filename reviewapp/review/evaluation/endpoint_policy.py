"""Where an LLM lens may be called, from the settings: `core/llm_endpoints.py` says why.

Link-local addresses and the cloud metadata services are refused always, private
ranges and loopback allowed; REVIEWAPP_LLM_ALLOWED_NETWORKS names the other
networks (shared address space, reserved ranges) an operator's endpoints live in.
"""

from django.conf import settings

from reviewapp.core.judging import FailureKind, LensFailed
from reviewapp.core.llm_endpoints import EndpointPolicy, base_url_problem, resolved_problem


def endpoint_policy() -> EndpointPolicy:
    return EndpointPolicy.from_names(settings.REVIEWAPP_LLM_ALLOWED_NETWORKS)


def refuse_endpoint(base_url: str, *, resolve: bool = False) -> None:
    """Raise the lens failure a call to `base_url` ends in when it may not be made (its form,
    its host; with `resolve`, the addresses its name resolves to here)."""
    policy = endpoint_policy()
    problem = base_url_problem(base_url, policy)
    if problem is None and resolve:
        problem = resolved_problem(base_url, policy)
    if problem:
        raise LensFailed(
            f"refused to call the endpoint: {problem}", 0, [], kind=FailureKind.MISCONFIGURED
        )
