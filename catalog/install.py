"""How to use a catalog entry, from its server.json: for each package the command its registry type runs
with (npm → npx, pypi → uvx, oci → docker, nuget → dnx, cargo → cargo install, mcpb → a download), the
environment variables it asks for, and an `mcpServers` configuration an MCP host reads; for each remote,
its URL and transport. Plain functions over the document; the catalog page shows what they return.

Publisher text never becomes shell syntax: every word of a command is quoted for the POSIX shell it is
shown for (`shlex.quote`), and a URL is shown only when it is http(s). Publishing and mirroring refuse
control characters in these values already (catalog/documents.py); the quoting holds for rows stored
before that rule."""

import json
import shlex
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Variable:
    name: str
    description: str = ""
    required: bool = False
    secret: bool = False


@dataclass(frozen=True)
class Way:
    """One way to run the server: a package with its command, or a remote with its URL."""

    kind: str  # "package" or "remote"
    label: str  # "npm", "pypi", …, or the remote's transport
    command: str = ""  # the shell command (packages)
    url: str = ""  # the endpoint (remotes)
    note: str = ""
    variables: list[Variable] = field(default_factory=list)
    config: str = ""  # an `mcpServers` entry as JSON text


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def shell_command(words: list[str]) -> str:
    """`words` as one POSIX shell command line, each quoted where it needs to be."""
    return " ".join(shlex.quote(word) for word in words if word != "")


def web_url(value) -> str:
    """`value` when it is an http(s) URL, else "": what a page may show or link to."""
    text = _text(value).strip()
    return text if text.lower().startswith(("https://", "http://")) else ""


def _launcher(package: dict) -> tuple[str, list[str]] | None:
    """(command, arguments) that run `package`, or None for types run another way."""
    kind, identifier, version = (_text(package.get(key)) for key in ("registryType", "identifier", "version"))
    if kind == "npm":
        return "npx", ["-y", f"{identifier}@{version}" if version else identifier]
    if kind == "pypi":
        return "uvx", [f"{identifier}=={version}" if version else identifier]
    if kind == "oci":
        image = (
            identifier if (":" in identifier.rsplit("/", 1)[-1] or not version) else f"{identifier}:{version}"
        )
        return "docker", ["run", "-i", "--rm", image]
    if kind == "nuget":
        return "dnx", [f"{identifier}@{version}" if version else identifier, "--yes"]
    return None


def _variables(package: dict) -> list[Variable]:
    variables = []
    for variable in package.get("environmentVariables") or []:
        if isinstance(variable, dict) and _text(variable.get("name")):
            variables.append(
                Variable(
                    name=variable["name"],
                    description=_text(variable.get("description")),
                    required=bool(variable.get("isRequired")),
                    secret=bool(variable.get("isSecret")),
                )
            )
    return variables


def _short_name(name: str) -> str:
    return name.rsplit("/", 1)[-1] or name


def _package_way(name: str, package: dict) -> Way:
    kind, identifier, version = (_text(package.get(key)) for key in ("registryType", "identifier", "version"))
    variables = _variables(package)
    launcher = _launcher(package)
    if launcher is None:
        if kind == "cargo":
            words = ["cargo", "install", identifier, *(["--version", version] if version else [])]
            return Way("package", kind, command=shell_command(words), variables=variables)
        if kind == "mcpb":
            digest = _text(package.get("fileSha256"))
            note = "Download the bundle and open it with an MCP host that installs .mcpb bundles"
            note += f" (SHA-256 {digest})." if digest else "."
            return Way("package", kind, url=web_url(identifier), note=note, variables=variables)
        return Way(
            "package", kind or "package", command=shell_command([identifier, version]), variables=variables
        )
    command, arguments = launcher
    entry: dict = {"command": command, "args": arguments}
    if variables:
        entry["env"] = {variable.name: f"<{variable.name}>" for variable in variables}
    config = json.dumps({"mcpServers": {_short_name(name): entry}}, indent=2)
    return Way(
        "package", kind, command=shell_command([command, *arguments]), variables=variables, config=config
    )


def _remote_way(name: str, remote: dict) -> Way:
    transport, url = _text(remote.get("type")), web_url(remote.get("url"))
    headers = [h for h in remote.get("headers") or [] if isinstance(h, dict) and _text(h.get("name"))]
    variables = [
        Variable(
            _text(h["name"]), _text(h.get("description")), bool(h.get("isRequired")), bool(h.get("isSecret"))
        )
        for h in headers
    ]
    entry: dict = {"type": "http" if transport == "streamable-http" else transport, "url": url}
    if variables:
        entry["headers"] = {variable.name: f"<{variable.name}>" for variable in variables}
    config = json.dumps({"mcpServers": {_short_name(name): entry}}, indent=2)
    return Way("remote", transport, url=url, variables=variables, config=config)


def ways_to_use(document: dict) -> list[Way]:
    """Every package and remote of `document`, as the catalog page shows them."""
    name = _text(document.get("name"))
    ways = [_package_way(name, p) for p in document.get("packages") or [] if isinstance(p, dict)]
    ways += [_remote_way(name, r) for r in document.get("remotes") or [] if isinstance(r, dict)]
    return ways
