"""The API client admin: creating a client shows its token once; revoking is audited."""

from django.contrib import admin, messages
from django.contrib.admin import ActionLocation
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache

from reviewapp.audit.models import AuditEntry
from reviewapp.audit.services import audit_change, audit_record

from ..models import ApiClient
from ..services.clients import ClientRefused, api_client_create, api_client_update
from .forms.api_client import ApiClientChangeForm, ApiClientCreateForm
from .mixins import (
    AuditedAdminMixin,
    stored_row,
)

API_CLIENT_AUDIT_FIELDS = ("name", "scopes", "token_prefix", "revoked_at")

# A just-created API token, held in the session until its one display.
TOKEN_SESSION_KEY = "reviewapp_new_api_token"


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
        before = self.audit_snapshot(stored_row(ApiClient, obj.pk))
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
