from reviewapp.core.guarantee.configuration import configuration_key, configuration_text


def snapshot(**changes):
    base = {
        "name": "p",
        "version": 4,
        "need": 2,
        "grounding_policy": "reject",
        "lenses": [
            {"id": 1, "name": "tone", "version": 2, "backend": "llm"},
            {"id": 2, "name": "facts", "version": 1, "backend": "llm"},
            {"id": 3, "name": "policy", "version": 1, "backend": "constraints"},
        ],
        "checkers": [{"id": 9, "name": "schema", "version": 3, "kind": "json_schema"}],
    }
    return {**base, **changes}


def test_what_the_machine_decides_with_names_the_configuration():
    base = configuration_key(snapshot())
    lenses = snapshot()["lenses"]
    assert configuration_key(snapshot(need=3)) != base
    assert configuration_key(snapshot(lenses=[{**lenses[0], "version": 3}, *lenses[1:]])) != base
    assert configuration_key(snapshot(lenses=lenses[:2])) != base
    assert configuration_key(snapshot(checkers=[])) != base


def test_what_the_machine_does_not_decide_with_keeps_the_configuration():
    base = configuration_key(snapshot())
    lenses = snapshot()["lenses"]
    assert configuration_key(snapshot(lenses=list(reversed(lenses)))) == base
    assert configuration_key(snapshot(name="renamed", version=9, grounding_policy="repair")) == base


def test_the_configuration_in_words():
    assert configuration_text(snapshot()) == (
        "lenses tone v2, facts v1, policy v1; need 2; checkers schema v3"
    )
    assert configuration_text(snapshot(checkers=[])).endswith("; no checkers")
