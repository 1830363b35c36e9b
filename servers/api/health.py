"""Section F of the interface: the HTTP side of the health websockets.

GET /api/health/ws/health_status is the snapshot the websockets send on connect, for clients that cannot
hold a socket: the public view (enabled servers), or with a session or token the servers it may see.
GET /api/health/ws/stats counts every web process's sockets (kept in Redis)."""

import redis
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import principal_of
from core.errors import ApiError, ErrorCode
from core.openapi import documented
from servers.live.stats import stats
from servers.selectors import health_snapshot


class HealthSnapshotView(APIView):
    permission_classes = [AllowAny]

    @documented(errors=())
    def get(self, request):
        principal = principal_of(request)
        return Response(health_snapshot(principal if principal.is_authenticated else None))


class WebsocketStatsView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @documented(errors=(503,))
    def get(self, request):
        try:
            return Response(stats())
        except redis.RedisError as exc:
            raise ApiError(503, ErrorCode.REDIS_UNAVAILABLE, "Redis is unavailable.") from exc
