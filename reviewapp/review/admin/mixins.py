"""What the configuration admins share.

Audited saves and deletes, refusing to delete what a panel uses, and the
"try it on a sample" page.
"""

from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from reviewapp.audit.models import Trial
from reviewapp.audit.services import audit_change, audit_delete, snapshot
from reviewapp.audit.trials import trial_start

from .forms.trial import TrialForm

# htmx-csp.js right after htmx: no injected style, no eval (Content-Security-Policy).
ADMIN_MEDIA_JS = ("admin_ext/backend_fields.js", "vendor/htmx.min.js", "js/htmx-csp.js")
ADMIN_MEDIA_CSS = {"all": ("admin_ext/admin_ext.css",)}


def stored_row(model, pk):
    """The row as stored, before this request changes it (None when there is none)."""
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
        before = self.audit_snapshot(stored_row(type(obj), obj.pk)) if change and obj.pk else None
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
