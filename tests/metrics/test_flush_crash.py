"""A flush worker killed (SIGKILL) half-way loses nothing and writes nothing twice: the next flush
stores its hand-off again and the row ids keep every metric once."""

import json
import signal
import subprocess
import sys
import time

import pytest

from metrics import buffer
from metrics.models import ApiKey, AuthMetric
from metrics.services import metrics_flush, metrics_ingest
from tests.conftest import PROJECT_DIR
from tests.metrics.conftest import metric
from tests.processes import child_env

pytestmark = pytest.mark.django_db(transaction=True)

LEASE_SECONDS = 1.0

# A flusher that SIGKILLs itself `before` storing its hand-off or `after` committing it (before
# releasing it): the two moments a crash could lose or duplicate metrics.
DYING_FLUSH = """
import os, signal, sys
import django
django.setup()
from metrics.services import ingestion
store, moment = ingestion.rows_store, sys.argv[1]
def dying_store(records):
    if moment == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    store(records)
    os.kill(os.getpid(), signal.SIGKILL)
ingestion.rows_store = dying_store
ingestion.metrics_flush(lease_seconds=float(sys.argv[2]))
"""


def accepted_ids(batches: int, per_batch: int) -> set[str]:
    key = ApiKey.objects.create(service="registry", key_hash="h" * 64, prefix="mk_x")
    ids = set()
    for _ in range(batches):
        metrics_ingest(key=key, body={"service": "registry", "metrics": [metric()] * per_batch})
    for raw in buffer.sync_client().lrange(buffer.BUFFER, 0, -1):
        ids.update(record["id"] for record in json.loads(raw))
    return ids


def stored_ids() -> list[str]:
    return [pk.hex for pk in AuthMetric.objects.values_list("id", flat=True)]


@pytest.mark.parametrize(("moment", "stored_before_recovery"), [("before", 0), ("after", 150)])
def test_a_flusher_killed_half_way_loses_nothing_and_duplicates_nothing(moment, stored_before_recovery):
    ids = accepted_ids(batches=3, per_batch=50)

    dying = subprocess.run(
        [sys.executable, "-c", DYING_FLUSH, moment, str(LEASE_SECONDS)],
        cwd=PROJECT_DIR,
        env=child_env(),
        capture_output=True,
    )

    assert dying.returncode == -signal.SIGKILL, dying.stderr.decode()
    assert len(stored_ids()) == stored_before_recovery
    assert buffer.pending() == 0  # the hand-off left the buffer...
    assert buffer.sync_client().zcard(buffer.LEASES) == 1  # ...and waits in a leased processing list

    assert metrics_flush() == 0  # its lease still runs
    time.sleep(LEASE_SECONDS + 0.1)
    recovered = metrics_flush()

    assert recovered == 150
    assert sorted(stored_ids()) == sorted(ids)  # every accepted metric, each once
    assert buffer.sync_client().zcard(buffer.LEASES) == 0
