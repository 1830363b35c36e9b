"""One multi-host deployment of the registry (tests/multihost/system.py) shared by the tests of this
folder: building it takes about half a minute, and the tests leave it whole (a host they kill they
start again)."""

import tempfile
from pathlib import Path

import pytest

from tests.multihost.system import System


@pytest.fixture(scope="session")
def system():
    directory = Path(tempfile.mkdtemp(prefix="registry-lab-"))
    deployed = System(directory)
    try:
        deployed.start()
        yield deployed
    finally:
        deployed.stop()
