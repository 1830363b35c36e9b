"""A virtual session's member sessions (gateway/virtual/sessions.py, gateway/virtual/members.py): each
member is opened once for the session, whichever of the client's requests or the gateway's processes
asks first, and a record written from an older view never takes a member's session away."""

import asyncio
import copy

import pytest

from gateway.epochs import Epochs
from gateway.virtual import members as virtual_members
from gateway.virtual import sessions as virtual_sessions
from gateway.virtual.members import Caller
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import INITIALIZE
from tests.mcp_servers import library_server_fixture  # noqa: F401
from virtual_servers.selectors import virtual_for_gateway
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_first_claim_of_a_members_session_wins_and_is_forgotten_with_the_session():
    async def claims():
        first = await virtual_sessions.claim_member("/suite", "registry-virtual-s1", "m1", "session-a")
        second = await virtual_sessions.claim_member("/suite", "registry-virtual-s1", "m1", "session-b")
        other = await virtual_sessions.claim_member("/suite", "registry-virtual-s1", "m2", "session-c")
        held = await virtual_sessions.members_of("/suite", "registry-virtual-s1")
        await virtual_sessions.forget("/suite", "registry-virtual-s1")
        return first, second, other, held, await virtual_sessions.members_of("/suite", "registry-virtual-s1")

    first, second, other, held, after = asyncio.run(claims())

    assert (first, second, other) == ("session-a", "session-a", "session-c")
    assert held == {"m1": "session-a", "m2": "session-c"}
    assert after == {}


def test_requests_holding_their_own_copies_of_a_record_open_a_member_once_and_keep_it(
    library_server, member, token_for
):
    """As two processes (or a GET stream and a call read from Redis apart) would: each caller holds its
    own copy of the record, both open the member at once, and the one that writes its older copy last
    (a list's names, say) does not take the member's session away from the next request."""
    ServerFactory(path="/library", proxy_pass_url=library_server)
    virtual_server_create(
        actor=None, path="/shelf", definition={"name": "Shelf", "members": [{"server": "/library"}]}
    )
    virtual = virtual_for_gateway(("/shelf",))
    (library,) = virtual.members
    session_id = "registry-virtual-race"
    record = virtual_sessions.new_record(INITIALIZE["params"])

    def caller(own_record):
        return Caller(None, Epochs(), "/shelf", session_id, own_record)

    async def race():
        await virtual_sessions.keep("/shelf", session_id, record)
        first, second = caller(copy.deepcopy(record)), caller(copy.deepcopy(record))
        opened = await asyncio.gather(
            virtual_members.member_session(first, library, {}),
            virtual_members.member_session(second, library, {}),
        )
        await virtual_sessions.keep(
            "/shelf", session_id, copy.deepcopy(record)
        )  # an older view, written last
        virtual_sessions.RECORDS.drop(virtual_sessions._key("/shelf", session_id))  # another process's memory
        later = caller(await virtual_sessions.load("/shelf", session_id))
        return opened, await virtual_members.member_session(later, library, {})

    opened, later = asyncio.run(race())

    assert opened[0] == opened[1] == later
    assert opened[0] not in ("", None)
