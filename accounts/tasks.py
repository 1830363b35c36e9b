from celery import shared_task

from accounts.services import tokens_purge_expired
from accounts.services.audit_chain import audit_chain_extend, audit_checkpoint_write, audit_retention_apply


@shared_task(name="accounts.purge_expired_tokens_task")
def purge_expired_tokens_task() -> int:
    """Drop records of tokens expired for over a day (safe to run twice)."""
    return tokens_purge_expired()


@shared_task(name="accounts.audit_chain_task")
def audit_chain_task() -> int:
    """Link audit rows left unchained; how many (safe to run twice: the chain has one writer at a time)."""
    return audit_chain_extend()


@shared_task(name="accounts.audit_checkpoint_task")
def audit_checkpoint_task() -> int | None:
    """Sign a checkpoint of the audit chain's last row; its place, or None when there was nothing new."""
    checkpoint = audit_checkpoint_write()
    return checkpoint.chain_seq if checkpoint is not None else None


@shared_task(name="accounts.audit_retention_task")
def audit_retention_task() -> int:
    """Remove audit rows past AUDIT_RETENTION_DAYS, the chain kept verifiable; how many were removed."""
    return audit_retention_apply()
