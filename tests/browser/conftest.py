"""Pages in a real browser: Debian's Chromium (installed by `make test`) driven by Playwright, against the
registry's ASGI application (pages, APIs and websockets) on a loopback port. Screenshots of the pages go
to var/test/screenshots/."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.conftest import PROJECT_DIR
from tests.mcp_servers import UvicornThread, loopback_socket

CHROMIUM = Path("/usr/bin/chromium")
# The pages run in Debian's chromium-headless-shell: Chromium's headless build without the browser around it
# (the build Playwright itself runs headless). This folder took 78 s of CPU in it, 112 s in `chromium`. The
# flows of tests/chromium.py keep `chromium`: the shell does not hand a page's route the redirect that sends
# the user back to an application on another origin, which is how those flows catch it.
HEADLESS_SHELL = Path("/usr/lib/chromium/chromium-headless-shell")
# No GPU process compositing or rasterizing in software (SwiftShader): the console widths' 37 tests took
# 78 s of CPU with it, 72 s without.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-software-rasterizer",
    "--disable-gpu-compositing",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = PROJECT_DIR / "var" / "test" / "screenshots"
PASSWORD = "correct horse battery staple"
# How long a page's wait may take. The folder is handed out first in `make test`, beside the multi-host lab
# starting and the other workers collecting: Swagger UI's 1.5 MB of script once took over 10 s to render.
WAIT_MS = 30_000


def installed(binary: Path, package: str) -> str:
    """`binary`'s path; if it is missing, the test fails naming the Debian package `make test` installs."""
    if not binary.exists():
        pytest.fail(
            f"{binary} is not installed. `make test` installs Debian's {package} when it runs as root "
            f"(apt-get install {package}); install it and run the tests again."
        )
    return str(binary)


@pytest.fixture(scope="package")
def browser():
    """Chromium for the tests of this folder (one launch: 2.2 s of CPU each). Playwright's synchronous API
    keeps an event loop running in this thread while it is open, so it is closed before the worker runs
    other folders' tests (asyncio.run, async_to_sync): the folder is one unit of the run (tests/scheduling.py
    SHARED_FOLDERS)."""
    executable = installed(HEADLESS_SHELL, "chromium-headless-shell")
    # Playwright's synchronous API runs an event loop in this thread; the test's own ORM calls are
    # synchronous and safe, so Django's guard against async contexts is lifted for browser tests.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS, headless=True)
        yield launched
        launched.close()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def site():
    """The registry (pages, APIs, websockets) on a loopback port."""
    from registry_site.asgi import application

    running = UvicornThread(application, loopback_socket()).start()
    yield running
    running.stop()


@pytest.fixture
def page(browser, site):
    context = browser.new_context(base_url=site.url(""))
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    yield opened
    context.close()


@pytest.fixture
def screenshot(request):
    """Save a screenshot of `page` as var/test/screenshots/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(page, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save


@pytest.fixture
def operator_user(member, scope_factory):
    """An operator with a password who sees, registers and manages /weather and /clock."""
    scope_factory(
        "console-ops",
        group="console-ops",
        ui={
            "list_service": ["weather", "clock"],
            "toggle_service": ["weather", "clock"],
            "health_check_service": ["weather", "clock"],
            "modify_service": ["weather", "clock"],
            "register_service": ["weather", "clock"],
        },
    )
    user = member("olga", "console-ops")
    user.set_password(PASSWORD)
    user.save()
    return user


def log_in(page, username: str, path: str = "/login") -> None:
    """Log in through the form and wait for the page it leads to."""
    page.goto(path)
    page.fill("#username", username)
    page.fill("#password", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert "/login" not in page.url, f"{username} could not log in"


WIDTHS = {"desktop": (1440, 900), "phone": (390, 844)}


@pytest.fixture(params=sorted(WIDTHS))
def sized(request, browser, site):
    """A page at each width (phones with touch), and the width's name for screenshots."""
    width, height = WIDTHS[request.param]
    context = browser.new_context(
        base_url=site.url(""),
        viewport={"width": width, "height": height},
        has_touch=request.param == "phone",
        is_mobile=request.param == "phone",
    )
    context.set_default_timeout(WAIT_MS)
    yield context.new_page(), request.param
    context.close()


def overflow(page) -> int:
    """How many CSS pixels the page is wider than the screen (0: no sideways scrolling). Measured against
    the screen's width, not `innerWidth`: a phone zooms out to fit a page too wide for it, and its
    `innerWidth` grows with the page."""
    return page.evaluate("document.documentElement.scrollWidth") - page.viewport_size["width"]


def in_view(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and 0 <= box["y"] < page.viewport_size["height"] and box["x"] >= 0
