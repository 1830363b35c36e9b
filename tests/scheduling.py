"""How pytest-xdist shares the suite among its workers (`make test` runs them with `--dist loadscope`, and
this scheduler decides): whole files, so a file's module fixtures (a started stack, Chromium, a second
registry) start once per file; and every file of a folder in SHARED_FOLDERS together on one worker, handed
out first, since such a folder shares one session fixture among its files and holds the slowest tests
(tests/multihost: one deployment of network namespaces)."""

from xdist.scheduler import LoadScopeScheduling

SHARED_FOLDERS = ("tests/multihost/",)


class FileOrFolderScheduling(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return next((folder for folder in SHARED_FOLDERS if path.startswith(folder)), path)

    def _assign_work_unit(self, node) -> None:
        shared = next((scope for scope in self.workqueue if scope in SHARED_FOLDERS), None)
        if shared is not None:
            self.workqueue.move_to_end(shared, last=False)
        super()._assign_work_unit(node)
