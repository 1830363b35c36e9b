"""Django's HTTP requests, from the ASGI server, each in one hop to a worker thread.

Django's own ASGI handler runs every synchronous middleware (sessions, CSRF, auth, messages, ...) in a
hop of its own between the event loop and a thread: a dozen hops a request, which cost more than most
views (bench/read_paths.py). The views here are all synchronous, so each request goes whole through
Django's WSGI handler in a thread of a small pool, and the answer is sent from the event loop, which
keeps the gateway (gateway) and the websockets. Bodies arrive already bounded by the request
guard (registry_site/asgi_guard.py); Django's answers are bodies, never streams, so each is sent as one.
"""

import asyncio
import io
import sys
from concurrent.futures import ThreadPoolExecutor

from core.websockets import CLOSE_NOT_FOUND

HEADER_NAMES = {"content-length": "CONTENT_LENGTH", "content-type": "CONTENT_TYPE"}


def wsgi_environ(scope: dict, body: bytes) -> dict:
    """The WSGI environ of an ASGI HTTP request (PEP 3333: strings are latin-1 code points of bytes)."""
    script_name = scope.get("root_path", "")
    path = scope["path"]
    if script_name and path.startswith(script_name):
        path = path[len(script_name) :]
    server = scope.get("server") or ("localhost", 80)
    environ = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name.encode("utf-8").decode("latin-1"),
        "PATH_INFO": path.encode("utf-8").decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] if server[1] is not None else 80),
        "REMOTE_ADDR": (scope.get("client") or ("", 0))[0],
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        key = HEADER_NAMES.get(name) or "HTTP_" + name.upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        environ[key] = f"{environ[key]},{value}" if key in environ and key.startswith("HTTP_") else value
    return environ


class WsgiInThreads:
    """An ASGI HTTP application running `wsgi_app` in a pool of `threads` threads; `environ` entries are
    added to every request's environ (the metrics service names itself there)."""

    def __init__(self, wsgi_app, threads: int, environ: dict | None = None):
        self.wsgi_app = wsgi_app
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="django-http")
        self.environ = environ or {}

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":  # none is served here (the metrics service): closed at once
            await receive()  # websocket.connect
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": CLOSE_NOT_FOUND})
            return
        if scope["type"] != "http":
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        environ = wsgi_environ(scope, bytes(body))
        environ.update(self.environ)
        status, headers, content = await asyncio.get_running_loop().run_in_executor(
            self.executor, self._respond, environ
        )
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    def _respond(self, environ: dict) -> tuple[int, list, bytes]:
        started = {}

        def start_response(status: str, headers, exc_info=None):
            started["status"] = int(status.split(" ", 1)[0])
            started["headers"] = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]

        result = self.wsgi_app(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        return started["status"], started["headers"], content
