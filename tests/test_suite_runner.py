"""The suite's own runner: a test that passes its time limit fails by name, with every thread's stack, and the
run goes on to its end (tests/scheduling.py, tests/timeouts.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent

CONFTEST = f"""
import sys

import pytest

sys.path.insert(0, {str(REPOSITORY)!r})


def pytest_xdist_make_scheduler(config, log):
    from tests.scheduling import FileOrFolderScheduling

    return FileOrFolderScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    from tests.timeouts import start_timer

    return start_timer(item, settings)
"""


def run_pytest(directory: Path, *options: str) -> subprocess.CompletedProcess:
    """pytest run in `directory` by xdist with `options`, as a separate run of its own. It loads xdist and the
    plugins `options` name, none of the suite's others (schemathesis, hypothesis, playwright: seconds of
    imports in each of the run's processes)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("PYTEST_", "DJANGO_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xdist.plugin", "-p", "no:cacheprovider"]
        + ["--dist", "loadscope", "-q", *options],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


QUICK = "import time\n\n\ndef test_a():\n    time.sleep(0.2)\n\n\ndef test_b():\n    time.sleep(0.2)\n"

STUCK = """import threading


def test_before():
    pass


def test_stuck():
    threading.Event().wait()


def test_after():
    pass
"""


def test_a_stuck_test_fails_by_name_with_its_stack_and_the_run_goes_on_to_its_end(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_stuck.py").write_text(STUCK)
    for number in range(8):
        (tmp_path / f"test_quick_{number}.py").write_text(QUICK)
    finished = run_pytest(
        tmp_path, "-p", "pytest_timeout", "-n", "2", "-o", "timeout=3", "-o", "timeout_method=thread"
    )

    output = finished.stdout + finished.stderr
    assert finished.returncode == 1, output
    assert "1 failed, 18 passed" in finished.stdout, output
    assert "FAILED test_stuck.py::test_stuck - worker 'gw" in finished.stdout, output
    assert "Timeout: test_stuck.py::test_stuck ran past 3 s" in finished.stderr, output
    assert 'test_stuck.py", line 9 in test_stuck' in finished.stderr, output


def test_every_file_the_scheduler_splits_or_groups_is_in_the_suite():
    from tests.scheduling import BY_TEST, SHARED_FOLDERS

    missing = [path for path in (*BY_TEST, *SHARED_FOLDERS) if not (REPOSITORY / path).exists()]

    assert missing == []


ORDERED_CONFTEST = f"""
import sys
from pathlib import Path

sys.path.insert(0, {str(REPOSITORY)!r})

from tests.scheduling import DurationRecorder, FileOrFolderScheduling, recorded_durations


def pytest_xdist_make_scheduler(config, log):
    scheduler = FileOrFolderScheduling(config, log)
    scheduler.durations = recorded_durations(Path("durations.json"))
    return scheduler


def pytest_configure(config):
    if getattr(config, "workerinput", None) is None:
        config.pluginmanager.register(DurationRecorder(Path("recorded.json")))
"""


def recording(*names: str, sleep: float = 0) -> str:
    """A test file whose tests write their names to ran.txt as they run."""
    tests = "".join(
        f"\n\ndef test_{name}():\n    time.sleep({sleep})\n    with open('ran.txt', 'a') as ran:\n"
        f"        ran.write('{name}\\n')\n"
        for name in names
    )
    return "import time\n" + tests


def test_units_go_out_longest_first_by_the_recorded_seconds_and_a_run_records_them(tmp_path):
    """One worker runs the units in the order they are handed out: the files with the most tests first
    without the record, the longest recorded first with it (a test it does not name counts for 0.1 s)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(ORDERED_CONFTEST)
    (tmp_path / "test_many.py").write_text(recording("many_1", "many_2"))
    (tmp_path / "test_long.py").write_text(recording("long", sleep=0.5))
    (tmp_path / "test_mid.py").write_text(recording("mid"))
    (tmp_path / "durations.json").write_text('{"test_long.py::test_long": 40, "test_mid.py::test_mid": 9.5}')
    finished = run_pytest(tmp_path, "-n", "1")

    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (tmp_path / "ran.txt").read_text().split() == ["long", "mid", "many_1", "many_2"]
    recorded = json.loads((tmp_path / "recorded.json").read_text())
    assert list(recorded) == ["test_long.py::test_long"]
    assert 0.5 <= recorded["test_long.py::test_long"] < 30
