"""Fetching Client ID Metadata Documents for django-oauth-toolkit: its URL rules (https only, public
addresses only, the address checked once and connected to, so DNS cannot rebind it), fetched by the
registry's one rule for outbound fetches (core/outbound.py: a total deadline whatever the party's pace,
a size bound, no redirects), the document parsed by the shared input rule, and its redirect URIs checked
by the rule every registration follows (oauth/clients.py).

OAUTH_CIMD_ALLOW_LOOPBACK lets a document be served on a loopback address, for development: still over
https, with the same bounds; no other internal address is ever reachable."""

from __future__ import annotations

import ipaddress
import socket
import ssl
import time

from django.conf import settings
from oauth2_provider import cimd

from core.outbound import FetchFailed, fetch
from core.untrusted import InputRejected, json_loads
from oauth.clients import ClientMetadataRefused, client_metadata_check


def _loopback_only(hostname: str, port: int) -> list[str] | None:
    """The addresses `hostname` resolves to when every one is a loopback address, else None."""
    try:
        infos = socket.getaddrinfo(hostname, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        return None
    addresses = [info[4][0] for info in infos]
    if addresses and all(ipaddress.ip_address(address).is_loopback for address in addresses):
        return addresses
    return None


class MetadataFetcher(cimd.SafeMetadataFetcher):
    def fetch(self, client_id):
        parsed = cimd._validate_client_id_url(client_id)  # https, a host, a path, no dot segments
        port = parsed.port or 443
        addresses = _loopback_only(parsed.hostname, port) if settings.OAUTH_CIMD_ALLOW_LOOPBACK else None
        if addresses is None:
            addresses = cimd._resolve_and_validate(parsed.hostname, port)  # public addresses only
        total = cimd.oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS  # OAUTH_CIMD_TIMEOUT_SECONDS
        deadline = time.monotonic() + total
        context = ssl.create_default_context()
        failure: FetchFailed | None = None
        for address in addresses:  # one deadline for every address the name has
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                answer = fetch(
                    client_id,
                    deadline_seconds=remaining,
                    max_bytes=cimd.oauth2_settings.CIMD_MAX_DOCUMENT_SIZE,
                    headers={"Accept": "application/json, application/*+json"},
                    connect_to=str(address),
                    ssl_context=context,
                )
            except FetchFailed as exc:
                failure = exc
                continue
            return self._document(answer)
        raise cimd.CIMDError(f"could not fetch client_id document: {failure or 'no time left'}")

    @staticmethod
    def _document(answer):
        if answer.status != 200:
            raise cimd.CIMDError(f"client_id document returned HTTP {answer.status}")
        media_type = answer.media_type
        if media_type != "application/json" and not (
            media_type.startswith("application/") and media_type.endswith("+json")
        ):
            raise cimd.CIMDError(f"client_id document is not JSON (Content-Type: {media_type!r})")
        try:
            document = json_loads(answer.body, "client_id document")
        except InputRejected as rejected:
            raise cimd.CIMDError(str(rejected)) from None
        if not isinstance(document, dict):
            raise cimd.CIMDError("client_id document must be a JSON object")
        try:
            client_metadata_check(document)
        except ClientMetadataRefused as refused:
            raise cimd.CIMDError(refused.description) from None
        return document, cimd._effective_max_age(answer.headers.get("Cache-Control"))
