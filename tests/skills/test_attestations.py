"""Signed attestations of a skill's scan: every published version carries the registry's JWS (ES256)
over its digests, verdict, time, scanner and policy, found by content digest at /api/attestations/<sha256>
and verified here with the published JWK Set by jwcrypto (a JOSE library the project's code does not use)."""

import hashlib
import json

import pytest
from jwcrypto import jwk, jws

from tests.skills.test_publishing import FILES, publish, tar_gz

pytestmark = pytest.mark.django_db


def verified(token: str, keys: dict) -> dict:
    keyset = jwk.JWKSet.from_json(json.dumps(keys))
    signed = jws.JWS()
    signed.deserialize(token)
    kid = signed.jose_header["kid"]
    signed.verify(keyset.get_key(kid), alg="ES256")
    return json.loads(signed.payload)


def test_a_versions_attestation_is_found_by_digest_and_verifies_with_the_published_keys(client, member):
    client.force_login(member("ada", "nobody"))
    shown = publish(client, tar_gz(FILES)).json()
    client.logout()  # anyone who holds a digest may check it

    keys = client.get("/api/attestations/keys").json()
    by_set = client.get(f"/api/attestations/{shown['digest']}").json()
    missing = client.get(f"/api/attestations/{'0' * 64}")  # no content the registry attested
    claims = verified(by_set["attestation"], keys)

    assert claims == by_set["claims"]
    assert claims["sub"] == f"sha256:{shown['digest']}"
    assert claims["digests"]["files"] == {
        path: f"sha256:{hashlib.sha256(data).hexdigest()}" for path, data in FILES.items()
    }
    assert claims["verdict"] == "clean"
    assert claims["scanner"].startswith("cisco-ai-mcp-scanner/yara")
    assert claims["policy"]["high_holds"] is True
    by_archive = client.get(f"/api/attestations/{claims['digests']['archive']}").json()
    assert by_archive["attestation"] == by_set["attestation"]
    assert shown["_meta"]["io.mcpgateway/attestation"]["attestation"] == by_set["attestation"]
    assert missing.status_code == 404
    assert [key["alg"] for key in keys["keys"]] == ["ES256"]


def test_a_tampered_attestation_does_not_verify(client, member):
    client.force_login(member("ada", "nobody"))
    shown = publish(client, tar_gz(FILES)).json()
    token = client.get(f"/api/attestations/{shown['digest']}").json()["attestation"]
    head, payload, signature = token.split(".")
    forged = ".".join((head, payload[:-4] + ("AAAA" if payload[-4:] != "AAAA" else "BBBB"), signature))

    with pytest.raises(jws.InvalidJWSSignature):
        verified(forged, client.get("/api/attestations/keys").json())
