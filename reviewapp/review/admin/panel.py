"""The panel admin: the lens rows, the live quorum check, and the versions proposals used."""

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Max
from django.http import Http404, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html, format_html_join

from reviewapp.audit.services import audit_change
from reviewapp.calibration.admin import panel_calibration_html
from reviewapp.core.quorum import allowed_needs_text
from reviewapp.guarantee.admin import panel_guarantee_html

from ..models import Panel, PanelLens, Proposal
from ..services.panel_versions import (
    audited_part,
    panel_bump_version_if_changed,
    panel_save_lenses,
    panel_state,
)
from .forms.panel import SEE_NEED, PanelAdminForm, PanelLensFormSet, PanelLensInlineForm
from .mixins import (
    ADMIN_MEDIA_CSS,
    AuditedAdminMixin,
)


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

    def get_queryset(self, request):
        # Each row is titled with its lens's and panel's names (PanelLens.__str__).
        return super().get_queryset(request).select_related("lens", "panel")


@admin.register(Panel)
class PanelAdmin(AuditedAdminMixin, admin.ModelAdmin):
    form = PanelAdminForm
    inlines = [PanelLensInline]
    audit_target_type = "panel"
    list_display = (
        "name",
        "need",
        "lens_names",
        "priority",
        "active",
        "requires_sign_off",
        "version",
    )
    list_filter = ("active", "grounding_policy", "requires_sign_off")
    search_fields = ("name", "description")
    readonly_fields = (
        "version",
        "judged_configurations",
        "lenses_against_reviewers",
        "guarantee_figures",
    )
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "description",
                    "need",
                    "reviews_needed",
                    "priority",
                    "active",
                    "version",
                )
            },
        ),
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
        (
            "Review deadline",
            {
                "fields": (
                    "review_deadline",
                    "on_deadline",
                    "confirm_approve_fallback",
                    "deadline_reminder",
                    "notify_with_text",
                ),
                "description": "How long an escalation may wait for a person, and what then. "
                "A fallback decision is signed by the server and marked as a fallback: it is "
                "never shown as a person's, nor counted as a human label.",
            },
        ),
        ("Audits", {"fields": ("audit_rate",)}),
        ("Configurations proposals were judged with", {"fields": ("judged_configurations",)}),
        ("Lenses against the reviewers", {"fields": ("lenses_against_reviewers",)}),
        ("What the guarantee promises, and its evidence", {"fields": ("guarantee_figures",)}),
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

    @admin.display(description="Errors together, audits")
    def lenses_against_reviewers(self, obj):
        if obj is None or obj.pk is None:
            return "—"
        return panel_calibration_html(obj)

    @admin.display(description="Vote patterns")
    def guarantee_figures(self, obj):
        if obj is None or obj.pk is None:
            return "—"
        return panel_guarantee_html(obj)

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
