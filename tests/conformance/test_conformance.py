"""The official MCP conformance suite, run against our conformance server: direct, through the gateway (a
loopback proxy adds the bearer token the suite does not send), and through virtual servers of it. Every
scenario that passes direct passes through the gateway; the scenarios in which the server asks the client
something mid-call run several more times through it, since a request lost on the way would fail them only
now and then."""

import pytest

from tests.conformance import server
from tests.conformance.suite import BearerProxy, failed_checks, run_suite
from tests.factories import ServerFactory
from tests.gateway.gateway_calls import caller_fixture, gateway_fixture  # noqa: F401
from tests.mcp_servers import UvicornThread, library_server_fixture, loopback_socket  # noqa: F401
from virtual_servers.services import virtual_server_create

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_ASKS_CLIENT = ("tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults")
REPEATS = 3


def serve(app) -> UvicornThread:
    return UvicornThread(app, loopback_socket()).start()


def test_every_scenario_that_passes_direct_passes_through_the_gateway(gateway, caller, tmp_path):
    upstream = serve(server.app())
    ServerFactory(path="/conformance", proxy_pass_url=upstream.url("/mcp"))
    token = caller({"server": "/conformance", "methods": ["*"], "tools": ["*"]})
    proxy = serve(BearerProxy(f"http://localhost:{gateway.port}", token))
    try:
        direct = run_suite(f"http://localhost:{upstream.port}/mcp", tmp_path / "direct")
        through = run_suite(f"http://localhost:{proxy.port}/conformance/mcp", tmp_path / "gateway")
        repeated = [
            run_suite(f"http://localhost:{proxy.port}/conformance/mcp", tmp_path / "again", scenario=name)
            for name in SERVER_ASKS_CLIENT
            for _ in range(REPEATS)
        ]
    finally:
        proxy.stop()
        upstream.stop()

    passing = sorted(name for name, passed in direct.items() if passed)
    assert len(direct) >= 30 and passing == sorted(direct)  # our server passes every scenario it ran
    assert sorted(through) == sorted(direct)
    failed = failed_checks(tmp_path / "gateway", tmp_path / "again")
    assert [name for name in passing if not through[name]] == [], failed
    assert [verdict for run in repeated for verdict in run.values()] == [True] * (
        len(SERVER_ASKS_CLIENT) * REPEATS
    ), failed


def test_every_scenario_passes_through_virtual_servers_of_the_conformance_server(
    gateway, caller, library_server, tmp_path
):
    """Alone, and beside a second real server (whose resources are left out: with resources from two
    members, their URIs would be prefixed, and the suite reads the conformance server's by theirs)."""
    upstream = serve(server.app())
    ServerFactory(path="/conformance", proxy_pass_url=upstream.url("/mcp"))
    ServerFactory(path="/library", proxy_pass_url=library_server)
    virtual_server_create(
        actor=None, path="/suite", definition={"name": "Suite", "members": [{"server": "/conformance"}]}
    )
    members = [{"server": "/conformance"}, {"server": "/library", "resources": {"include": []}}]
    virtual_server_create(actor=None, path="/suite-plus", definition={"name": "Suite+", "members": members})
    token = caller({"server": "*", "methods": ["*"], "tools": ["*"]})
    proxy = serve(BearerProxy(f"http://localhost:{gateway.port}", token))
    try:
        alone = run_suite(f"http://localhost:{proxy.port}/suite/mcp", tmp_path / "virtual")
        beside = run_suite(f"http://localhost:{proxy.port}/suite-plus/mcp", tmp_path / "virtual-plus")
    finally:
        proxy.stop()
        upstream.stop()

    assert len(alone) >= 30 and sorted(alone) == sorted(beside)
    failed = [
        f"{run}/{name}"
        for run, ran in (("alone", alone), ("beside", beside))
        for name in ran
        if not ran[name]
    ]
    assert failed == [], failed_checks(tmp_path / "virtual", tmp_path / "virtual-plus")
