"""The tamper-evident audit trail: rows linked by hash once committed, by two real processes writing at
once with no fork and no loss; an edit, a deletion, a moved row, a cut tail or a rewritten chain found by
`manage.py audit_verify`, which names the row; retention by age that keeps the chain verifiable; and the
SIEM export, resumed by cursor with nothing lost or repeated and no secret in any format."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from accounts.audit_hashing import GENESIS, row_hash
from accounts.audit_verify import audit_chain_verified
from accounts.choices import AuditAction
from accounts.models import AuditCheckpoint, AuditEvent
from accounts.services import audit_event_record
from accounts.services.audit_chain import audit_chain_extend, audit_checkpoint_write, audit_retention_apply
from tests.processes import ProcessGroup

WRITER = """
from django.db import transaction
from accounts.choices import AuditAction
from accounts.services import audit_event_record
for n in range({count}):
    with transaction.atomic():
        audit_event_record(actor=None, action=AuditAction.SERVER_UPDATE, target=f"server:/{name}-{{n}}",
                           detail={{"n": n}})
"""


def written(count: int) -> list[AuditEvent]:
    for n in range(count):
        audit_event_record(
            actor=None, action=AuditAction.SERVER_UPDATE, target=f"server:/s{n}", detail={"n": n}
        )
    audit_chain_extend()
    return list(AuditEvent.objects.order_by("chain_seq"))


def sql(statement: str, *params) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def verify() -> str:
    try:
        call_command("audit_verify", stdout=(out := io.StringIO()))
    except CommandError as failed:
        return f"FAILED {failed}"
    return out.getvalue().strip()


@pytest.mark.django_db(transaction=True)
def test_two_processes_writing_at_once_make_one_chain_with_every_row(tmp_path):
    group = ProcessGroup(tmp_path)
    try:
        writers = [
            group.start(name, "django", "shell", "-c", WRITER.format(count=500, name=name))
            for name in ("one", "two")
        ]
        assert [writer.wait(timeout=240) for writer in writers] == [0, 0], [
            p.log_path.read_text() for p in writers
        ]
    finally:
        group.stop()

    rows = list(AuditEvent.objects.filter(target__regex=r"^server:/(one|two)-").order_by("chain_seq"))
    verdict = audit_chain_verified()
    assert len(rows) == 1000
    assert [row.chain_seq for row in rows] == list(range(rows[0].chain_seq, rows[0].chain_seq + 1000))
    assert (verdict.ok, verdict.unchained) == (True, 0)
    assert {row.target for row in rows} == {f"server:/{w}-{n}" for w in ("one", "two") for n in range(500)}


@pytest.mark.django_db
def test_each_row_links_to_the_one_before_by_the_documented_rule():
    rows = written(3)

    assert [row.chain_seq for row in rows] == [1, 2, 3]
    assert rows[0].prev_hash == GENESIS
    assert [row.prev_hash for row in rows[1:]] == [row.row_hash for row in rows[:-1]]
    assert all(row.row_hash == row_hash(row, row.chain_seq, row.prev_hash) for row in rows)
    assert verify() == "The audit chain verifies: 3 rows, 0 signed checkpoints."


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("tamper", "said"),
    [
        ("edit", "Row {id} (#5, server.update server:/s4) is not what was written: it was changed or moved."),
        ("delete", "#5 is missing: row {next_id} (#6) follows #4. A row was deleted."),
        (
            "move",
            "Row {id} (#100, server.update server:/s4) is not what was written: it was changed or moved.",
        ),
        ("truncate", "The chain ends at #7 but the registry signed #10: rows after #7 were removed."),
        (
            "rewrite",
            "Row {last_id} (#10) differs from the checkpoint signed for it: the chain was rewritten.",
        ),
    ],
)
def test_audit_verify_names_the_row_that_was_tampered_with(tamper, said):
    rows = written(10)
    audit_checkpoint_write()
    target, follower = rows[4], rows[5]
    if tamper == "edit":
        sql("UPDATE accounts_auditevent SET detail = '{\"n\": 99}' WHERE id = %s", target.id)
    elif tamper == "delete":
        sql("DELETE FROM accounts_auditevent WHERE id = %s", target.id)
    elif tamper == "move":
        sql("UPDATE accounts_auditevent SET chain_seq = 100 WHERE id = %s", target.id)
    elif tamper == "truncate":
        sql("DELETE FROM accounts_auditevent WHERE chain_seq > 7")
    else:  # rewritten from #5 on by someone who knows the rule but not the registry's key
        sql("UPDATE accounts_auditevent SET detail = '{\"n\": 99}' WHERE id = %s", target.id)
        prev = rows[3].row_hash
        for row in AuditEvent.objects.filter(chain_seq__gte=5).order_by("chain_seq"):
            digest = row_hash(row, row.chain_seq, prev)
            sql(
                "UPDATE accounts_auditevent SET prev_hash = %s, row_hash = %s WHERE id = %s",
                prev,
                digest,
                row.id,
            )
            prev = digest

    read = {"edit": 5, "delete": 9, "move": 10, "truncate": 7, "rewrite": 10}[tamper]  # rows read to find it
    expected = said.format(id=target.id, next_id=follower.id, last_id=rows[9].id)
    assert verify() == f"FAILED {expected} ({read} rows read)"


@pytest.mark.django_db
def test_a_checkpoint_not_signed_by_the_registry_does_not_verify():
    written(2)
    sql(
        "INSERT INTO accounts_auditcheckpoint (chain_seq, row_hash, kind, signature, created_at) "
        "VALUES (2, %s, 'scheduled', 'eyJhbGciOiJub25lIn0.eyJzZXEiOjJ9.', now())",
        AuditEvent.objects.get(chain_seq=2).row_hash,
    )

    assert verify() == "FAILED The checkpoint of #2 is not signed by the registry. (0 rows read)"


@pytest.mark.django_db
def test_retention_removes_the_oldest_rows_and_the_chain_still_verifies(settings):
    for n in range(6):
        audit_event_record(actor=None, action=AuditAction.SERVER_UPDATE, target=f"server:/s{n}", detail={})
    sql(
        "UPDATE accounts_auditevent SET created_at = now() - interval '40 days' WHERE target = ANY(%s)",
        ["server:/s0", "server:/s1", "server:/s2"],
    )
    audit_chain_extend()
    settings.AUDIT_RETENTION_DAYS = 30

    removed = audit_retention_apply()
    kept = list(AuditEvent.objects.order_by("chain_seq"))
    checkpoint = AuditCheckpoint.objects.get(kind="retention")

    assert (removed, [row.chain_seq for row in kept]) == (3, [4, 5, 6])
    assert (checkpoint.chain_seq, checkpoint.row_hash) == (3, kept[0].prev_hash)
    assert verify() == "The audit chain verifies: 3 rows, 1 signed checkpoints."
    sql("DELETE FROM accounts_auditevent WHERE chain_seq = 4")
    assert verify() == (
        f"FAILED Rows #1 to #4 are gone with no retention checkpoint: the chain's head was cut before row "
        f"{kept[1].id}. (2 rows read)"
    )


@pytest.fixture
def secrets_made(member, token_for):
    """Every secret the fixtures make: a password, a registry token, a client secret; and a row whose
    detail holds secrets of its own."""
    from accounts.services.credentials import service_account_create

    user = member("ada", "nobody")
    user.set_password("correct horse battery staple")
    user.save()
    token = token_for(user)
    made = service_account_create(actor=None, username="robot", group_names=["robots"])
    audit_event_record(
        actor=None,
        action=AuditAction.USER_UPDATE,
        target="user:ada",
        detail={
            "password": "correct horse battery staple",
            "note": f"Bearer {token}",
            "headers": {"X-Api-Key": made.client_secret},
        },
    )
    return ["correct horse battery staple", token, made.client_secret]


@pytest.mark.django_db
@pytest.mark.parametrize("form", ["ndjson", "ocsf", "cef"])
def test_the_export_resumes_by_cursor_and_never_holds_a_secret(admin_client, secrets_made, form):
    for n in range(23):
        audit_event_record(
            actor=None, action=AuditAction.SERVER_UPDATE, target=f"server:/e{n}", detail={"n": n}
        )
    cursor, lines, pages = "0", [], 0
    while True:
        page = admin_client.get(f"/api/audit/export?since={cursor}&limit=10&format={form}")
        assert page.status_code == 200
        got = page.content.decode().splitlines()
        if not got:
            break
        lines += got
        cursor, pages = page["X-Audit-Cursor"], pages + 1

    body = "\n".join(lines)
    assert len(lines) == AuditEvent.objects.count()
    assert pages == -(-len(lines) // 10)
    assert not [secret for secret in secrets_made if secret in body]
    if form == "cef":
        assert all(line.startswith("CEF:0|mcp-gateway-registry|mcp-gateway-registry|1|") for line in lines)
        assert len({line.split("externalId=")[1].split(" ")[0] for line in lines}) == len(lines)
    else:
        documents = [json.loads(line) for line in lines]
        places = [d["seq"] if form == "ndjson" else d["unmapped"]["seq"] for d in documents]
        assert places == list(range(1, len(lines) + 1))  # each place once, in order
        if form == "ocsf":
            assert {(d["class_uid"], d["category_uid"]) for d in documents} == {(6003, 6)}
        else:
            redacted = next(d for d in documents if d["action"] == "user.update")
            assert redacted["detail"] == {
                "password": "[redacted]",
                "note": "[redacted]",
                "headers": {"X-Api-Key": "[redacted]"},
            }
            assert redacted["redacted"] is True


@pytest.mark.django_db
def test_the_export_is_for_administrators_and_refuses_a_bad_cursor(client, admin_client, member):
    client.force_login(member("bob", "nobody"))

    assert client.get("/api/audit/export").status_code == 403
    refused = admin_client.get("/api/audit/export?since=-1")
    assert (refused.status_code, refused.json()["detail"]) == (
        400,
        "since is a whole number from 0 to 100000000000000000.",
    )
    assert (
        admin_client.get("/api/audit/export?format=xml").json()["detail"]
        == "format is one of ndjson, ocsf, cef."
    )
