"""Webhook endpoints per API client, with their delivery log and a re-send action."""

import secrets

from django import forms
from django.contrib import admin
from django.db import transaction
from django.template.response import TemplateResponse

from .addresses import endpoint_url_refusal
from .models import Delivery, Endpoint, Event
from .sending import delivery_resend
from .services import (
    endpoint_disable,
    endpoint_enable,
    endpoint_rotate_secret,
    events_refusal,
)


class EndpointForm(forms.ModelForm):
    events = forms.MultipleChoiceField(choices=Event.choices, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = Endpoint
        fields = ("client", "url", "events", "description")

    def clean_url(self):
        url = self.cleaned_data["url"].strip()
        if problem := endpoint_url_refusal(url):
            raise forms.ValidationError(problem)
        return url

    def clean_events(self):
        events = self.cleaned_data["events"]
        if problem := events_refusal(events):
            raise forms.ValidationError(problem)
        return events


class RecentDeliveries(admin.TabularInline):
    model = Delivery
    fields = ("webhook_id", "event_type", "status", "attempts", "last_status_code",
              "last_error", "next_attempt_at", "created_at")  # fmt: skip
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True
    ordering = ("-id",)
    verbose_name_plural = "delivery log (newest first)"

    def get_queryset(self, request):
        return super().get_queryset(request).defer("body")


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = ("url", "client", "events", "active", "disabled_reason",
                    "consecutive_failures", "created_at")  # fmt: skip
    list_filter = ("client", ("disabled_at", admin.EmptyFieldListFilter))
    search_fields = ("url", "client__name")
    list_select_related = ("client",)
    readonly_fields = ("disabled_at", "disabled_reason", "consecutive_failures", "created_at")
    form = EndpointForm
    inlines = [RecentDeliveries]
    actions = ["enable", "disable", "rotate_secret"]

    @admin.display(boolean=True)
    def active(self, obj):
        return obj.active

    def save_model(self, request, obj, form, change):
        if not change:  # the form ran the API's URL and event checks
            obj.secret_salt = secrets.token_hex(16)
        super().save_model(request, obj, form, change)

    def response_add(self, request, obj, post_url_continue=None):
        return _secrets_page(request, self, [(obj, obj.secret_text())])

    @admin.action(description="Enable the selected endpoints (pending deliveries resume)")
    def enable(self, request, queryset):
        for endpoint in queryset:
            endpoint_enable(endpoint_id=endpoint.pk)
        self.message_user(request, f"{queryset.count()} endpoint(s) enabled.")

    @admin.action(description="Disable the selected endpoints")
    def disable(self, request, queryset):
        for endpoint in queryset:
            endpoint_disable(
                endpoint_id=endpoint.pk, reason=f"disabled in the admin by {request.user}"
            )
        self.message_user(request, f"{queryset.count()} endpoint(s) disabled.")

    @admin.action(description="Rotate the secret of the selected endpoints (shown once)")
    def rotate_secret(self, request, queryset):
        rotated = [
            (endpoint, endpoint_rotate_secret(endpoint_id=endpoint.pk))
            for endpoint in queryset.select_related("client")
        ]
        return _secrets_page(request, self, rotated)


def _secrets_page(request, model_admin, secrets_shown):
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Webhook signing secret",
        "secrets": secrets_shown,
    }
    response = TemplateResponse(request, "admin/webhooks/endpoint/secret_shown.html", context)
    response["Cache-Control"] = "no-store"
    return response


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("webhook_id", "event_type", "endpoint", "status", "attempts",
                    "last_status_code", "last_error", "next_attempt_at", "created_at")  # fmt: skip
    list_filter = ("status", "event_type", "endpoint__client")
    search_fields = ("webhook_id", "endpoint__url")
    list_select_related = ("endpoint__client",)
    actions = ["resend"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # the log is a record; re-sending is the one thing to do with it

    @admin.action(description="Re-send the selected deliveries (same webhook-id)")
    def resend(self, request, queryset):
        from .tasks import deliver_webhook

        ids = list(queryset.values_list("pk", flat=True))
        for delivery_id in ids:
            delivery_resend(delivery_id=delivery_id)
            transaction.on_commit(lambda d=delivery_id: deliver_webhook.delay(d), robust=True)
        self.message_user(request, f"{len(ids)} deliver(ies) queued to be sent again.")
