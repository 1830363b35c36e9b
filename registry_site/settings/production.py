"""Production: real PostgreSQL and Redis are required, cookies are secure, static files are collected."""

from registry_site.settings.env import env_required

env_required("DATABASE_URL", "point it at PostgreSQL 16 with the vector extension available")
env_required("REDIS_URL", "point it at the Redis server shared by every process")
env_required("ALLOWED_HOSTS", "list the host names clients use, comma-separated")

from registry_site.settings.base import *  # noqa: E402,F403

DEBUG = False
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SERVESTATIC_USE_FINDERS = False
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "servestatic.storage.CompressedManifestStaticFilesStorage"},
}
