"""The Content-Security-Policy of a page whose form's answer redirects to another origin: browsers apply
`form-action` to the redirect that follows a form's POST, so such a page names that origin beside 'self'
(the consent page of the authorization server, the sign-in page of an upstream server)."""

from urllib.parse import urlsplit

from django.conf import settings


def policy_sending_forms_to(url: str) -> str:
    """CONTENT_SECURITY_POLICY with `form-action` letting a form's answer redirect to `url`'s origin."""
    parts = urlsplit(url)
    target = f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"
    directives = [d.strip() for d in settings.CONTENT_SECURITY_POLICY.split(";") if d.strip()]
    kept = [d for d in directives if not d.startswith("form-action")]
    return "; ".join([*kept, f"form-action 'self' {target}"])
