"""The token endpoint taking an identity provider's assertion (the ID-JAG `jwt-bearer` grant,
oauth/grants.py), end to end over HTTP against `manage.py serve` on its embedded PostgreSQL and Redis: a
public client presents a fresh RS256 assertion of a trusted issuer (keys given inline, so no fetch) for a
server's gateway URL, and gets a token. Every check runs (signature, claims, the jti across processes in
Redis, the user, the consent, the token and its audit row).

Reported: p50 and p99 of a grant, of a refused replay (the same assertion again: the jti check, after the
signature), and for scale the authorization server's metadata document.

Run: .venv/bin/python bench/id_jag.py [--grants 300]
"""

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path

import jwt
import requests
from common import Serve, free_port, manage, ms, registry_env
from cryptography.hazmat.primitives.asymmetric import rsa

SEED = """
from oauth2_provider.models import Application
from accounts.models import User
from oauth.models import TrustedIssuer
from servers.models import Server
TrustedIssuer.objects.create(issuer="https://idp.bench.example", jwks={{"keys": [{jwk}]}})
Application.objects.create(name="Bench host", client_id="bench-host", client_type="public",
                           authorization_grant_type="authorization-code", redirect_uris="http://127.0.0.1/cb")
User.objects.create(username="bench-user")
Server.objects.create(path="/bench", name="Bench", proxy_pass_url="http://127.0.0.1:9/mcp", embedding_dirty=False)
"""


def assertion(key, base: str) -> str:
    now = int(time.time())
    claims = {
        "iss": "https://idp.bench.example",
        "sub": "bench-user",
        "aud": base,
        "client_id": "bench-host",
        "resource": f"{base}/bench/mcp",
        "scope": "mcp",
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + 300,
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"typ": "oauth-id-jag+jwt", "kid": "bench"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grants", type=int, default=300)
    arguments = parser.parse_args()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "bench"}
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = registry_env(Path(tmp) / "var", port)
        manage(env, "migrate", "--verbosity", "0")
        manage(env, "shell", "-c", SEED.format(jwk=json.dumps(jwk)))
        with Serve(env, port):
            session = requests.Session()
            signed = [assertion(key, base) for _ in range(arguments.grants + 1)]
            grants, replays, metadata = [], [], []
            form = {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "client_id": "bench-host"}
            first = session.post(f"{base}/oauth/token", data={**form, "assertion": signed[0]}, timeout=30)
            assert first.status_code == 200, first.text
            for one in signed[1:]:
                started = time.perf_counter()
                answer = session.post(f"{base}/oauth/token", data={**form, "assertion": one}, timeout=30)
                grants.append(time.perf_counter() - started)
                assert answer.status_code == 200, answer.text
                started = time.perf_counter()
                again = session.post(f"{base}/oauth/token", data={**form, "assertion": one}, timeout=30)
                replays.append(time.perf_counter() - started)
                assert again.json()["error"] == "invalid_grant", again.text
                started = time.perf_counter()
                session.get(f"{base}/.well-known/oauth-authorization-server", timeout=30)
                metadata.append(time.perf_counter() - started)
    print(f"The ID-JAG grant at /oauth/token, {arguments.grants} grants\n")
    print("| request | p50 ms | p99 ms |")
    print("|---|---|---|")
    print(
        f"| a grant (assertion checked, user found, consent, token, audit) | {ms(grants):.2f} | {ms(grants, 99):.2f} |"
    )
    print(f"| the same assertion again (refused: jti) | {ms(replays):.2f} | {ms(replays, 99):.2f} |")
    print(f"| the metadata document, for scale | {ms(metadata):.2f} | {ms(metadata, 99):.2f} |")


if __name__ == "__main__":
    main()
