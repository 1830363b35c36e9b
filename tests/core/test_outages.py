"""PostgreSQL or Redis not answering is a 503 with a Retry-After in the path's format, never a 500
(core/outages.py). The metrics service with Redis down is in tests/metrics/test_ingest.py."""


def test_the_outage_rule_answers_each_format(rf):
    import redis
    from django.db import OperationalError

    from core.outages import outage_of, outage_response

    refused = redis.ConnectionError("Connection refused")
    wrapped = RuntimeError("while listing")
    wrapped.__cause__ = OperationalError("server closed the connection unexpectedly")

    v01 = outage_response(rf.get("/v0.1/servers"), outage_of(refused))
    page = outage_response(rf.get("/status"), outage_of(wrapped))

    assert (v01.status_code, v01["Retry-After"]) == (503, "5")
    assert (
        v01.content
        == b'{"error": {"code": "INTERNAL_ERROR", "message": "Redis is unavailable; retry shortly"}}'
    )
    assert page.status_code == 503
    assert b"The database is unavailable; retry shortly. Reload the page in a few seconds." in page.content
    assert outage_of(ValueError("not an outage")) is None
