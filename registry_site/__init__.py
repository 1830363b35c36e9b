"""The Django project package: settings, URLs, ASGI entry, Celery app and the embedded services."""

from registry_site.celery import app as celery_app

__all__ = ["celery_app"]
