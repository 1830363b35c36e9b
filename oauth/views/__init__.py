"""Pages and endpoints of the oauth app: the authorization server's (`authorization.py`) and the page
where a user takes credentials for an MCP host, a token or an authorized application (`tokens.py`)."""

from oauth.resources import our_origins
from oauth.views.authorization import (
    ConsentView,
    RegistrationManagementView,
    RegistrationView,
    ResourceMetadataView,
    ServerMetadataView,
    consent_withdraw_form,
)
from oauth.views.tokens import token_revoke_form, tokens

__all__ = [
    "ConsentView",
    "RegistrationManagementView",
    "RegistrationView",
    "ResourceMetadataView",
    "ServerMetadataView",
    "consent_withdraw_form",
    "our_origins",
    "token_revoke_form",
    "tokens",
]
