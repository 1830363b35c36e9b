from celery import shared_task

from accounts.services import tokens_purge_expired


@shared_task(name="accounts.purge_expired_tokens_task")
def purge_expired_tokens_task() -> int:
    """Drop records of tokens expired for over a day (safe to run twice)."""
    return tokens_purge_expired()
