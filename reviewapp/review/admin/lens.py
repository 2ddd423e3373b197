"""The lens admin: its form, its trial, and the page saying who judges an external lens."""

import json
import shlex
from dataclasses import dataclass

from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from reviewapp.audit.models import Trial
from reviewapp.audit.services import audit_change
from reviewapp.calibration.admin import lens_agreement_html
from reviewapp.webhooks.models import Endpoint, Event

from ..evaluation import endpoint_limits
from ..models import ApiClient, Lens
from ..services.lenses import (
    LENS_AUDIT_FIELDS,
    api_key_status,
    external_judge_status,
    external_judgement_example,
    lens_delete_refusal,
)
from .forms.lens import LensAdminForm
from .mixins import (
    ADMIN_MEDIA_CSS,
    ADMIN_MEDIA_JS,
    AuditedAdminMixin,
    RefuseDeletingWhatIsInUseMixin,
    TrialMixin,
)


@dataclass(frozen=True)
class ExternalJudge:
    """An API client bound to an external lens, as the lens's try page describes it."""

    name: str
    token_prefix: str
    # Why its judgements would be refused, or "" when it can answer.
    problem: str
    # It has a live webhook for judgement.requested, so it hears of each proposal.
    notified: bool
    # It may list proposals (GET /api/proposals), so it can look for them itself.
    can_list: bool


def external_judges(lens: Lens) -> list[ExternalJudge]:
    """The clients that answer for `lens` through the API, and whether they can (two queries)."""
    clients = list(lens.judge_clients.order_by("name"))
    hooked = {
        client_id
        for client_id, events in Endpoint.objects.filter(
            client__in=clients, disabled_at__isnull=True
        ).values_list("client_id", "events")
        if Event.JUDGEMENT_REQUESTED in events
    }
    judges = []
    for client in clients:
        if client.revoked_at:
            problem = "revoked: its token no longer authenticates"
        elif ApiClient.Scope.JUDGE not in (client.scopes or []):
            problem = "lacks the 'judge' scope: its judgements are refused (403)"
        else:
            problem = ""
        scopes = client.scopes or []
        can_list = ApiClient.Scope.READ in scopes or ApiClient.Scope.READ_ALL in scopes
        judges.append(
            ExternalJudge(client.name, client.token_prefix, problem, client.pk in hooked, can_list)
        )
    return judges


@admin.register(Lens)
class LensAdmin(RefuseDeletingWhatIsInUseMixin, AuditedAdminMixin, TrialMixin, admin.ModelAdmin):
    form = LensAdminForm
    audit_target_type = "lens"
    audit_fields = LENS_AUDIT_FIELDS
    audit_after_related = True  # judge_clients
    trial_kind = Trial.Kind.LENS
    list_display = ("name", "backend", "active", "version", "used_by", "api_key", "judged_by")
    list_filter = ("backend", "active")
    search_fields = ("name", "description")
    readonly_fields = (
        "version",
        "api_key_status",
        "recorded_responses",
        "used_by_panels",
        "judge_status",
        "endpoint_now",
        "agreement_with_reviewers",
    )
    actions = ["deactivate", "activate", "delete_selected"]
    fieldsets = (
        (None, {"fields": ("name", "description", "instructions", "backend", "active")}),
        ("Version", {"fields": ("version", "used_by_panels")}),
        ("Agreement with reviewers", {"fields": ("agreement_with_reviewers",)}),
        (
            "LLM backend",
            {
                "classes": ("show-if-backend-llm",),
                "fields": (
                    "base_url",
                    "model",
                    "api_key_env",
                    "api_key_status",
                    "temperature",
                    "timeout_seconds",
                    "response_format",
                    "max_concurrent_calls",
                    "calls_per_minute",
                    "endpoint_now",
                    "deadline_seconds",
                ),
            },
        ),
        (
            "Constraints backend",
            {"classes": ("show-if-backend-constraints",), "fields": ("mandate",)},
        ),
        (
            "Recorded backend",
            {"classes": ("show-if-backend-recorded",), "fields": ("recorded_responses",)},
        ),
        (
            "External backend: who may judge",
            {
                "classes": ("show-if-backend-external",),
                "fields": ("judge_status", "judge_clients", "allow_self_judgement"),
            },
        ),
    )

    class Media:
        js = ADMIN_MEDIA_JS
        css = ADMIN_MEDIA_CSS

    @admin.display(description="Against the reviewers")
    def agreement_with_reviewers(self, obj):
        if obj is None or obj.pk is None:
            return "—"
        return lens_agreement_html(obj)

    @admin.display(description="API key")
    def api_key_status(self, obj):
        if obj is None or obj.pk is None:
            return "Name the environment variable and save: the page then says whether it is set."
        return api_key_status(obj)

    @admin.display(description="Endpoint now")
    def endpoint_now(self, obj):
        if obj is None or obj.pk is None or not obj.base_url:
            return "—"
        try:
            status = endpoint_limits.endpoint_status(obj.base_url, obj.max_concurrent_calls)
        except Exception as exc:  # the page must show even when the shared store is down
            return f"Unknown: the shared store did not answer ({exc.__class__.__name__})."
        return endpoint_limits.describe(status)

    @admin.display(description="API key", boolean=True)
    def api_key(self, obj):
        if obj.backend != Lens.Backend.LLM or not obj.api_key_env:
            return None
        return obj.api_key_is_set

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("judge_clients")

    @admin.display(description="Judged by")
    def judged_by(self, obj):
        if obj.backend != Lens.Backend.EXTERNAL:
            return "—"
        names = sorted(c.name for c in obj.judge_clients.all())
        return ", ".join(names) or "⚠ no client: accepts no judgement"

    @admin.display(description="Who may judge")
    def judge_status(self, obj):
        if obj is None or obj.pk is None:
            return "Tick the API clients allowed to answer for this lens, and save."
        return external_judge_status(obj)

    @admin.display(description="Recorded responses")
    def recorded_responses(self, obj):
        if obj is None or obj.pk is None:
            return "—"
        return f"{obj.recorded_responses.count()} stored answer set(s) to replay."

    @admin.display(description="Used by")
    def used_by(self, obj):
        return ", ".join(obj.panels.order_by("name").values_list("name", flat=True)) or "—"

    @admin.display(description="Used by panels")
    def used_by_panels(self, obj):
        if obj is None or obj.pk is None:
            return "—"
        return self.used_by(obj)

    def audit_snapshot(self, obj) -> dict:
        state = super().audit_snapshot(obj)
        if obj is not None and obj.pk:
            # Who may answer for an external lens is who may vote: audited like its fields.
            state["judge_clients"] = sorted(obj.judge_clients.values_list("name", flat=True))
        return state

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        lens = form.instance
        if lens.backend == Lens.Backend.EXTERNAL and not lens.judge_clients.exists():
            self.message_user(request, external_judge_status(lens), messages.WARNING)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if obj.backend == Lens.Backend.LLM and obj.api_key_env and not obj.api_key_is_set:
            self.message_user(
                request,
                f"{obj.api_key_env} is not set on the server: the lens will call "
                f"{obj.base_url} without an API key.",
                messages.WARNING,
            )

    @transaction.atomic
    def _set_active(self, request, queryset, active: bool):
        changed = 0
        for lens in queryset:
            if lens.active == active:
                continue
            before = self.audit_snapshot(lens)
            lens.active = active
            lens.save()  # bumps the version, like any edit
            audit_change(
                actor=request.user,
                target_type="lens",
                target=lens,
                before=before,
                after=self.audit_snapshot(lens),
            )
            changed += 1
        verb = "activated" if active else "deactivated"
        self.message_user(request, f"{changed} lens(es) {verb}.", messages.SUCCESS)

    @admin.action(description="Deactivate selected lenses", permissions=["change"])
    def deactivate(self, request, queryset):
        self._set_active(request, queryset, False)

    @admin.action(description="Activate selected lenses", permissions=["change"])
    def activate(self, request, queryset):
        self._set_active(request, queryset, True)

    def delete_refusal(self, lenses) -> str | None:
        return lens_delete_refusal(lenses)

    def judged_elsewhere(self, request, obj) -> HttpResponse | None:
        if obj.backend != Lens.Backend.EXTERNAL:
            return None
        url = request.build_absolute_uri(
            reverse("api:proposal_detail", args=[0]).removesuffix("0") + "$PROPOSAL_ID/judgements"
        )
        body = json.dumps(external_judgement_example(obj), ensure_ascii=False, indent=2)
        curl = (
            f'curl -X POST "{url}" \\\n'
            '  -H "Authorization: Bearer $REVIEWAPP_TOKEN" \\\n'
            "  -H 'Content-Type: application/json' \\\n"
            f"  -d {shlex.quote(body)}"
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": obj,
            "title": f"Lens “{obj}” is judged through the API",
            "judges": external_judges(obj),
            "curl": curl,
        }
        return TemplateResponse(request, "admin/review/lens/external_try.html", context)
