"""ASGI entry of the metrics service: the same Django project answering only the metrics routes
(`registry_site/metrics_urls.py`), on its own port (METRICS_SERVICE_PORT). Like the web processes, each
request runs whole in one hop to a worker thread (registry_site/wsgi_bridge.py); the environ names the
service, which picks its URLs (registry_site/middleware.ServiceUrlconfMiddleware)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings.base")
django_wsgi_app = get_wsgi_application()

import logging  # noqa: E402

from django.conf import settings  # noqa: E402
from django.db import DatabaseError  # noqa: E402

from core.errors import SERVICE_ENVIRON_KEY  # noqa: E402
from metrics.services import api_keys_from_environment  # noqa: E402
from registry_site.asgi_guard import RequestGuard  # noqa: E402
from registry_site.wsgi_bridge import WsgiInThreads  # noqa: E402

try:  # `serve` does this too; a deployment without it gets its METRICS_API_KEY_<NAME> keys here
    api_keys_from_environment()
except DatabaseError:  # another process of the service made the same key at the same moment
    logging.getLogger(__name__).warning("metrics keys from the environment not synchronised", exc_info=True)

metrics_http = WsgiInThreads(
    django_wsgi_app, threads=settings.WEB_THREADS, environ={SERVICE_ENVIRON_KEY: "metrics"}
)
application = RequestGuard(metrics_http, max_body=lambda: settings.METRICS_MAX_BODY_BYTES)
