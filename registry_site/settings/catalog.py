"""The catalog: mirroring other registries (catalog/services/mirroring.py) and the bounds of the Registry
API's answers (catalog/api/v01.py)."""

from registry_site.settings.env import ConfigurationError, env

# One page of an upstream, fetched whole (connecting, headers, body) within this many seconds.
MIRROR_PAGE_TIMEOUT_SECONDS = env.float("MIRROR_PAGE_TIMEOUT_SECONDS", default=30.0)
# A sync stops after this many pages, entries or seconds; the next one resumes from the cursor. The
# seconds stay below CELERY_VISIBILITY_TIMEOUT_SECONDS, so a sync never outlives its task's lease.
MIRROR_SYNC_MAX_PAGES = env.int("MIRROR_SYNC_MAX_PAGES", default=1000)
MIRROR_SYNC_MAX_ENTRIES = env.int("MIRROR_SYNC_MAX_ENTRIES", default=100_000)
MIRROR_SYNC_MAX_SECONDS = env.int("MIRROR_SYNC_MAX_SECONDS", default=240)
if (
    min(MIRROR_PAGE_TIMEOUT_SECONDS, MIRROR_SYNC_MAX_PAGES, MIRROR_SYNC_MAX_ENTRIES, MIRROR_SYNC_MAX_SECONDS)
    <= 0
):
    raise ConfigurationError("MIRROR_PAGE_TIMEOUT_SECONDS and the MIRROR_SYNC_MAX_* bounds must be positive")

# The most bytes of server.json documents one /v0.1 answer carries: a page ends early (with its
# nextCursor) rather than pass it.
REGISTRY_MAX_ANSWER_BYTES = env.int("REGISTRY_MAX_ANSWER_BYTES", default=4 * 1024 * 1024)
