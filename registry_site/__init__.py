"""The Django project's wiring: settings, root URLs, the ASGI entries and their middleware, the Celery
app and the admin site. The shared library is `core/`, the processes `runtime/`."""

from registry_site.celery import app as celery_app

__all__ = ["celery_app"]
