from django.test import Client


def test_openapi_schema_documents_every_endpoint_and_bearer_auth(db):
    schema = Client().get("/api/openapi.json").json()

    assert set(schema["paths"]) == {
        "/api/proposals",
        "/api/proposals/{proposal_id}",
        "/api/proposals/{proposal_id}/judgements",
        "/api/escalations",
        "/api/escalations/{escalation_id}",
        "/api/escalations/{escalation_id}/decision",
        "/api/escalations/{escalation_id}/audit",
        "/api/decisions",
        "/api/decisions/{decision_id}",
        "/api/keys",
        "/api/cite/resolve",
        "/api/ledger/checkpoint",
        "/api/ledger/proof/{entry}",
        "/api/ledger/consistency",
        "/api/ledger/entries",
        "/api/webhooks",
        "/api/webhooks/{endpoint_id}",
        "/api/webhooks/{endpoint_id}/test",
        "/api/lenses/{name}/agreement",
        "/api/panels",
        "/api/panels/{name}/guarantee",
    }
    assert {"type": "http", "scheme": "bearer"} in schema["components"]["securitySchemes"].values()


def test_interactive_docs_are_served(db):
    response = Client().get("/api/docs")

    assert response.status_code == 200
    assert b"openapi.json" in response.content


def test_an_unknown_api_path_answers_json_404(client):
    response = client.get("/api/no-such-thing")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert "/api/docs" in response.json()["detail"]
