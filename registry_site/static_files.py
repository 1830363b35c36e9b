"""Static files for both kinds of middleware chain.

ServeStatic's Django middleware is async only. In a synchronous chain (Django's WSGI handler, which the
web processes run in threads: registry_site/wsgi_bridge.py) Django then wraps everything from it inward in
`async_to_sync`, a new event loop and a thread hop on every request, static or not; that was a fifth of a
`/v0.1` page's time. This subclass keeps ServeStatic's configuration (finders, manifest, STATIC_ROOT) and
serves from a synchronous chain synchronously.

The table of files the finders give is built once per process for a configuration: every handler
(Django's WSGI and ASGI handlers, each test client) would otherwise walk and stat every static file again,
0.1 s each time."""

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import FileResponse
from servestatic.middleware import ServeStaticMiddleware

# (files, directories) that `add_files_from_finders` added, by the settings that decide them.
_FOUND: dict[tuple, tuple[dict, list]] = {}


async def _unused(request):  # pragma: no cover - ServeStatic's constructor asks for an async callable
    raise AssertionError("not called")


class StaticFilesMiddleware(ServeStaticMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response, **kwargs):
        self.is_async = iscoroutinefunction(get_response)
        super().__init__(get_response if self.is_async else _unused, **kwargs)
        if not self.is_async:
            for marker in ("_is_coroutine", "_is_coroutine_marker"):  # set by markcoroutinefunction
                self.__dict__.pop(marker, None)
            self.get_response = get_response

    def add_files_from_finders(self):
        key = _configuration()
        if key not in _FOUND:
            files, directories = dict(self.files), list(self.directories)
            super().add_files_from_finders()
            _FOUND[key] = (
                {url: found for url, found in self.files.items() if url not in files},
                [directory for directory in self.directories if directory not in directories],
            )
        files, directories = _FOUND[key]
        self.files.update(files)
        for root, prefix in reversed(directories):
            self.insert_directory(root, prefix)

    def __call__(self, request):
        if self.is_async:
            return super().__call__(request)
        path = request.path_info
        static_file = self.find_file(path) if self.autorefresh else self.files.get(path)
        if static_file is None:
            return self.get_response(request)
        found = static_file.get_response(request.method or "GET", request.META)
        response = _FileResponse(found.file or (), status=int(found.status))
        del response["content-type"]
        for key, value in found.headers:
            if value is not None:
                response[key] = value
        return response


class _FileResponse(FileResponse):
    """ServeStatic computed the headers."""

    def set_headers(self, *args, **kwargs):
        pass


def _configuration() -> tuple:
    """What the finders' table depends on: the static files' and ServeStatic's settings, the apps."""
    names = sorted(name for name in dir(settings) if name.startswith(("STATIC", "SERVESTATIC_")))
    return (
        settings.DEBUG,
        tuple(settings.INSTALLED_APPS),
        *((name, repr(getattr(settings, name))) for name in names),
    )
