import pytest

from tests.servers.spec import SHARED_SPEC_DIR, SPEC_DIR


@pytest.mark.parametrize("name", ["openapi.yaml", "server.schema.json"])
def test_the_spec_copies_match_the_shared_specification(name):
    if not SHARED_SPEC_DIR.exists():
        pytest.skip("the shared specification folder is not beside this checkout")

    assert (SPEC_DIR / name).read_bytes() == (SHARED_SPEC_DIR / name).read_bytes()
