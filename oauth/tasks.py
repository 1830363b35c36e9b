from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.core.management import call_command

from oauth.services import applications_purge_unused


@shared_task(name="oauth.purge_unused_applications_task")
def purge_unused_applications_task() -> int:
    """Remove self-registered applications never authorized within OAUTH_UNUSED_REGISTRATION_HOURS, and
    expired tokens and codes (django-oauth-toolkit's cleartokens). Safe to run twice."""
    removed = applications_purge_unused(older_than=timedelta(hours=settings.OAUTH_UNUSED_REGISTRATION_HOURS))
    call_command("cleartokens")
    return removed
