"""The catalog page: the servers published or mirrored here (their latest versions), searchable, each
with how to install it (catalog/install.py) or where to reach it. A plain page; no JavaScript needed."""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.views import session_page
from catalog.install import ways_to_use, web_url
from catalog.selectors import catalog_page

QUERY_MAX_LENGTH = 200


@require_GET
@session_page
def catalog_view(request, principal):
    """GET /catalog[?q=…][&after=<name>]: 50 entries a page, by name."""
    query = request.GET.get("q", "").strip()[:QUERY_MAX_LENGTH]
    after = request.GET.get("after", "").strip()[:200] or None
    rows, more = catalog_page(query, after=after)
    entries = [
        {"row": row, "ways": ways_to_use(row.document), "website": web_url(row.document.get("websiteUrl"))}
        for row in rows
    ]
    context = {"entries": entries, "query": query, "next_after": rows[-1].name if more else None}
    return render(request, "catalog/catalog.html", context)
