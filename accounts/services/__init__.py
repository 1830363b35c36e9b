"""Writes for accounts, one module per sub-domain; everything is re-exported here."""

from accounts.services.admin import AdminEnsureResult, admin_ensure
from accounts.services.audit import SYSTEM_ACTOR, actor_user, audit_event_record
from accounts.services.credentials import (
    NewCredential,
    client_credential_create,
    client_credential_revoke,
    service_account_create,
)
from accounts.services.groups import (
    GroupRefused,
    group_create,
    group_delete,
    groups_named,
    groups_server_grant,
    groups_server_revoke,
    server_grants_forget,
    user_sync_idp_groups,
)
from accounts.services.login import LoginRefused, login_attempt
from accounts.services.provider_sign_ins import provider_sign_in_keep
from accounts.services.scopes import (
    SCOPE_EDITABLE_FIELDS,
    ScopesFileError,
    scope_create,
    scope_delete,
    scope_groups_set,
    scope_update,
    scopes_import,
)
from accounts.services.tokens import (
    TokenGrant,
    TokenRequestError,
    client_credentials_exchange,
    registry_service_token,
    token_revoke,
    tokens_purge_expired,
    user_token_issue,
)
from accounts.services.users import (
    group_permissions_set,
    idp_mapping_delete,
    idp_mapping_save,
    user_delete,
    user_memberships_set,
    user_save,
)

__all__ = [
    "provider_sign_in_keep",
    "user_save",
    "user_memberships_set",
    "user_delete",
    "scope_groups_set",
    "idp_mapping_save",
    "idp_mapping_delete",
    "group_permissions_set",
    "SCOPE_EDITABLE_FIELDS",
    "SYSTEM_ACTOR",
    "AdminEnsureResult",
    "GroupRefused",
    "LoginRefused",
    "NewCredential",
    "ScopesFileError",
    "TokenGrant",
    "TokenRequestError",
    "actor_user",
    "admin_ensure",
    "audit_event_record",
    "client_credential_create",
    "client_credential_revoke",
    "client_credentials_exchange",
    "group_create",
    "group_delete",
    "groups_named",
    "groups_server_grant",
    "groups_server_revoke",
    "login_attempt",
    "registry_service_token",
    "scope_create",
    "scope_delete",
    "scope_update",
    "scopes_import",
    "server_grants_forget",
    "service_account_create",
    "token_revoke",
    "tokens_purge_expired",
    "user_sync_idp_groups",
    "user_token_issue",
]
