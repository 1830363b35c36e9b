"""A real OTLP/HTTP metrics receiver on loopback for the export tests: it decodes each POST body with
opentelemetry-proto's ExportMetricsServiceRequest and keeps what it got."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)


@dataclass
class Received:
    path: str
    content_type: str
    request: ExportMetricsServiceRequest


class OtlpReceiver:
    """Answers every POST with `status` (200 by default) after decoding and keeping the request."""

    def __init__(self, status: int = 200):
        self.status = status
        self.received: list[Received] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        """The base URL, as OTEL_OTLP_ENDPOINT takes it."""
        return f"http://127.0.0.1:{self._server.server_port}"

    def _handler(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportMetricsServiceRequest()
                request.ParseFromString(body)
                receiver.received.append(Received(self.path, self.headers.get("Content-Type", ""), request))
                answer = ExportMetricsServiceResponse().SerializeToString() if receiver.status == 200 else b""
                self.send_response(receiver.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format, *args):
                pass

        return Handler

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
