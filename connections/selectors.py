"""Reads of upstream credentials: a user's connections page, and the console's list (never a secret).
Every kind of target that holds an upstream credential (core/targets.py `upstreams`: servers and agents) is
listed alike."""

from dataclasses import dataclass

from connections.choices import Purpose
from connections.models import UpstreamCredential, of_target
from connections.sealed import fits
from core.targets import TARGETS


@dataclass(frozen=True)
class ConnectionRow:
    target: object  # a server or an agent
    credential: UpstreamCredential | None
    usable: bool  # connected for the target as it is now (its mode and origin unchanged)

    @property
    def kind(self) -> str:
        return self.target.TARGET_KIND


def connections_of(principal) -> list[ConnectionRow]:
    """Every target `principal` may use that needs their own credential, with their connection if any, by
    path."""
    rows = []
    for kind, upstream in TARGETS.upstreams.items():
        targets = upstream.usable(principal)
        mine = {
            getattr(credential, f"{kind}_id"): credential
            for credential in UpstreamCredential.objects.filter(
                user=principal.user, purpose=Purpose.USER, **{f"{kind}__in": targets}
            )
        }
        rows += [ConnectionRow(t, mine.get(t.pk), _usable(mine.get(t.pk), t)) for t in targets]
    return sorted(rows, key=lambda row: row.target.path)


def connection_of(principal, target) -> UpstreamCredential | None:
    return UpstreamCredential.objects.filter(
        **of_target(target), user=principal.user, purpose=Purpose.USER
    ).first()


def target_usable(principal, path: str):
    """The server or agent at `path` that `principal` may use, or None."""
    return next(
        (found for upstream in TARGETS.upstreams.values() if (found := upstream.visible(principal, path))),
        None,
    )


def _usable(credential, target) -> bool:
    return credential is not None and fits(credential, target)
