"""The one rule for a page's destructive form (revoking a token, withdrawing a consent, disconnecting a
credential): the form first asks, on a page of its own that works without JavaScript, and acts only when
posted again with `confirm=yes`. A client that does not read pages (its Accept has no text/html; a
browser's form post has it) gets an error instead, never a 2xx it could read as done."""

from django.shortcuts import render

from core.errors import ErrorCode, error_response


def confirmed(request) -> bool:
    return request.POST.get("confirm") == "yes"


def confirmation_page(
    request, *, heading: str, consequence: str, button: str, back: str, for_scripts: str = "", done="changed"
):
    """The question the form asks first: the same form again (to `request.path`), confirmed; `back` is where
    "keep it" leads."""
    if "text/html" not in request.headers.get("Accept", ""):
        detail = f"Nothing was {done}: this form asks first (confirm=yes). {for_scripts}".strip()
        return error_response(request, detail, ErrorCode.CONFIRMATION_REQUIRED, 400)
    context = {
        "heading": heading,
        "consequence": consequence,
        "button": button,
        "action": request.path,
        "back": back,
    }
    return render(request, "confirm.html", context)
