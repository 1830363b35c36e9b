"""How pytest-xdist shares the suite among its workers (`make test` runs them with `--dist loadscope`, and
this scheduler decides): whole files, so a file's module fixtures (a started stack, a second registry)
start once per file; every file of a folder in SHARED_FOLDERS together on one worker, since such a folder
shares a fixture among its files (tests/multihost: one deployment of network namespaces; tests/browser:
one Chromium), handed out first since they hold the slowest tests; and each test of a file in BY_TEST apart
(every parametrized case of it too), so that file's minutes spread over the workers.

Units are handed out longest first, by the seconds each test took in a recorded run (tests/durations.json,
written by `pytest --store-durations`; a test not in it counts as UNKNOWN_TEST_SECONDS), so the last units
of the run are short ones every worker shares. Ordered by their number of tests instead, the one-test
units came last, and the longest of them (booting the whole group, fuzzing publish) ran on after the other
workers had finished.

It also keeps a crashed worker from hanging the run. pytest-xdist 3.8's LoadScopeScheduling, when a worker
dies (pytest-timeout ends a worker whose test passes its limit), puts every unit the worker was ever given
back on the queue, finished ones included, and the test it died in with them: the finished units go out as
empty batches that no worker ever reports back on, so the last workers wait for work forever
(pytest-dev/pytest-xdist#1378, #1323), and the test that killed a worker runs again and kills the next.
Here the dead worker's test counts as done (it is already reported failed), only units with tests left go
back, finished units leave a worker's books as they finish, and a worker is never left with one test and no
next one to go on to (#1327). A replacement worker gets work only once its collection is in, and one whose
collection differs from the run's (the files changed on disk meanwhile) is stopped, not left waiting."""

import json
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

# Folders whose files share a fixture wider than a file: tests/multihost one deployment, tests/browser one
# Chromium (package-scoped: closed when the worker goes on to other tests).
SHARED_FOLDERS = ("tests/multihost/", "tests/browser/")
# Files whose tests share no fixture beyond a test's own: each test is a unit of its own, so the file's
# minutes spread over the workers.
BY_TEST = ("tests/test_fuzz_api.py",)
DURATIONS = Path(__file__).with_name("durations.json")
UNKNOWN_TEST_SECONDS = 0.1  # most tests take less; the file keeps those that take more


def recorded_durations(path: Path = DURATIONS) -> dict[str, float]:
    """{node id: seconds} of the recorded run; none when the file is missing or not JSON."""
    try:
        durations = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return durations if isinstance(durations, dict) else {}


class FileOrFolderScheduling(LoadScopeScheduling):
    def __init__(self, config, log=None):
        super().__init__(config, log)
        self.durations = recorded_durations()
        self.costs: dict[str, float] = {}

    def cost(self, scope: str) -> float:
        """The seconds the unit is expected to take."""
        if scope not in self.costs:
            unit = self.workqueue[scope]
            self.costs[scope] = sum(self.durations.get(nodeid, UNKNOWN_TEST_SECONDS) for nodeid in unit)
        return self.costs[scope]

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path in BY_TEST:
            return nodeid
        return next((folder for folder in SHARED_FOLDERS if path.startswith(folder)), path)

    def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        work = self.assigned_work[node]
        scope = self._split_scope(nodeid)
        work[scope][nodeid] = True
        if all(work[scope].values()):
            del work[scope]
        self._reschedule(node)

    def add_node_collection(self, node, collection) -> None:
        super().add_node_collection(node, collection)
        if node not in self.registered_collections:  # refused: not the run's collection
            self.assigned_work.pop(node, None)
            node.shutdown()

    def remove_node(self, node):
        workload = self.assigned_work.pop(node, {})
        pending = [nodeid for unit in workload.values() for nodeid, done in unit.items() if not done]
        if not pending:
            return None
        crashed = pending[0]  # a worker runs its tests in the order they were sent
        workload[self._split_scope(crashed)][crashed] = True
        for scope, unit in workload.items():
            if not all(unit.values()):
                self.workqueue[scope] = unit
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed

    def _reschedule(self, node) -> None:
        if node.shutting_down or node not in self.registered_collections:
            return  # a replacement worker whose collection is not in yet
        # A worker starts a test only once it holds the next one (or is told to stop): top it up to two.
        while self.workqueue and self._pending_of(self.assigned_work[node]) <= 2:
            self._assign_work_unit(node)
            if self._pending_of(self.assigned_work[node]) >= 2:
                break
        if not self.workqueue:
            node.shutdown()

    def _assign_work_unit(self, node) -> None:
        """The shared folders' units first, then the longest left."""
        first = next((scope for scope in self.workqueue if scope in SHARED_FOLDERS), None)
        if first is None:
            first = max(self.workqueue, key=self.cost)
        self.workqueue.move_to_end(first, last=False)
        super()._assign_work_unit(node)


class DurationRecorder:
    """`pytest --store-durations`: adds up each test's setup, call and teardown and writes to `path` those
    that took over UNKNOWN_TEST_SECONDS (registered in the process that reports, the controller of a
    parallel run)."""

    def __init__(self, path: Path = DURATIONS):
        self.path = path
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self, session) -> None:
        kept = {nodeid: round(seconds, 1) for nodeid, seconds in sorted(self.seconds.items())}
        kept = {nodeid: seconds for nodeid, seconds in kept.items() if seconds > UNKNOWN_TEST_SECONDS}
        self.path.write_text(json.dumps(kept, indent=0, ensure_ascii=False) + "\n")
