"""How pytest-xdist shares the suite among its workers (`make test` runs them with `--dist loadscope`, and
this scheduler decides): whole files, so a file's module fixtures (a started stack, Chromium, a second
registry) start once per file; every file of a folder in SHARED_FOLDERS together on one worker, since
such a folder shares one session fixture among its files (tests/multihost: one deployment of network
namespaces).

The longest units are handed out first (SLOWEST_FIRST, the order of their measured durations in
`make test`'s report), so no worker starts a long file when the others are nearly done; the rest follow
by their number of tests, as xdist orders them. The list only orders work: a file missing from it, or
listed and gone, changes no result."""

from xdist.scheduler import LoadScopeScheduling

SHARED_FOLDERS = ("tests/multihost/",)
SLOWEST_FIRST = (
    "tests/multihost/",
    "tests/test_fuzz_api.py",
    "tests/runtime/test_serve.py",
    "tests/test_embeddings.py",
    "tests/browser/test_console_widths.py",
    "tests/conformance/test_conformance.py",
    "tests/catalog/test_mirroring.py",
    "tests/servers/test_internal_api.py",
    "tests/browser/test_console.py",
    "tests/servers/test_dashboard_api.py",
)


class FileOrFolderScheduling(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return next((folder for folder in SHARED_FOLDERS if path.startswith(folder)), path)

    def _assign_work_unit(self, node) -> None:
        slowest = next((scope for scope in SLOWEST_FIRST if scope in self.workqueue), None)
        if slowest is not None:
            self.workqueue.move_to_end(slowest, last=False)
        super()._assign_work_unit(node)
