"""ASGI entry of the metrics service: the same Django project answering only the metrics routes
(`registry_site/metrics_urls.py`), on its own port (METRICS_SERVICE_PORT)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings.base")
django_asgi_app = get_asgi_application()

import logging  # noqa: E402

from django.db import DatabaseError  # noqa: E402

from metrics.services import api_keys_from_environment  # noqa: E402
from registry_site.errors import SERVICE_SCOPE_KEY  # noqa: E402

try:  # `serve` does this too; a deployment without it gets its METRICS_API_KEY_<NAME> keys here
    api_keys_from_environment()
except DatabaseError:  # another process of the service made the same key at the same moment
    logging.getLogger(__name__).warning("metrics keys from the environment not synchronised", exc_info=True)


from django.conf import settings  # noqa: E402

from registry_site.asgi_guard import RequestGuard  # noqa: E402


async def _metrics_service(scope, receive, send):
    if scope["type"] == "http":
        scope = {**scope, SERVICE_SCOPE_KEY: "metrics"}
    await django_asgi_app(scope, receive, send)


application = RequestGuard(_metrics_service, max_body=lambda: settings.METRICS_MAX_BODY_BYTES)
