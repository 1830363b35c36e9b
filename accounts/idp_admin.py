"""The identity provider's admin API (Keycloak): listing, creating and deleting groups for the internal
API. Called with a token of an admin client (client-credentials grant); stdlib HTTP, 5 s timeouts."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from django.conf import settings


class IdpError(Exception):
    """The identity provider's admin API failed; the message is safe to show (it never holds secrets)."""


@dataclass(frozen=True)
class KeycloakAdmin:
    """Keycloak's admin REST API, called with a token of an admin client (client-credentials grant)."""

    url: str
    realm: str
    client_id: str
    client_secret: str
    timeout: float = 5.0
    page_size: int = 100
    max_pages: int = 20  # at most 2,000 top-level groups are read

    @classmethod
    def from_settings(cls) -> KeycloakAdmin | None:
        """The configured admin API, or None when KEYCLOAK_URL or the admin client is not set."""
        url, client_id = settings.KEYCLOAK_URL, settings.KEYCLOAK_ADMIN_CLIENT_ID
        client_secret = settings.KEYCLOAK_ADMIN_CLIENT_SECRET
        if not (url and client_id and client_secret):
            return None
        realm = settings.KEYCLOAK_REALM
        return cls(url=url.rstrip("/"), realm=realm, client_id=client_id, client_secret=client_secret)

    def _call(self, method: str, url: str, *, data: bytes | None = None, headers: dict | None = None):
        """(status, parsed JSON body or None); HTTP error statuses are returned, network failures raised."""
        request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (configured URL)
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, b""
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise IdpError(f"Keycloak at {self.url} did not answer: {reason}.") from None
        try:
            return status, (json.loads(raw) if raw else None)
        except ValueError:
            raise IdpError(f"Keycloak at {self.url} answered with a body that is not JSON.") from None

    def _token(self) -> str:
        form = {
            "grant_type": "client_credentials",
            "client_id": self.client_id,
            "client_secret": self.client_secret,
        }
        realm = urllib.parse.quote(self.realm, safe="")
        status, body = self._call(
            "POST",
            f"{self.url}/realms/{realm}/protocol/openid-connect/token",
            data=urllib.parse.urlencode(form).encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
        )
        token = body.get("access_token") if status == 200 and isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise IdpError(f"Keycloak refused the admin client's credentials (HTTP {status}).")
        return token

    def _admin(self, method: str, path: str, *, token: str, query: dict | None = None, payload=None):
        realm = urllib.parse.quote(self.realm, safe="")
        url = f"{self.url}/admin/realms/{realm}/{path}"
        if query:
            url = f"{url}?{urllib.parse.urlencode(query)}"
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        data = None
        if payload is not None:
            data = json.dumps(payload).encode()
            headers["Content-Type"] = "application/json"
        return self._call(method, url, data=data, headers=headers)

    def group_names(self) -> set[str]:
        """Names of the realm's top-level groups, and paths (`/parent/child`) of the subgroups listed."""
        token = self._token()
        names: set[str] = set()
        for page in range(self.max_pages):
            query = {"first": page * self.page_size, "max": self.page_size, "briefRepresentation": "true"}
            status, body = self._admin("GET", "groups", token=token, query=query)
            if status != 200 or not isinstance(body, list):
                raise IdpError(f"Keycloak's groups endpoint answered HTTP {status}.")
            names.update(_keycloak_names(body, top_level=True))
            if len(body) < self.page_size:
                break
        return names

    def group_create(self, name: str) -> bool:
        """Create a top-level group; False when Keycloak already has it."""
        status, _ = self._admin("POST", "groups", token=self._token(), payload={"name": name})
        if status == 409:
            return False
        if status not in (200, 201, 204):
            raise IdpError(f"Keycloak refused to create group '{name}' (HTTP {status}).")
        return True

    def group_delete(self, name: str) -> bool:
        """Delete the top-level group called `name`; False when Keycloak has no such group."""
        token = self._token()
        query = {"search": name, "exact": "true", "briefRepresentation": "true"}
        status, body = self._admin("GET", "groups", token=token, query=query)
        if status != 200 or not isinstance(body, list):
            raise IdpError(f"Keycloak's groups endpoint answered HTTP {status}.")
        found = next((g for g in body if isinstance(g, dict) and g.get("name") == name and g.get("id")), None)
        if found is None:
            return False
        group_id = urllib.parse.quote(str(found["id"]), safe="")
        status, _ = self._admin("DELETE", f"groups/{group_id}", token=token)
        if status == 404:
            return False
        if status not in (200, 204):
            raise IdpError(f"Keycloak refused to delete group '{name}' (HTTP {status}).")
        return True


def _keycloak_names(groups: list, *, top_level: bool) -> set[str]:
    names: set[str] = set()
    for group in groups:
        if not isinstance(group, dict):
            continue
        name = group.get("name") if top_level else group.get("path")
        if isinstance(name, str) and name:
            names.add(name)
        if isinstance(group.get("subGroups"), list):
            names.update(_keycloak_names(group["subGroups"], top_level=False))
    return names
