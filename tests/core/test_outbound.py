"""The one rule for outbound fetches (core/outbound.py): a party that drips its answer, headers or body,
is cut at the total deadline; a body beyond its bound is refused; a plain answer comes back whole."""

import http.server
import threading
import time

import pytest

from core.outbound import FetchFailed, fetch
from tests.drip import DripServer
from tests.mcp_servers import loopback_socket


@pytest.mark.parametrize("headers_too", [False, True], ids=["body", "headers"])
def test_a_dripping_party_is_cut_at_the_total_deadline(headers_too):
    server = DripServer(interval=0.1, for_seconds=20, headers_too=headers_too)
    started = time.monotonic()
    try:
        with pytest.raises(FetchFailed, match="no whole answer within 1 s"):
            fetch(server.url("/page"), deadline_seconds=1.0, max_bytes=1_000_000)
    finally:
        server.stop()

    assert time.monotonic() - started < 2.5


@pytest.fixture
def plain_server():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"x" * int(self.path.strip("/"))
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    sock = loopback_socket()
    server = http.server.ThreadingHTTPServer(sock.getsockname(), Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    sock.listen(16)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.shutdown()
    server.server_close()


def test_an_answer_within_its_bounds_comes_back_whole(plain_server):
    answer = fetch(f"{plain_server}/300000", deadline_seconds=5, max_bytes=300_000)

    assert (answer.status, answer.media_type, len(answer.body)) == (200, "application/json", 300_000)


def test_an_answer_beyond_its_size_is_refused(plain_server):
    with pytest.raises(FetchFailed, match="larger than 1000 bytes"):
        fetch(f"{plain_server}/1001", deadline_seconds=5, max_bytes=1000)


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "file:///etc/passwd", "http:///nohost"])
def test_only_http_urls_are_fetched(url):
    with pytest.raises(FetchFailed, match="not an http"):
        fetch(url, deadline_seconds=1, max_bytes=10)
