"""The signing key admin: the public halves, and rotating the server's key."""

from django.contrib import admin, messages
from django.contrib.admin import ActionLocation
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from reviewapp.ledger.models import SigningKey

from ..services.keys import RotationRefused, rotation_report, signing_key_rotate


@admin.register(SigningKey)
class SigningKeyAdmin(admin.ModelAdmin):
    list_display = ("key_id", "public_key", "created_at", "retired_at", "state")
    readonly_fields = ("key_id", "public_key", "created_at", "retired_at")
    actions = ["rotate"]
    change_list_template = "admin/ledger/signingkey/change_list.html"

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
        return request.user.is_superuser or request.user.has_perm("ledger.change_signingkey")

    def get_urls(self):
        return [
            path(
                "rotate/",
                self.admin_site.admin_view(self.rotate_view),
                name="ledger_signingkey_rotate",
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
            return HttpResponseRedirect(reverse("admin:ledger_signingkey_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Rotate the signing key",
            "signing": SigningKey.objects.filter(retired_at__isnull=True),
        }
        return TemplateResponse(request, "admin/ledger/signingkey/rotate_confirm.html", context)
