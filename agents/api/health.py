"""GET /api/health/ws/health_status: the snapshot the health websockets send on connect (agents/consumers.py),
for clients that cannot hold a socket: the servers and agents anyone may see (enabled servers, enabled
public agents), or with a session or token those its caller may see."""

from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import principal_of
from agents.selectors import agents_health_snapshot
from core.openapi import documented
from servers.selectors import health_snapshot


class HealthSnapshotView(APIView):
    permission_classes = [AllowAny]

    @documented(errors=())
    def get(self, request):
        principal = principal_of(request)
        viewer = principal if principal.is_authenticated else None
        return Response({**health_snapshot(viewer), **agents_health_snapshot(viewer)})
