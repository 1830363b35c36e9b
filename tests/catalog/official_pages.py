"""An upstream that speaks the official registry's format, on a loopback port: `/v0.1/servers` pages
of ServerResponse entries with cursors of its own and `updated_since` (an entry's `updatedAt` at or after
it) honoured. The mirroring tests and bench/mirror.py serve real server.json documents from it."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

OFFICIAL = "io.modelcontextprotocol.registry/official"


def official_entry(document: dict, stamp: str, status: str = "active") -> dict:
    """A ServerResponse as the official registry answers it."""
    meta = {"status": status, "publishedAt": stamp, "updatedAt": stamp, "isLatest": True}
    return {"server": document, "_meta": {OFFICIAL: meta}}


class OfficialPages:
    """Serves `entries` (a list the caller may change under `lock`), each page after `delay` seconds;
    records each request's path, query and Authorization header in `requests`. `stop()` ends it."""

    def __init__(self, entries: list[dict], *, delay: float = 0.0):
        self.entries, self.requests, self.lock, self.delay = entries, [], threading.Lock(), delay
        pages = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urlsplit(self.path)
                query = {key: values[0] for key, values in parse_qs(parts.query).items()}
                pages.requests.append((parts.path, query, self.headers.get("Authorization")))
                time.sleep(pages.delay)
                start, limit = int(query.get("cursor", "0")), int(query.get("limit", "30"))
                since = query.get("updated_since", "")
                with pages.lock:
                    chosen = [e for e in pages.entries if e["_meta"][OFFICIAL]["updatedAt"] >= since]
                shown = chosen[start : start + limit]
                page = {"servers": shown, "metadata": {"count": len(shown)}}
                if start + limit < len(chosen):
                    page["metadata"]["nextCursor"] = str(start + limit)
                body = json.dumps(page).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
