"""Section F of the interface: the HTTP side of the health websockets. GET /api/health/ws/stats counts
every web process's sockets (kept in Redis); the snapshot, GET /api/health/ws/health_status, carries
agents too and is agents/api/health.py's."""

import redis
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import ApiError, ErrorCode
from core.openapi import documented
from servers.live.stats import stats


class WebsocketStatsView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @documented(errors=(503,))
    def get(self, request):
        try:
            return Response(stats())
        except redis.RedisError as exc:
            raise ApiError(503, ErrorCode.REDIS_UNAVAILABLE, "Redis is unavailable.") from exc
