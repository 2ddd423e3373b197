"""The configuration admin: lenses, panels, checkers, API clients, signing keys.

Every save goes through the same refusals as every other door (the model's
clean(), core.quorum, the checker ceiling) and is recorded as an audit entry
with a field diff. Custom pages hang off `get_urls()` and are wrapped in
`admin_site.admin_view`, so they are staff-only like the rest of the admin.
"""

import json
import shlex

from django.contrib import admin, messages
from django.contrib.admin import ActionLocation
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, Max
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.views.decorators.cache import never_cache

from reviewapp.audit.models import AuditEntry, Trial
from reviewapp.audit.services import audit_change, audit_delete, audit_record, snapshot
from reviewapp.core.quorum import allowed_needs_text

from . import endpoint_limits
from .admin_forms import (
    SEE_NEED,
    ApiClientChangeForm,
    ApiClientCreateForm,
    CheckerAdminForm,
    CheckerTrialForm,
    LensAdminForm,
    PanelAdminForm,
    PanelLensFormSet,
    PanelLensInlineForm,
    TrialForm,
    render_constraints_preview,
)
from .models import ApiClient, CheckerConfig, Lens, Panel, PanelLens, Proposal, SigningKey
from .services.checkers_config import CHECKER_AUDIT_FIELDS
from .services.clients import ClientRefused, api_client_create, api_client_update
from .services.in_flight import checkers_needed, in_flight_refusals
from .services.keys import RotationRefused, rotation_report, signing_key_rotate
from .services.lenses import (
    LENS_AUDIT_FIELDS,
    api_key_status,
    external_judge_status,
    external_judgement_example,
    external_judges,
    lens_delete_refusal,
)
from .services.panel_versions import (
    audited_part,
    panel_bump_version_if_changed,
    panel_save_lenses,
    panel_state,
)
from .trial import trial_start

API_CLIENT_AUDIT_FIELDS = ("name", "scopes", "token_prefix", "revoked_at")

# A just-created API token, held in the session until its one display.
TOKEN_SESSION_KEY = "reviewapp_new_api_token"
# htmx-csp.js right after htmx: no injected style, no eval (Content-Security-Policy).
ADMIN_MEDIA_JS = ("admin_ext/backend_fields.js", "vendor/htmx.min.js", "js/htmx-csp.js")
ADMIN_MEDIA_CSS = {"all": ("admin_ext/admin_ext.css",)}


def _stored(model, pk):
    return model.objects.filter(pk=pk).first()


class AuditedAdminMixin:
    """Records every save and delete made through this admin as an audit entry."""

    audit_target_type = ""
    audit_fields: tuple[str, ...] = ()
    # An audited many-to-many is saved after the object (save_related): the
    # entry is recorded there, once it is, when the snapshot includes one.
    audit_after_related = False

    def audit_snapshot(self, obj) -> dict:
        return snapshot(obj, self.audit_fields)

    def save_model(self, request, obj, form, change):
        before = self.audit_snapshot(_stored(type(obj), obj.pk)) if change and obj.pk else None
        super().save_model(request, obj, form, change)
        if self.audit_after_related:
            obj._audit_before = before
        else:
            self._audit_saved(request, obj, before)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        if self.audit_after_related:
            self._audit_saved(request, form.instance, form.instance._audit_before)

    def _audit_saved(self, request, obj, before: dict | None) -> None:
        audit_change(
            actor=request.user,
            target_type=self.audit_target_type,
            target=obj,
            before=before,
            after=self.audit_snapshot(obj),
        )

    def delete_model(self, request, obj):
        before = self.audit_snapshot(obj)
        pk = obj.pk
        super().delete_model(request, obj)
        obj.pk = pk
        audit_delete(
            actor=request.user, target_type=self.audit_target_type, target=obj, before=before
        )

    @transaction.atomic
    def delete_queryset(self, request, queryset):
        for obj in list(queryset):
            self.delete_model(request, obj)


class RefuseDeletingWhatIsInUseMixin:
    """Deleting an object a panel still uses is refused, with a message naming the panels."""

    def delete_refusal(self, objs) -> str | None:
        raise NotImplementedError

    @admin.action(description="Delete selected", permissions=["delete"])
    def delete_selected(self, request, queryset):
        refusal = self.delete_refusal(queryset)
        if refusal:
            self.message_user(request, refusal, messages.ERROR)
            return None
        return delete_selected(self, request, queryset)

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        # Permission first: the refusal names the panels using the object.
        if obj is not None and not self.has_delete_permission(request, obj):
            raise PermissionDenied
        refusal = self.delete_refusal([obj]) if obj is not None else None
        if refusal:
            self.message_user(request, refusal, messages.ERROR)
            opts = self.opts
            return HttpResponseRedirect(
                reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
            )
        return super().delete_view(request, object_id, extra_context)


class TrialMixin:
    """A "try it on a sample" page that starts a Celery trial and shows its result."""

    trial_kind = ""
    trial_form_class = TrialForm

    def get_urls(self):
        opts = self.opts
        return [
            path(
                "<path:object_id>/try/",
                self.admin_site.admin_view(self.trial_view),
                name=f"{opts.app_label}_{opts.model_name}_try",
            ),
            *super().get_urls(),
        ]

    def trial_view(self, request, object_id):
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        elsewhere = self.judged_elsewhere(request, obj)
        if elsewhere is not None:
            return elsewhere
        form = self.trial_form_class(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            with transaction.atomic():
                trial = trial_start(
                    kind=self.trial_kind,
                    target=obj,
                    sample=data["sample"],
                    thought_process=data.get("thought_process", ""),
                    grounding_policy=data.get("grounding_policy", "reject"),
                    user=request.user,
                )
            return HttpResponseRedirect(reverse("admin:audit_trial_result", args=[trial.pk]))
        recent = Trial.objects.filter(kind=self.trial_kind, target_id=obj.pk)[:10]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": obj,
            "title": f"Try {self.opts.verbose_name} “{obj}” on a sample",
            "form": form,
            "recent": recent,
            "trial_kind": self.trial_kind,
        }
        return TemplateResponse(request, "admin/review/trial_form.html", context)

    def judged_elsewhere(self, request, obj) -> HttpResponse | None:
        """A page saying who runs `obj`, when it is nothing this server can run; else None."""
        return None


# ── lenses ──────────────────────────────────────────────────────────────────


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
    )
    actions = ["deactivate", "activate", "delete_selected"]
    fieldsets = (
        (None, {"fields": ("name", "description", "instructions", "backend", "active")}),
        ("Version", {"fields": ("version", "used_by_panels")}),
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


# ── panels ──────────────────────────────────────────────────────────────────


class PanelLensInline(admin.TabularInline):
    model = PanelLens
    form = PanelLensInlineForm
    formset = PanelLensFormSet
    fields = ("lens", "position")
    ordering = ("position", "id")
    verbose_name = "lens"
    verbose_name_plural = "lenses, in order (lowest position first)"

    def get_extra(self, request, obj=None, **kwargs):
        return 0 if obj is not None else 3


@admin.register(Panel)
class PanelAdmin(AuditedAdminMixin, admin.ModelAdmin):
    form = PanelAdminForm
    inlines = [PanelLensInline]
    audit_target_type = "panel"
    list_display = ("name", "need", "lens_names", "active", "requires_sign_off", "version")
    list_filter = ("active", "grounding_policy", "requires_sign_off")
    search_fields = ("name", "description")
    readonly_fields = ("version", "judged_configurations")
    fieldsets = (
        (None, {"fields": ("name", "description", "need", "active", "version")}),
        (
            "Judging",
            {
                "fields": (
                    "grounding_policy",
                    "requires_sign_off",
                    "external_deadline_seconds",
                    "checkers",
                )
            },
        ),
        ("Configurations proposals were judged with", {"fields": ("judged_configurations",)}),
    )

    # The change form asks this endpoint, as you edit, whether the need and the
    # lens rows make a quorum (templates/admin/review/panel/change_form.html).
    change_form_template = "admin/review/panel/change_form.html"

    class Media:
        css = ADMIN_MEDIA_CSS
        js = ("vendor/htmx.min.js", "js/htmx-csp.js")

    def get_urls(self):
        return [
            path(
                "validate/",
                self.admin_site.admin_view(self.validate_view),
                name="review_panel_validate",
            ),
            *super().get_urls(),
        ]

    def validate_view(self, request):
        """The htmx fragment: the posted panel form's refusals, exactly as Save would give them."""
        raw_id = request.POST.get("panel_id", "")
        obj = self.get_object(request, raw_id) if raw_id.isdigit() else None
        if obj is None and raw_id:
            raise Http404
        if obj is not None:
            allowed = self.has_change_permission(request, obj)
        else:
            allowed = self.has_add_permission(request)
        if not allowed:
            raise PermissionDenied
        if request.method != "POST":
            return HttpResponse(status=405)
        form = self.get_form(request, obj, change=obj is not None)(
            request.POST, instance=obj or Panel()
        )
        formsets, _ = self._create_formsets(request, form.instance, change=obj is not None)
        form.is_valid()
        for formset in formsets:
            formset.is_valid()
        errors = [*form.errors.get("need", []), *form.non_field_errors()]
        for formset in formsets:
            errors += [
                message
                for error in formset.non_form_errors().as_data()
                if error.code != SEE_NEED
                for message in error.messages
            ]
        lens_count = sum(len(getattr(f, "ordered_lenses", [])) for f in formsets)
        return TemplateResponse(
            request,
            "admin/review/panel/_validation.html",
            {
                "errors": errors,
                "need": form.cleaned_data.get("need"),
                "allowed": allowed_needs_text(lens_count),
            },
        )

    @admin.display(description="Lenses")
    def lens_names(self, obj):
        return ", ".join(lens.name for lens in obj.ordered_lenses()) or "—"

    @admin.display(description="Judged with")
    def judged_configurations(self, obj):
        if obj is None or obj.pk is None:
            return "—"
        versions = (
            Proposal.objects.filter(panel=obj)
            .values("panel_version")
            .annotate(n=Count("id"), last=Max("created_at"))
            .order_by("-panel_version")
        )
        rows = []
        for row in versions:
            snap = (
                Proposal.objects.filter(panel=obj, panel_version=row["panel_version"])
                .order_by("-id")
                .values_list("panel_snapshot", flat=True)
                .first()
            ) or {}
            lenses = ", ".join(f"{e['name']} v{e['version']}" for e in snap.get("lenses", []))
            checkers = ", ".join(f"{e['name']} v{e['version']}" for e in snap.get("checkers", []))
            rows.append(
                (
                    row["panel_version"],
                    row["n"],
                    snap.get("need", "?"),
                    lenses or "—",
                    checkers or "—",
                    snap.get("grounding_policy", "?"),
                    "yes" if snap.get("requires_sign_off") else "no",
                )
            )
        if not rows:
            return "No proposals yet."
        body = format_html_join(
            "",
            "<tr><td>v{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td></tr>",
            rows,
        )
        return format_html(
            "<table class='judged-configurations'><thead><tr><th>Version</th>"
            "<th>Proposals</th><th>Need</th><th>Lenses</th><th>Checkers</th>"
            "<th>Grounding</th><th>Sign-off</th></tr></thead><tbody>{}</tbody></table>",
            body,
        )

    def save_model(self, request, obj, form, change):
        obj._state_before = panel_state(obj) if change and obj.pk else None
        admin.ModelAdmin.save_model(self, request, obj, form, change)

    def save_formset(self, request, form, formset, change):
        if formset.model is not PanelLens:
            return super().save_formset(request, form, formset, change)
        # Fills new/changed/deleted_objects for the admin's change message, writes nothing.
        formset.save(commit=False)
        panel_save_lenses(form.instance, formset.ordered_lenses)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        panel = form.instance
        before = getattr(panel, "_state_before", None)
        panel_bump_version_if_changed(panel, before)
        audit_change(
            actor=request.user,
            target_type="panel",
            target=panel,
            before=audited_part(before) if before else None,
            after=audited_part(panel_state(panel)),
        )

    def audit_snapshot(self, obj) -> dict:
        return audited_part(panel_state(obj))


# ── checkers ────────────────────────────────────────────────────────────────


@admin.register(CheckerConfig)
class CheckerAdmin(RefuseDeletingWhatIsInUseMixin, AuditedAdminMixin, TrialMixin, admin.ModelAdmin):
    form = CheckerAdminForm
    audit_target_type = "checker"
    audit_fields = CHECKER_AUDIT_FIELDS
    trial_kind = Trial.Kind.CHECKER
    trial_form_class = CheckerTrialForm
    list_display = ("name", "kind", "active", "version", "used_by")
    list_filter = ("kind", "active")
    search_fields = ("name",)
    readonly_fields = ("version",)
    actions = ["delete_selected"]
    fieldsets = (
        (None, {"fields": ("name", "kind", "active", "version")}),
        (
            "Constraints",
            {"classes": ("show-if-kind-constraints",), "fields": ("mandate",)},
        ),
        ("JSON Schema", {"classes": ("show-if-kind-json_schema",), "fields": ("schema",)}),
        (
            "Regular expression",
            {"classes": ("show-if-kind-regex",), "fields": ("pattern", "must_match")},
        ),
        # Only a command runs anything, so only a command holds grants.
        (
            "Command",
            {
                "classes": ("show-if-kind-command",),
                "fields": ("argv", "timeout_seconds", "grants"),
            },
        ),
    )

    class Media:
        js = ADMIN_MEDIA_JS
        css = ADMIN_MEDIA_CSS

    def get_urls(self):
        return [
            path(
                "constraints-preview/",
                self.admin_site.admin_view(self.constraints_preview_view),
                name="review_checkerconfig_constraints_preview",
            ),
            *super().get_urls(),
        ]

    def constraints_preview_view(self, request):
        """The htmx fragment: how the posted mandate lowers, clause by clause."""
        if not (self.has_view_permission(request) or request.user.has_perm("review.view_lens")):
            raise PermissionDenied
        text = request.POST.get("mandate", request.GET.get("mandate", ""))
        return HttpResponse(render_constraints_preview(text))

    @admin.display(description="Used by")
    def used_by(self, obj):
        return ", ".join(obj.panels.order_by("name").values_list("name", flat=True)) or "—"

    def delete_refusal(self, checkers) -> str | None:
        used = [
            (c.name, list(c.panels.order_by("name").values_list("name", flat=True)))
            for c in checkers
        ]
        problems = [
            f"checker {name!r} is used by panel(s) {', '.join(repr(p) for p in panels)}"
            for name, panels in used
            if panels
        ] + in_flight_refusals(checkers, checkers_needed(checkers), "checker")
        if not problems:
            return None
        return (
            "Cannot delete: "
            + "; ".join(problems)
            + ". Remove it from those panels and let those proposals finish first, "
            "or deactivate it instead."
        )


# ── API clients ─────────────────────────────────────────────────────────────


@admin.register(ApiClient)
class ApiClientAdmin(AuditedAdminMixin, admin.ModelAdmin):
    form = ApiClientChangeForm
    audit_target_type = "api client"
    audit_fields = API_CLIENT_AUDIT_FIELDS
    list_display = ("name", "token_prefix", "scope_list", "created_at", "last_used_at", "status")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "token_prefix")
    readonly_fields = ("token_prefix", "created_at", "last_used_at", "revoked_at")
    fields = ("name", "scopes", "token_prefix", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    @admin.display(description="Scopes")
    def scope_list(self, obj):
        return ", ".join(obj.scopes or []) or "—"

    @admin.display(description="Status")
    def status(self, obj):
        return f"revoked {obj.revoked_at:%Y-%m-%d %H:%M}" if obj.revoked_at else "active"

    def has_delete_permission(self, request, obj=None):
        # Proposals name the client that sent them; revoke instead.
        return False

    def save_model(self, request, obj, form, change):
        # Clients are created on add_view; this page only changes one.
        before = self.audit_snapshot(_stored(ApiClient, obj.pk))
        # A revoked client's name and scopes are read-only: the form carries neither.
        api_client_update(
            client=obj,
            name=form.cleaned_data.get("name", obj.name),
            scopes=form.cleaned_data.get("scopes", obj.scopes),
        )
        self._audit_saved(request, obj, before)

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.revoked_at:
            return ("name", "scopes", *self.readonly_fields)
        return self.readonly_fields

    @admin.action(
        description="Revoke selected API clients",
        permissions=["change"],
        location=[ActionLocation.CHANGE_LIST, ActionLocation.CHANGE_FORM],
    )
    @transaction.atomic
    def revoke(self, request, queryset):
        revoked = 0
        now = timezone.now()
        for client in queryset.filter(revoked_at__isnull=True):
            before = self.audit_snapshot(client)
            ApiClient.objects.filter(pk=client.pk, revoked_at__isnull=True).update(revoked_at=now)
            client.refresh_from_db()
            audit_record(
                actor=request.user,
                action=AuditEntry.Action.REVOKE,
                target_type="api client",
                target=client,
                changes={"revoked_at": {"old": before["revoked_at"], "new": now.isoformat()}},
            )
            revoked += 1
        self.message_user(
            request,
            f"{revoked} API client(s) revoked; their tokens no longer authenticate.",
            messages.SUCCESS,
        )

    @method_decorator(never_cache)
    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ApiClientCreateForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                with transaction.atomic():
                    client, token = api_client_create(
                        name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"]
                    )
                    audit_change(
                        actor=request.user,
                        target_type="api client",
                        target=client,
                        before=None,
                        after=self.audit_snapshot(client),
                    )
                    self.log_addition(request, client, [{"added": {}}])
            except ClientRefused as exc:
                form.add_error(None, str(exc))
            else:
                # Post/redirect/get: a reload shows the page again instead of
                # re-posting the form (a second client). The token waits in the
                # session for exactly one display, then only its prefix remains.
                request.session[TOKEN_SESSION_KEY] = {"client": client.pk, "token": token}
                return HttpResponseRedirect(
                    reverse("admin:review_apiclient_token", args=[client.pk])
                )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Add API client",
            "form": form,
            "add": True,
        }
        return TemplateResponse(request, "admin/review/apiclient/add_form.html", context)

    def get_urls(self):
        return [
            path(
                "<int:object_id>/token/",
                self.admin_site.admin_view(self.token_view),
                name="review_apiclient_token",
            ),
            *super().get_urls(),
        ]

    @method_decorator(never_cache)
    def token_view(self, request, object_id: int):
        """The new token, once; later loads say it is gone and what to do instead."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        client = self.get_object(request, str(object_id))
        if client is None:
            raise Http404
        pending = request.session.get(TOKEN_SESSION_KEY) or {}
        token = None
        if pending.get("client") == client.pk:
            token = pending["token"]
            del request.session[TOKEN_SESSION_KEY]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"API client “{client.name}” created",
            "client": client,
            "token": token,
        }
        response = TemplateResponse(request, "admin/review/apiclient/token_created.html", context)
        response["Cache-Control"] = "no-store"
        return response


# ── signing keys ────────────────────────────────────────────────────────────


@admin.register(SigningKey)
class SigningKeyAdmin(admin.ModelAdmin):
    list_display = ("key_id", "public_key", "created_at", "retired_at", "state")
    readonly_fields = ("key_id", "public_key", "created_at", "retired_at")
    actions = ["rotate"]
    change_list_template = "admin/review/signingkey/change_list.html"

    @admin.display(description="State")
    def state(self, obj):
        return "retired" if obj.retired_at else "signing"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        # Deleting a public key would make every decision it signed unverifiable.
        return False

    def has_rotate_permission(self, request):
        return request.user.is_superuser or request.user.has_perm("review.change_signingkey")

    def get_urls(self):
        return [
            path(
                "rotate/",
                self.admin_site.admin_view(self.rotate_view),
                name="review_signingkey_rotate",
            ),
            *super().get_urls(),
        ]

    def _rotate(self, request) -> bool:
        try:
            rotation = signing_key_rotate(actor=request.user)
        except RotationRefused as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return False
        self.message_user(request, " ".join(rotation_report(rotation)), messages.SUCCESS)
        return True

    @admin.action(
        description="Rotate the signing key (retire the signing key, create a new one)",
        permissions=["rotate"],
        location=[ActionLocation.CHANGE_LIST, ActionLocation.CHANGE_FORM],
    )
    def rotate(self, request, queryset):
        self._rotate(request)

    def rotate_view(self, request):
        if not self.has_rotate_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            self._rotate(request)
            return HttpResponseRedirect(reverse("admin:review_signingkey_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Rotate the signing key",
            "signing": SigningKey.objects.filter(retired_at__isnull=True),
        }
        return TemplateResponse(request, "admin/review/signingkey/rotate_confirm.html", context)
