"""ASGI entry: HTTP goes to Django, websockets to the Channels routes of each app."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "registry_site.settings.base")
django_asgi_app = get_asgi_application()  # set up Django before importing consumers

from registry_site.embeddings import warm_up  # noqa: E402

warm_up()  # load the embedding model in the background now, not on the first search

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

websocket_urlpatterns: list = []

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
