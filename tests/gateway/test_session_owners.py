"""Who owns a session is asked of Redis once per process (gateway/sessions.py): later requests of the
session cost no round trip while the push is current, and an ended session is refused by every process."""

import asyncio

import pytest

from accounts.principal import Principal
from core.epoch_watch import WATCH, EpochWatch
from core.redis_clients import async_client
from gateway import sessions
from gateway.sessions import KnownOwners
from tests.waiting import wait_for

ALICE = Principal(username="alice", auth_method="session")
BOB = Principal(username="bob", auth_method="session")


@pytest.fixture
def counted_reads(monkeypatch):
    """The GETEXs sent to Redis for session owners."""
    reads = []

    def client():
        real = async_client()

        class Counting:
            def __getattr__(self, name):
                return getattr(real, name)

            async def getex(self, *args, **kwargs):
                reads.append(args[0])
                return await real.getex(*args, **kwargs)

        return Counting()

    monkeypatch.setattr(sessions, "async_client", client)
    wait_for(lambda: WATCH.values(["registry:epoch:auth"]), timeout=5, interval=0.01, what="the push")
    return reads


def test_the_owner_is_read_once_then_known(counted_reads):
    async def go():
        await sessions.bind("/pipes", "s-1", ALICE)
        return [await sessions.belongs_to("/pipes", "s-1", ALICE) for _ in range(20)]

    assert asyncio.run(go()) == [True] * 20
    assert counted_reads == []  # bound here: known from the start


def test_another_process_reads_it_once_and_refuses_another_caller(counted_reads, monkeypatch):
    asyncio.run(sessions.bind("/pipes", "s-2", ALICE))
    monkeypatch.setattr(sessions, "OWNERS", KnownOwners())  # another process: nothing known yet

    async def go():
        return [await sessions.belongs_to("/pipes", "s-2", who) for who in (ALICE, BOB, ALICE, BOB)]

    assert asyncio.run(go()) == [True, False, True, False]
    assert len(counted_reads) == 1


def test_an_ended_session_is_forgotten_by_every_process(counted_reads):
    elsewhere = EpochWatch()  # another process's subscription, and its memory of owners
    theirs = KnownOwners()
    elsewhere.on_gone.append(theirs.gone)
    wait_for(lambda: elsewhere.values(["registry:epoch:auth"]), timeout=5, interval=0.01, what="its push")
    key = sessions._session_key("/pipes", "s-3")
    theirs.put(key, sessions.owner(ALICE), theirs.generation)

    asyncio.run(sessions.unbind("/pipes", "s-3"))

    wait_for(lambda: theirs._owners.get(key) is None, timeout=1, interval=0.01, what="forgotten there")
    elsewhere._stopping.set()


def test_one_key_builder_keeps_every_kinds_keys_as_they_were():
    """Every kind of session fact is keyed by the one builder, under the same keys as before it (a
    deploy leaves open sessions, streams and tasks where they are)."""
    import hashlib

    from gateway import sessions

    digest = hashlib.sha256(b"s-1").hexdigest()
    keys = {kind.name: sessions.key(kind, "/team", "s-1") for kind in sessions.Kind}

    assert keys == {
        "OWNER": f"registry:gateway:owner:/team:{digest}",
        "SSE": f"registry:gateway:sse:/team:{digest}",
        "DEFERRED": f"registry:gateway:deferred:/team:{digest}",
        "VIRTUAL": f"registry:gateway:virtual:/team:{digest}",
        "VIRTUAL_SSE": f"registry:gateway:virtual-sse:/team:{digest}",
        "A2A_TASK": f"registry:gateway:a2a:task:/team:{digest}",
        "A2A_CONTEXT": f"registry:gateway:a2a:context:/team:{digest}",
        "VIRTUAL_A2A_TASK": f"registry:gateway:virtual:a2a-task:/team:{digest}",
    }
