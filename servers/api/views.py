"""JSON endpoints of the server registry."""

from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import IsRegistryAdmin
from accounts.authentication import InternalBasicAuthentication
from servers.api.serializers import InternalServerSerializer
from servers.models import Server


class InternalView(APIView):
    """The internal administration API: HTTP Basic against ADMIN_USER / ADMIN_PASSWORD only."""

    authentication_classes = [InternalBasicAuthentication]
    permission_classes = [IsRegistryAdmin]


class InternalListView(InternalView):
    """GET /api/internal/list: every server with its health."""

    def get(self, request):
        servers = Server.objects.order_by("path")
        return Response({"services": InternalServerSerializer(servers, many=True).data})
