"""One Chromium per test process for the flows that drive a browser from async code (the user answering a
consent page, signing in upstream): a launch costs about 2 s of a core, Playwright's driver and the
browser together, and those flows launched one for each page they went through.

The browser lives on an event loop of its own, in a thread, so a flow run from any test's event loop can
use it (an async Playwright object belongs to the loop it was made on). Each use gets a context of its own:
cookies and storage start empty, as in a browser launched for it."""

from __future__ import annotations

import asyncio
import atexit
import threading

from playwright.async_api import BrowserContext, async_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_FLAGS, installed

LAUNCH_SECONDS = 60


class _Chromium:
    def __init__(self):
        self.executable = installed(CHROMIUM, "chromium")
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="chromium", daemon=True).start()
        self.playwright = self.browser = None
        self.browser = self.run(self._launch()).result(LAUNCH_SECONDS)
        atexit.register(self.close)

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    async def _launch(self):
        self.playwright = await async_playwright().start()
        return await self.playwright.chromium.launch(executable_path=self.executable, args=CHROMIUM_FLAGS)

    def close(self) -> None:
        async def stop():
            await self.browser.close()
            await self.playwright.stop()

        try:
            self.run(stop()).result(10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)


_shared: _Chromium | None = None
_starting = threading.Lock()


def _chromium() -> _Chromium:
    global _shared
    with _starting:
        if _shared is None or not _shared.browser.is_connected():
            _shared = _Chromium()
        return _shared


async def in_context(work, **options):
    """`await work(context)` in a new context of this process's Chromium (`options` as `new_context`
    takes them), from any event loop; the context is closed after."""
    chromium = await asyncio.to_thread(_chromium)

    async def run():
        context: BrowserContext = await chromium.browser.new_context(**options)
        try:
            return await work(context)
        finally:
            await context.close()

    return await asyncio.wrap_future(chromium.run(run()))
