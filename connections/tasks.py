from celery import shared_task

from connections.services import credentials_prune


@shared_task(name="connections.prune_credentials_task")
def prune_credentials_task() -> int:
    """Remove credentials no longer usable (user deactivated, server's mode or origin changed)."""
    return credentials_prune()
