"""What a test that passes pytest-timeout's limit leaves behind: its name and every thread's stack on the
run's own stderr. pytest-timeout's thread method writes them with pytest's terminal writer, which in a
pytest-xdist worker is the worker's stdout, and execnet points that at /dev/null: the worker died with nothing
said. The same timer here writes to stderr, which a worker shares with the run, then ends the worker as
pytest-timeout does (the scheduler reports the test failed and the run goes on without it)."""

import faulthandler
import os
import sys
import threading


def start_timer(item, settings) -> bool | None:
    if settings.method != "thread":
        return None

    def expire() -> None:
        try:
            capture = item.config.pluginmanager.getplugin("capturemanager")
            if capture is not None:
                capture.suspend_global_capture(item)
                out, err = capture.read_global_capture()
            else:
                out, err = "", ""
            sys.stderr.write(
                f"\n{'+' * 20} Timeout: {item.nodeid} ran past {settings.timeout:g} s {'+' * 20}\n"
                f"{'~' * 10} captured stdout\n{out[-20000:]}\n{'~' * 10} captured stderr\n{err[-20000:]}\n"
                f"{'~' * 10} every thread's stack\n"
            )
            sys.stderr.flush()
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            sys.stderr.write(f"{'+' * 20} end of timeout of {item.nodeid} {'+' * 20}\n")
            sys.stderr.flush()
        finally:
            os._exit(1)

    timer = threading.Timer(settings.timeout, expire)
    timer.name = f"timeout {item.nodeid}"
    timer.daemon = True

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel
    timer.start()
    return True
