"""The checker admin: kind-specific settings, the mandate preview, and its trial."""

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.urls import path

from reviewapp.audit.models import Trial

from ..models import CheckerConfig
from ..services.checkers_config import CHECKER_AUDIT_FIELDS
from ..services.in_flight import checkers_needed, in_flight_refusals
from .forms.checker import CheckerAdminForm
from .forms.constraints_preview import render_constraints_preview
from .forms.trial import CheckerTrialForm
from .mixins import (
    ADMIN_MEDIA_CSS,
    ADMIN_MEDIA_JS,
    AuditedAdminMixin,
    RefuseDeletingWhatIsInUseMixin,
    TrialMixin,
)


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
