import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
application = get_wsgi_application()

from reviewapp.startup import refuse_unless_ready  # noqa: E402  (needs settings)

refuse_unless_ready(serves_pages=True)
