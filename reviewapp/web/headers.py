"""Response headers every page carries that Django has no setting for."""

from django.conf import settings


class PermissionsPolicyMiddleware:
    """Permissions-Policy from settings.PERMISSIONS_POLICY, unless a view set its own."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.PERMISSIONS_POLICY and "Permissions-Policy" not in response:
            response["Permissions-Policy"] = settings.PERMISSIONS_POLICY
        return response
