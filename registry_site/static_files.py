"""Static files for both kinds of middleware chain.

ServeStatic's Django middleware is async only. In a synchronous chain (Django's WSGI handler, which the
web processes run in threads: registry_site/wsgi_bridge.py) Django then wraps everything from it inward in
`async_to_sync`, a new event loop and a thread hop on every request, static or not; that was a fifth of a
`/v0.1` page's time. This subclass keeps ServeStatic's configuration (finders, manifest, STATIC_ROOT) and
serves from a synchronous chain synchronously."""

from asgiref.sync import iscoroutinefunction
from django.http import FileResponse
from servestatic.middleware import ServeStaticMiddleware


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
