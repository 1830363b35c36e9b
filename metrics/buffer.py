"""The Redis buffer between ingestion and the database, with a reliable hand-off.

Ingestion appends each accepted batch (one JSON list) to `BUFFER` in the same Redis transaction that
adds it to the exported aggregates. A flush atomically moves some batches to a processing list of its
own, registered with a lease in `LEASES`, stores them, and only then deletes the list. A flusher that
dies half-way leaves its list behind; once the lease has passed, the next flush stores it again. Rows
carry the id given at ingestion and are inserted with ON CONFLICT DO NOTHING, so storing a list twice
writes each metric once: nothing is lost and nothing is written twice."""

import json
import logging
import time
import uuid
from collections.abc import Iterator
from functools import lru_cache

import redis
from django.conf import settings

from core.redis_clients import sync_client
from metrics import aggregates

logger = logging.getLogger(__name__)

BUFFER = "registry:metrics:buffer"
LEASES = "registry:metrics:processing"  # sorted set: processing list name -> lease deadline
PROCESSING_PREFIX = "registry:metrics:processing:"
LEASE_SECONDS = 60.0  # far longer than storing one hand-off takes
DEAD_LETTERS = "registry:metrics:dead_letters"  # metrics the database refused, newest first
DEAD_LETTER_COUNT = "registry:metrics:dead_letter_count"  # how many ever, including those trimmed away
DEAD_LETTERS_KEPT = 10_000
REPLICATION_MARK = "registry:metrics:replication_mark"  # written after each batch when replicas must confirm

# KEYS: buffer, processing list, leases; ARGV: how many batches, lease deadline
_TAKE = """
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #items == 0 then return 0 end
redis.call('LTRIM', KEYS[1], #items, -1)
redis.call('RPUSH', KEYS[2], unpack(items))
redis.call('ZADD', KEYS[3], ARGV[2], KEYS[2])
return #items
"""


@lru_cache(maxsize=1)
def _take_script():
    return sync_client().register_script(_TAKE)


class NotReplicated(redis.ConnectionError):
    """Fewer replicas than METRICS_REPLICA_ACKS confirmed a batch in time: not accepted (an outage, 503)."""


def push(records: list[dict]) -> None:
    """Buffer accepted metrics and count them in the aggregates, atomically; with METRICS_REPLICA_ACKS,
    return only once that many replicas hold them. A batch the replicas did not confirm in time is taken
    back out of the buffer and NotReplicated raised (503: nothing was kept, the sender sends it again),
    unless a flush has already taken it, in which case it is being stored and counts as accepted."""
    client = sync_client()
    batch = json.dumps(records, separators=(",", ":"))
    pipe = client.pipeline(transaction=True)
    pipe.rpush(BUFFER, batch)
    aggregates.record(pipe, records)
    pipe.execute()
    wanted = settings.METRICS_REPLICA_ACKS
    if wanted <= 0:
        return
    # WAIT counts replicas holding this connection's writes; replication keeps order, so a replica holding
    # a write made after the batch (on one pipelined connection with the WAIT) holds the batch.
    check = client.pipeline(transaction=False)
    check.incr(REPLICATION_MARK)
    check.wait(wanted, settings.METRICS_REPLICA_TIMEOUT_MS)
    confirmed = check.execute()[1]
    if confirmed < wanted and client.lrem(BUFFER, 1, batch):
        raise NotReplicated(f"{confirmed} of {wanted} Redis replicas confirmed the batch in time")


def take(max_batches: int, *, lease_seconds: float = LEASE_SECONDS) -> str | None:
    """Move up to `max_batches` buffered batches to a new processing list; its name, or None if the
    buffer was empty."""
    name = f"{PROCESSING_PREFIX}{uuid.uuid4().hex}"
    moved = _take_script()(keys=[BUFFER, name, LEASES], args=[max_batches, time.time() + lease_seconds])
    return name if moved else None


def stale(*, lease_seconds: float = LEASE_SECONDS) -> Iterator[str]:
    """Processing lists whose flusher has not finished within its lease (it died); each is leased again
    to the caller before it is yielded. Two flushers recovering the same list at once both store it,
    which the row ids make harmless."""
    client = sync_client()
    for raw in client.zrangebyscore(LEASES, "-inf", time.time()):
        client.zadd(LEASES, {raw: time.time() + lease_seconds}, xx=True)
        yield raw.decode()


def records_of(name: str) -> list[dict]:
    return [record for batch in sync_client().lrange(name, 0, -1) for record in json.loads(batch)]


def release(name: str) -> None:
    """The list is stored: forget it."""
    pipe = sync_client().pipeline(transaction=True)
    pipe.delete(name)
    pipe.zrem(LEASES, name)
    pipe.execute()


def dead_letter(record: dict, *, reason: str) -> None:
    """Set aside a metric the database refused (kept for inspection, counted, logged)."""
    logger.error("metric %s refused by the database and dead-lettered: %s", record.get("id"), reason)
    entry = json.dumps({"reason": reason, "record": record}, default=str)
    pipe = sync_client().pipeline(transaction=True)
    pipe.lpush(DEAD_LETTERS, entry)
    pipe.ltrim(DEAD_LETTERS, 0, DEAD_LETTERS_KEPT - 1)
    pipe.incr(DEAD_LETTER_COUNT)
    pipe.execute()


def dead_letters(limit: int = 100) -> tuple[int, list[dict]]:
    """(how many metrics were ever dead-lettered, the newest `limit` of them)."""
    client = sync_client()
    count = int(client.get(DEAD_LETTER_COUNT) or 0)
    return count, [json.loads(raw) for raw in client.lrange(DEAD_LETTERS, 0, limit - 1)]


def pending() -> int:
    """Batches waiting in the buffer (not counting processing lists)."""
    return sync_client().llen(BUFFER)
