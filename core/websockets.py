"""Websocket plumbing shared by every app: the origin check of cookie-authenticated sockets and the
answer to unknown websocket paths."""

from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.security.websocket import OriginValidator
from django.conf import settings

CLOSE_NOT_FOUND = 4404


class BrowserOriginValidator(OriginValidator):
    """Refuses a socket whose `Origin` is not one of ALLOWED_HOSTS, so another site's page cannot ride a
    visitor's session cookie. A socket without `Origin` (a script, not a browser) passes: it carries
    only the cookies its owner gave it."""

    def __init__(self, application):
        super().__init__(application, settings.ALLOWED_HOSTS)

    def valid_origin(self, parsed_origin) -> bool:
        return parsed_origin is None or super().valid_origin(parsed_origin)


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Any websocket path no app serves: accepted only to be closed with 4404, and ended there. It joins
    no channel layer (a consumer that does holds a blocking Redis receive until its socket's disconnect
    arrives), and stops at once rather than wait for that disconnect."""

    channel_layer_alias = "no channel layer"  # get_channel_layer answers None: nothing to receive from

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)
        raise StopConsumer
