"""ASGI entry: MCP traffic to the gateway, other HTTP to Django (each request whole in a worker thread,
registry_site/wsgi_bridge.py), websockets to the Channels routes of each app."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings.base")
django_wsgi_app = get_wsgi_application()  # set up Django before importing consumers

from core.embeddings import warm_up  # noqa: E402

warm_up()  # load the embedding model in the background now, not on the first search

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.sessions import CookieMiddleware  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import re_path  # noqa: E402

from agents.routing import websocket_urlpatterns as health_websockets  # noqa: E402
from catalog.page_answers import PageAnswers  # noqa: E402
from core.websockets import NotFoundConsumer  # noqa: E402
from gateway import tracing  # noqa: E402
from gateway.a2a.app import AgentGateway  # noqa: E402
from gateway.app import Gateway  # noqa: E402
from gateway.virtual.a2a import VirtualAgentFace  # noqa: E402
from registry_site.asgi_guard import RequestGuard  # noqa: E402
from registry_site.wsgi_bridge import WsgiInThreads  # noqa: E402
from servers.live.stats import heartbeat_forever  # noqa: E402

heartbeat_forever()  # websocket uptime, counted across web processes
tracing.configure()  # traces of the gateway's traffic, when an OTLP endpoint is set (docs/observability.md)

django_http = WsgiInThreads(django_wsgi_app, threads=settings.WEB_THREADS)
guarded_django = RequestGuard(django_http, max_body=lambda: settings.MAX_REQUEST_BODY_BYTES)
websocket_urlpatterns = [*health_websockets, re_path(r"", NotFoundConsumer.as_asgi())]

application = ProtocolTypeRouter(
    {
        # MCP traffic to /<server path>/mcp first (gateway), A2A traffic to /<agent path>/a2a next
        # (gateway/a2a), /v0.1 pages answered before (catalog/page_answers.py), then Django behind the
        # request guard.
        "http": Gateway(VirtualAgentFace(AgentGateway(PageAnswers(guarded_django)))),
        "websocket": CookieMiddleware(URLRouter(websocket_urlpatterns)),
    }
)
