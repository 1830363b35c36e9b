"""Celery tasks of the servers app. Tasks take ids, never model instances, and are safe to run twice."""

from celery import shared_task


@shared_task(name="servers.check_server_task", ignore_result=True)
def check_server_task(server_id: int) -> None:
    """Check one server's health and discover its tools over a real MCP session."""
    from servers.health import check_and_record

    check_and_record(server_id)
