"""How pytest-xdist shares the suite among its workers (`make test` runs two, `--dist loadgroup`): whole
files, so a file's module fixtures (a started stack, Chromium, a second registry) start once per file; and
the tests marked `xdist_group("<name>")` together on one worker whatever their file, handed out first,
since a group holds the slowest tests (the multi-host lab: one deployment of network namespaces that its
files share)."""

from xdist.scheduler import LoadScopeScheduling

GROUP = "group:"


class FileOrGroupScheduling(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind("@") > nodeid.rfind("]"):  # loadgroup's suffix, not an "@" in a parameter
            return GROUP + nodeid.rsplit("@", 1)[-1]
        return nodeid.split("::", 1)[0]

    def _assign_work_unit(self, node) -> None:
        group = next((scope for scope in self.workqueue if scope.startswith(GROUP)), None)
        if group is not None:
            self.workqueue.move_to_end(group, last=False)
        super()._assign_work_unit(node)
