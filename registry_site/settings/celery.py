"""Celery: Redis broker, no result backend (tasks report through the database), one beat schedule."""

from registry_site.settings.env import env
from registry_site.settings.metrics import METRICS_FLUSH_INTERVAL_SECONDS
from registry_site.settings.services import REDIS_TARGET, REDIS_URL, VAR_DIR

CELERY_BROKER_URL = REDIS_URL
# A task whose worker died (acks_late below) goes back to the queue once it has been unacknowledged this
# long, found by a sweep every few seconds; it must exceed the longest task, or a running task is
# delivered again (every task is safe to run twice, but that is wasted work).
CELERY_VISIBILITY_TIMEOUT_SECONDS = env.int("CELERY_VISIBILITY_TIMEOUT_SECONDS", default=300)
_RESTORE_INTERVAL = max(1, min(10, CELERY_VISIBILITY_TIMEOUT_SECONDS // 10))
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT_SECONDS,
    "unacked_restore_interval": _RESTORE_INTERVAL,
    "unacked_restore_throttle": 1,
    # Each sweep holds a Redis lock for a few milliseconds; a worker killed while holding it left it for
    # kombu's default 300 s, and no task was redelivered meanwhile. Sweeps that overlap are safe (each
    # restore is a WATCH transaction), so the lock lapses after a few sweep periods.
    "unacked_mutex_expire": 5 * _RESTORE_INTERVAL,
}
if REDIS_TARGET.uses_sentinel:
    CELERY_BROKER_TRANSPORT_OPTIONS |= {
        "master_name": REDIS_TARGET.master_name,
        "sentinel_kwargs": REDIS_TARGET.sentinel_kwargs(),
    }
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True  # a task whose worker dies is redelivered; every task is safe to run twice
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_WORKER_CONCURRENCY = env.int("CELERY_WORKER_CONCURRENCY", default=2)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# Periodic work. Each entry names its task, its period and an `expires` just under the period so a
# backlog never runs stale copies.
HEALTH_CHECK_INTERVAL_SECONDS = env.int("HEALTH_CHECK_INTERVAL_SECONDS", default=300)
HEALTH_CHECK_TIMEOUT_SECONDS = env.int("HEALTH_CHECK_TIMEOUT_SECONDS", default=10)
# Unhealthy servers are re-checked sooner, backing off from this to the interval (servers/recheck.py).
HEALTH_RECHECK_MIN_SECONDS = env.int("HEALTH_RECHECK_MIN_SECONDS", default=15)
# The audit chain (accounts/services/audit_chain.py): how often the registry signs a checkpoint of it, and
# how many days of rows it keeps (0: every row, for ever).
AUDIT_CHECKPOINT_INTERVAL_SECONDS = env.int("AUDIT_CHECKPOINT_INTERVAL_SECONDS", default=3600)
AUDIT_RETENTION_DAYS = env.int("AUDIT_RETENTION_DAYS", default=0)

CELERY_BEAT_SCHEDULE = {
    # Health of every enabled server: one check task per server, each bounded by the check timeout.
    "sweep-health": {
        "task": "servers.sweep_health_task",
        "schedule": float(HEALTH_CHECK_INTERVAL_SECONDS),
        "options": {"expires": max(1, HEALTH_CHECK_INTERVAL_SECONDS - 1)},
    },
    # Unhealthy servers whose re-check is due (servers/recheck.py), looked for at the shortest delay.
    "recheck-unhealthy": {
        "task": "servers.recheck_unhealthy_task",
        "schedule": float(HEALTH_RECHECK_MIN_SECONDS),
        "options": {"expires": max(1, HEALTH_RECHECK_MIN_SECONDS - 1)},
    },
    # The same for agents (agents/tasks.py): the card fetched and the main interface asked.
    "sweep-agent-health": {
        "task": "agents.sweep_agent_health_task",
        "schedule": float(HEALTH_CHECK_INTERVAL_SECONDS),
        "options": {"expires": max(1, HEALTH_CHECK_INTERVAL_SECONDS - 1)},
    },
    "recheck-unhealthy-agents": {
        "task": "agents.recheck_unhealthy_agents_task",
        "schedule": float(HEALTH_RECHECK_MIN_SECONDS),
        "options": {"expires": max(1, HEALTH_RECHECK_MIN_SECONDS - 1)},
    },
    # Records of expired tokens are only kept a day, for revocation checks and the audit view.
    "purge-expired-tokens": {
        "task": "accounts.purge_expired_tokens_task",
        "schedule": 3600.0,
        "options": {"expires": 3500},
    },
    # Upstream credentials no longer usable: their user deactivated, their server's mode or origin
    # changed (connections/services.py). The gateway never sends such a credential meanwhile.
    "prune-upstream-credentials": {
        "task": "connections.prune_credentials_task",
        "schedule": 300.0,
        "options": {"expires": 290},
    },
    # Applications that registered themselves and were never authorized; expired OAuth tokens.
    "purge-unused-applications": {
        "task": "oauth.purge_unused_applications_task",
        "schedule": 3600.0,
        "options": {"expires": 3500},
    },
    # Upstream registries whose sync interval has passed (catalog/services/mirroring.py); a sync in
    # progress holds its upstream's lock, so a slow one is never run twice at once.
    "sync-upstreams": {
        "task": "catalog.sync_due_upstreams_task",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    # Backstop of the on-commit embedding tasks: embeds agents still marked dirty (a lost task, a
    # worker that was down, an edit made while an embedding ran).
    "embed-dirty-agents": {
        "task": "search.embed_agents_task",
        "schedule": 30.0,
        "options": {"expires": 25},
    },
    # The same backstop for servers and their tools.
    "embed-dirty-servers": {
        "task": "search.embed_servers_task",
        "schedule": 30.0,
        "options": {"expires": 25},
    },
    # And for published and mirrored servers (their latest versions).
    "embed-dirty-versions": {
        "task": "search.embed_versions_task",
        "schedule": 30.0,
        "options": {"expires": 25},
    },
    # And for skills (their approved versions' frontmatter).
    "embed-dirty-skills": {
        "task": "search.embed_skills_task",
        "schedule": 30.0,
        "options": {"expires": 25},
    },
    # The audit chain: rows a process left unchained (it died between its commit and the chaining), a
    # signed checkpoint, and retention by age that keeps the chain verifiable.
    "audit-chain": {
        "task": "accounts.audit_chain_task",
        "schedule": 30.0,
        "options": {"expires": 25},
    },
    "audit-checkpoint": {
        "task": "accounts.audit_checkpoint_task",
        "schedule": float(AUDIT_CHECKPOINT_INTERVAL_SECONDS),
        "options": {"expires": max(1, AUDIT_CHECKPOINT_INTERVAL_SECONDS - 1)},
    },
    "audit-retention": {
        "task": "accounts.audit_retention_task",
        "schedule": 24 * 3600.0,
        "options": {"expires": 3600},
    },
    # Buffered metrics to PostgreSQL. A flush that dies leaves its hand-off for a later one.
    "flush-metrics": {
        "task": "metrics.flush_metrics_task",
        "schedule": METRICS_FLUSH_INTERVAL_SECONDS,
        "options": {"expires": max(1.0, METRICS_FLUSH_INTERVAL_SECONDS * 2)},
    },
    # Rows older than each table's retention policy.
    "metrics-retention": {
        "task": "metrics.retention_cleanup_task",
        "schedule": 24 * 3600.0,
        "options": {"expires": 3600},
    },
}
