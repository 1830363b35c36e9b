"""Documentation that must match the code."""

import re

from core.errors import ErrorCode
from tests.conftest import PROJECT_DIR


def test_the_error_catalogue_lists_exactly_the_codes_in_the_code():
    text = (PROJECT_DIR / "docs" / "errors.md").read_text()

    documented = re.findall(r"^\| `([A-Za-z_]+)` \|", text, flags=re.MULTILINE)

    assert sorted(documented) == sorted(code.value for code in ErrorCode)
    assert len(documented) == len(set(documented))


def test_every_environment_variable_read_by_the_settings_is_in_the_readme_and_env_example():
    settings_dir = PROJECT_DIR / "registry_site" / "settings"
    source = "\n".join(path.read_text() for path in settings_dir.glob("*.py"))
    read = set(re.findall(r'env(?:\.\w+|_required)\(\s*"([A-Z_]+)"', source))
    readme = (PROJECT_DIR / "README.md").read_text()
    example = (PROJECT_DIR / ".env.example").read_text()

    assert read, "no environment variables found; the pattern is out of date"
    assert sorted(name for name in read if f"`{name}`" not in readme) == []
    assert sorted(name for name in read if not re.search(rf"^#?\s*{name}=", example, re.MULTILINE)) == []


def test_the_health_states_table_says_what_the_dashboard_legend_says():
    from servers.choices import HEALTH_MEANINGS

    text = (PROJECT_DIR / "docs" / "api.md").read_text()

    documented = re.findall(r"^\| `([a-z-]+)` \| ([^|]+) \| (.+) \|$", text, flags=re.MULTILINE)

    assert documented == [(state.value, state.label, meaning) for state, meaning in HEALTH_MEANINGS.items()]
