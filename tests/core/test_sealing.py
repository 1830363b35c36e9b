"""Secrets sealed at rest with AES-GCM: bound to their context, opened by any configured key, sealed by the
first, so keys rotate; a bad key is refused with a message naming it."""

import io

import pytest
from django.core.exceptions import ImproperlyConfigured

from core import sealing

A, B = sealing.new_key(), sealing.new_key()


def test_a_sealed_value_opens_only_in_its_own_context(settings):
    settings.CREDENTIAL_KEYS = [A]
    sealed = sealing.seal(b"ghp_secret", context="user=1|server=2")

    assert b"ghp_secret" not in sealed.encode()
    assert sealing.unseal(sealed, context="user=1|server=2") == b"ghp_secret"
    with pytest.raises(sealing.Unsealable, match="altered, or sealed for another owner"):
        sealing.unseal(sealed, context="user=3|server=2")


def test_an_altered_value_does_not_open(settings):
    settings.CREDENTIAL_KEYS = [A]
    version, key_id, body = sealing.seal(b"secret", context="c").split(".")
    flipped = body[:-4] + ("AAAA" if body[-4:] != "AAAA" else "BBBB")

    with pytest.raises(sealing.Unsealable):
        sealing.unseal(f"{version}.{key_id}.{flipped}", context="c")
    with pytest.raises(sealing.Unsealable, match="not a sealed value"):
        sealing.unseal("plain text", context="c")


def test_keys_rotate_the_first_seals_and_every_one_opens(settings):
    settings.CREDENTIAL_KEYS = [A]
    old = sealing.seal(b"secret", context="c")
    settings.CREDENTIAL_KEYS = [B, A]
    new = sealing.seal(b"secret", context="c")

    assert sealing.unseal(old, context="c") == sealing.unseal(new, context="c") == b"secret"
    assert (sealing.sealed_with_newest(old), sealing.sealed_with_newest(new)) == (False, True)
    settings.CREDENTIAL_KEYS = [B]
    with pytest.raises(sealing.Unsealable, match="sealed by a key that is not configured"):
        sealing.unseal(old, context="c")
    assert sealing.unseal(new, context="c") == b"secret"


def test_a_key_that_is_not_256_bits_is_refused_by_position(settings):
    settings.CREDENTIAL_KEYS = [A, "c2hvcnQ="]

    with pytest.raises(ImproperlyConfigured, match=r"CREDENTIAL_KEYS: key 2 is 5 bytes; a key is 32 bytes"):
        sealing.seal(b"x", context="c")


def test_without_keys_one_is_derived_from_the_secret_key(settings):
    settings.CREDENTIAL_KEYS = []
    sealed = sealing.seal(b"secret", context="c")
    settings.SECRET_KEY = "another secret key of the same length and more"

    with pytest.raises(sealing.Unsealable):
        sealing.unseal(sealed, context="c")


@pytest.mark.django_db
def test_reseal_carries_users_connections_and_shared_headers_of_every_kind_to_the_new_key(settings):
    from django.core.management import call_command

    from connections.services import credential_secret_connect
    from servers.models import Server
    from tests.factories import AgentFactory, ServerFactory

    settings.CREDENTIAL_KEYS = [A]
    server = ServerFactory(path="/shared", headers={"X-Api-Key": "server-key"})
    agent = AgentFactory(path="/agent", headers={"X-Api-Key": "agent-key"})
    keyed = ServerFactory(path="/keyed", upstream_auth="user_secret", user_secret_header="X-Key: {secret}")
    credential = credential_secret_connect(
        actor=None, target=keyed, user=None, secret="discovery-key", purpose="discovery"
    )
    settings.CREDENTIAL_KEYS = [B, A]

    call_command("reseal_credentials", stdout=io.StringIO())
    settings.CREDENTIAL_KEYS = [B]  # the old key gone

    credential.refresh_from_db()
    assert Server.objects.get(pk=server.pk).headers == {"X-Api-Key": "server-key"}
    assert type(agent).objects.get(pk=agent.pk).headers == {"X-Api-Key": "agent-key"}
    assert all(
        sealing.sealed_with_newest(value)
        for value in (credential.sealed, Server.objects.get(pk=server.pk).sealed_headers)
    )
