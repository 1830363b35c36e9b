"""Waiting for what happens in another thread, process or host: polled against a deadline, never a sleep."""

import time


def wait_for(check, *, timeout: float, interval: float = 0.2, what: str):
    """Poll `check()` until it returns a true value (returned) or `timeout` passes (AssertionError)."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as exc:  # noqa: BLE001 - a peer still starting answers with anything
            last_error = exc
        else:
            if value:
                return value
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last error: {last_error!r})")
