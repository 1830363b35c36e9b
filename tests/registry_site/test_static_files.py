"""Static files from a synchronous middleware chain (the web processes run Django's WSGI handler in
threads) and from an asynchronous one (the metrics service's ASGI handler), with ServeStatic's headers."""

from pathlib import Path

import pytest
from asgiref.sync import iscoroutinefunction
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler

CSS = (Path(__file__).resolve().parents[2] / "static" / "css" / "registry.css").read_bytes()


def test_the_wsgi_chain_is_synchronous_from_end_to_end():
    handler = WSGIHandler()

    assert iscoroutinefunction(handler._middleware_chain) is False


def test_the_asgi_chain_stays_asynchronous():
    handler = ASGIHandler()

    assert iscoroutinefunction(handler._middleware_chain) is True


def test_a_synchronous_chain_serves_a_file_and_revalidates_it(client):
    response = client.get("/static/css/registry.css")
    again = client.get("/static/css/registry.css", headers={"If-None-Match": response["ETag"]})

    assert response.status_code == 200
    assert response["Content-Type"] == 'text/css; charset="utf-8"'
    assert b"".join(response.streaming_content) == CSS
    assert again.status_code == 304
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_synchronous_chain_passes_other_paths_on(client, db):
    assert client.get("/static/css/nothing-here.css").status_code == 404
    assert client.get("/health").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_the_registry_entry_serves_the_same_file(asgi_request):
    response = asgi_request("registry", "GET", "/static/css/registry.css")

    assert response.status_code == 200
    assert response.content == CSS
    assert response.headers["content-type"] == 'text/css; charset="utf-8"'


def test_the_finders_table_is_built_once_per_configuration_and_again_when_it_changes(settings, tmp_path):
    from registry_site.static_files import StaticFilesMiddleware

    first, second = StaticFilesMiddleware(lambda request: None), StaticFilesMiddleware(lambda request: None)
    (tmp_path / "extra.css").write_text("p {}")
    settings.STATICFILES_DIRS = [*settings.STATICFILES_DIRS, tmp_path]
    changed = StaticFilesMiddleware(lambda request: None)

    assert first.files["/static/css/registry.css"] is second.files["/static/css/registry.css"]
    assert first.directories == second.directories
    assert "/static/extra.css" not in first.files
    assert changed.files["/static/extra.css"].alternatives[0][1].endswith("/extra.css")
    assert (str(tmp_path), "/static/") in changed.directories
    assert (str(tmp_path), "/static/") not in first.directories
