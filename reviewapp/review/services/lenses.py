"""Lens configuration as the admin sees it: what is audited, what refuses a delete."""

from ..evaluation import llm_keys
from ..models import ApiClient, Claim, Judgement, Lens, LensFailure, Panel
from .in_flight import in_flight_refusals, lenses_needed

# What an audit entry records about a lens: every configured field, and the version.
LENS_AUDIT_FIELDS = (
    *Lens.VERSIONED_FIELDS,
    "description",
    "allow_self_judgement",
    "version",
)

# The fields each backend reads; the admin shows only the chosen backend's.
BACKEND_FIELDS = {
    Lens.Backend.LLM: (
        "base_url",
        "model",
        "api_key_env",
        "temperature",
        "timeout_seconds",
        "response_format",
    ),
    Lens.Backend.CONSTRAINTS: ("mandate",),
    Lens.Backend.EXTERNAL: (),
    Lens.Backend.RECORDED: (),
}


def env_name_problem(name: str) -> str | None:
    """Why `name` cannot be a lens's API-key variable, or None."""
    return llm_keys.problem(name)


def api_key_status(lens: Lens) -> str:
    """Whether the named variable is set on this server, in words; never its value."""
    if not lens.api_key_env:
        return "No variable named: requests are sent without an API key."
    refusal = llm_keys.problem(lens.api_key_env)
    if refusal:
        return f"Refused: {refusal}"
    if lens.api_key_is_set:
        return f"{lens.api_key_env} is set on the server."
    return f"{lens.api_key_env} is NOT set on the server: requests will carry no API key."


def external_judge_status(lens: Lens) -> str:
    """Which API clients may answer for an external lens, in words."""
    if lens.backend != Lens.Backend.EXTERNAL:
        return "Only external lenses take judgements over the API."
    names = sorted(c.name for c in lens.judge_clients.all())
    if not names:
        return (
            f"Lens {lens.name!r} names no API client, so it accepts no judgement: every "
            "proposal it is asked about waits for the panel's external deadline. Tick the "
            "clients allowed to answer for it."
        )
    return f"Only {', '.join(names)} may answer for this lens."


def judge_clients_refusal(clients) -> str | None:
    """Why these clients cannot answer for an external lens (naming each), or None.

    A client without the `judge` scope is turned away (403) by the judgements
    endpoint, so binding it would leave every proposal waiting out its deadline.
    """
    lacking = sorted(c.name for c in clients if ApiClient.Scope.JUDGE not in (c.scopes or []))
    if not lacking:
        return None
    names = ", ".join(repr(n) for n in lacking)
    clients_word = "API clients" if len(lacking) > 1 else "API client"
    lacks = "lack" if len(lacking) > 1 else "lacks"
    return (
        f"{clients_word} {names} {lacks} the 'judge' scope: every judgement posted for this "
        "lens would be refused (403) and its proposals would wait out the panel's external "
        "deadline. Give the scope on the API client's page first, or untick the client."
    )


def external_judgement_example(lens: Lens) -> dict:
    """A body for POST /api/proposals/{id}/judgements answering for `lens`."""
    return {
        "lens": lens.name,
        "verdict": Judgement.Verdict.PASS.value,
        "rationale": "Why, in a sentence or two.",
        "claims": [
            {
                "cite": "a passage quoted verbatim from the proposal",
                "assessment": Claim.Assessment.VERIFIED.value,
            }
        ],
    }


def panels_using(lenses) -> dict[int, list[str]]:
    """{lens id: [panel names]} for every given lens that a panel uses."""
    ids = [lens.pk for lens in lenses]
    used: dict[int, list[str]] = {}
    for lens_id, panel_name in (
        Panel.objects.filter(panel_lenses__lens__in=ids)
        .order_by("name")
        .values_list("panel_lenses__lens_id", "name")
    ):
        used.setdefault(lens_id, []).append(panel_name)
    return used


def lens_delete_refusal(lenses) -> str | None:
    """Why these lenses cannot be deleted (naming the panels that use them), or None."""
    lenses = list(lenses)
    used = panels_using(lenses)
    problems = []
    for lens in lenses:
        if lens.pk in used:
            names = ", ".join(repr(n) for n in used[lens.pk])
            plural = "panels" if len(used[lens.pk]) > 1 else "panel"
            problems.append(f"lens {lens.name!r} is used by {plural} {names}")
    problems += in_flight_refusals(lenses, lenses_needed(lenses), "lens")
    judged = set(
        Judgement.objects.filter(lens__in=lenses).values_list("lens_id", flat=True).distinct()
    ) | set(LensFailure.objects.filter(lens__in=lenses).values_list("lens_id", flat=True))
    for lens in lenses:
        if lens.pk in judged and lens.pk not in used:
            problems.append(
                f"lens {lens.name!r} has judged proposals, whose records must keep naming it"
            )
    if not problems:
        return None
    return (
        "Cannot delete: "
        + "; ".join(problems)
        + ". Remove the lens from those panels and let those proposals finish first, "
        "or deactivate it instead."
    )
