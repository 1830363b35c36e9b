"""The pipelined connection of the gateway's hot path (core/redis_pipe.py), against real Redis servers:
concurrent callers each get their own reply, a caller cancelled mid-reply leaves the next caller's reply
alone, a reply too late drops the connection and the next command connects again, a replica's READONLY
drops it too, and the master is found through a Sentinel."""

import asyncio
import subprocess

import pytest
import redis
import redis.asyncio
from redis.exceptions import ConnectionError, NoScriptError, ReadOnlyError, ResponseError, TimeoutError

from core import redis_url
from core.redis_pipe import Incomplete, Pipe, encode, parse
from tests.conftest import unused_port
from tests.redis_server import RedisServer
from tests.waiting import wait_for


@pytest.fixture
def server(tmp_path):
    started = RedisServer(tmp_path, password="pw").start()
    yield started
    started.kill()


def pipe_to(server: RedisServer, timeout: float = 5) -> Pipe:
    return Pipe(redis_url.parse(server.url), timeout=timeout)


def test_concurrent_callers_share_one_connection_and_each_gets_its_own_reply(server):
    async def work():
        pipe = pipe_to(server)
        echoed = await asyncio.gather(*(pipe.execute("ECHO", f"caller {n}") for n in range(300)))
        connections = await pipe.execute("CLIENT", "LIST")
        return echoed, connections

    echoed, connections = asyncio.run(work())

    assert echoed == [f"caller {n}".encode() for n in range(300)]
    assert connections.count(b"\n") == 1  # one connection: this one


def test_a_caller_cancelled_mid_reply_leaves_the_next_callers_reply_alone(server):
    async def work():
        pipe = pipe_to(server)
        waiting = asyncio.create_task(pipe.execute("BLPOP", "nothing", "1"))
        watcher = redis.asyncio.Redis.from_url(server.url)
        while (await watcher.info("clients"))["blocked_clients"] == 0:  # written, its reply not yet come
            await asyncio.sleep(0.01)
        await watcher.aclose()
        waiting.cancel()
        after = await pipe.execute("ECHO", "mine")
        return waiting.cancelled(), after

    assert asyncio.run(work()) == (True, b"mine")


def test_a_reply_too_late_drops_the_connection_and_the_next_command_connects_again(server):
    async def work():
        pipe = pipe_to(server, timeout=0.2)
        first = await pipe.execute("CLIENT", "ID")
        with pytest.raises(TimeoutError):
            await pipe.execute("BLPOP", "nothing", "1")
        return first, await pipe.execute("CLIENT", "ID")

    first, second = asyncio.run(work())

    assert second > first


def test_error_replies_are_redis_py_exceptions_and_keep_the_connection(server):
    async def work():
        pipe = pipe_to(server)
        await pipe.execute("SET", "text", "x")
        with pytest.raises(ResponseError, match="not an integer"):
            await pipe.execute("INCR", "text")
        with pytest.raises(NoScriptError):
            await pipe.execute("EVALSHA", "0" * 40, 0)
        return await pipe.execute("EVAL", "return {1, {2, 'three'}, -4}", 0)

    assert asyncio.run(work()) == [1, [2, b"three"], -4]


def test_a_wrong_password_is_refused_when_connecting(server):
    where = redis_url.parse(f"redis://:wrong@127.0.0.1:{server.port}/0")

    async def work():
        await Pipe(where).execute("PING")

    with pytest.raises(redis.exceptions.AuthenticationError):
        asyncio.run(work())


def test_a_stopped_server_is_a_connection_error_and_a_restarted_one_is_used_again(server):
    async def work():
        pipe = pipe_to(server)
        before = await pipe.execute("INCR", "n")
        server.kill()
        with pytest.raises(ConnectionError):
            await pipe.execute("INCR", "n")
        server.start()
        return before, await pipe.execute("INCR", "n")

    assert asyncio.run(work()) == (1, 1)


def test_a_replicas_readonly_answer_drops_the_connection(server, tmp_path):
    replica_dir = tmp_path / "replica"
    replica_dir.mkdir()
    replica = RedisServer(replica_dir).start()
    try:
        redis.Redis(port=replica.port).replicaof("127.0.0.1", server.port)
        redis.Redis(port=replica.port).config_set("masterauth", "pw")

        async def work():
            pipe = Pipe(redis_url.parse(replica.url))
            with pytest.raises(ReadOnlyError):
                await pipe.execute("SET", "k", "v")
            return pipe._connection.closed

        dropped = asyncio.run(work())
    finally:
        replica.kill()

    assert dropped is True


def test_the_master_is_found_through_a_sentinel(server, tmp_path):
    from runtime.embedded import _redis_binary

    port = unused_port()
    config = tmp_path / "sentinel.conf"
    config.write_text(
        f"port {port}\nbind 127.0.0.1\nsentinel monitor registry 127.0.0.1 {server.port} 1\n"
        "sentinel auth-pass registry pw\n"
    )
    sentinel = subprocess.Popen(
        [str(_redis_binary()), str(config), "--sentinel"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        asker = redis.Redis(port=port, socket_connect_timeout=0.5)
        wait_for(lambda: _master_known(asker), timeout=10, what="the Sentinel")
        where = redis_url.parse(f"sentinel://:pw@127.0.0.1:{port}/0", master_name="registry")

        async def work():
            return await Pipe(where).execute("SET", "through", "sentinel")

        answer = asyncio.run(work())
        stored = redis.Redis.from_url(server.url).get("through")
    finally:
        sentinel.kill()
        sentinel.wait(timeout=10)

    assert (answer, stored) == ("OK", b"sentinel")


def _master_known(client: redis.Redis) -> bool:
    try:
        return client.sentinel_get_master_addr_by_name("registry") is not None
    except redis.RedisError:
        return False


def test_replies_are_parsed_whole_or_not_at_all():
    whole = bytearray(b"*3\r\n$5\r\na\r\nbc\r\n$-1\r\n*2\r\n:-7\r\n+OK\r\n-ERR no\r\n")

    reply, end = parse(whole, 0)
    error, _ = parse(whole, end)
    with pytest.raises(Incomplete):
        parse(bytearray(b"*2\r\n:1\r\n$3\r\nab"), 0)

    assert reply == [b"a\r\nbc", None, [-7, "OK"]]
    assert (type(error), str(error)) == (ResponseError, "ERR no")
    assert encode(("SET", b"k", 7)) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n7\r\n"
