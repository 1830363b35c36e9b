"""How to use a catalog entry, from its server.json, on the schema's whole model: for each package the
command its registry type runs with (npm → npx, pypi → uvx, oci → docker, nuget → dnx, cargo → cargo
install, mcpb → a download), with its runtime arguments before the package and its package arguments
after it (positional and named, `value`, `default`, `isRequired`, `{variables}`), the environment
variables it asks for (passed into a container with `-e NAME`), and an `mcpServers` configuration an MCP
host reads: a command for a stdio package, the URL for a package that serves streamable HTTP or SSE once
started; for each remote, its URL (its `{variables}` resolved) and headers.

Values missing from the document become placeholders a person fills in, `<name>`: for required inputs
only, so an optional variable never lands in a configuration as a literal placeholder. Plain functions
over the document; the catalog page shows what they return.

Publisher text never becomes shell syntax: every word of a command is quoted for the POSIX shell it is
shown for (`shlex.quote`), and a URL is shown only when it is http(s). Publishing and mirroring refuse
control characters in these values already (catalog/documents.py); the quoting holds for rows stored
before that rule."""

import json
import re
import shlex
from dataclasses import dataclass, field

VARIABLE = re.compile(r"\{([A-Za-z0-9_.-]+)\}")
# The runtimes a package's `runtimeHint` may name, by registry type; any other hint is not trusted.
RUNTIMES = {"npm": ("npx", "bunx"), "pypi": ("uvx",), "oci": ("docker", "podman"), "nuget": ("dnx",)}


@dataclass(frozen=True)
class Variable:
    name: str
    description: str = ""
    required: bool = False
    secret: bool = False
    default: str = ""


@dataclass(frozen=True)
class Way:
    """One way to run the server: a package with its command, or a remote with its URL."""

    kind: str  # "package" or "remote"
    label: str  # "npm", "pypi", …, or the remote's transport
    command: str = ""  # the shell command (packages)
    url: str = ""  # the endpoint (remotes; packages that serve HTTP once started)
    note: str = ""
    variables: list[Variable] = field(default_factory=list)
    config: str = ""  # an `mcpServers` entry as JSON text
    transport: str = "stdio"


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _dicts(value) -> list[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def shell_command(words: list[str]) -> str:
    """`words` as one POSIX shell command line, each quoted where it needs to be."""
    return " ".join(shlex.quote(word) for word in words if word != "")


def web_url(value) -> str:
    """`value` when it is an http(s) URL, else "": what a page may show or link to."""
    text = _text(value).strip()
    return text if text.lower().startswith(("https://", "http://")) else ""


def _placeholder(label: str) -> str:
    return f"<{label.lstrip('-') or 'value'}>"


def _resolved(template: str, known: dict[str, str]) -> str:
    """`template` with each `{name}` replaced by what `known` gives it, or a placeholder."""
    return VARIABLE.sub(lambda match: known.get(match.group(1)) or _placeholder(match.group(1)), template)


def _own_variables(item: dict) -> dict[str, str]:
    """An input's `variables`, each as its value, default, or placeholder when required."""
    found = {}
    for name, variable in (
        (item.get("variables") or {}).items() if isinstance(item.get("variables"), dict) else ()
    ):
        if isinstance(variable, dict) and (value := _value(variable, name)) is not None:
            found[name] = value
    return found


def _value(item: dict, label: str) -> str | None:
    """The value an input takes: its `value` (its `{variables}` resolved), else its `default`, else a
    placeholder when it is required; None for an optional input with nothing given (left out)."""
    value = _text(item.get("value"))
    if value:
        return _resolved(value, _own_variables(item))
    if not item.get("isSecret") and (default := _text(item.get("default"))):
        return default
    return _placeholder(label) if item.get("isRequired") else None


def _arguments(arguments) -> tuple[list[str], dict[str, str]]:
    """The command-line words of a list of arguments, and the values they give by `valueHint` and name
    (a package's URL template refers to them). An optional argument with neither value nor default is
    left out; a boolean one (`format: boolean`) is a switch, present when true."""
    words, known = [], {}
    for argument in _dicts(arguments):
        kind = argument.get("type")
        if kind == "named" and (name := _text(argument.get("name"))):
            value = _value(argument, name)
            if argument.get("format") == "boolean" and value in ("true", "false"):
                words += [name] if value == "true" else []  # a switch: present or absent
                continue
            if value is not None:
                words += [name, value]
                known[name.lstrip("-")] = value
        elif kind == "positional":
            hint = _text(argument.get("valueHint"))
            value = _value(argument, hint or "argument")
            if value is not None:
                words.append(value)
                if hint:
                    known[hint] = value
    return words, known


def _variables(items) -> list[Variable]:
    return [
        Variable(
            name=_text(item["name"]),
            description=_text(item.get("description")),
            required=bool(item.get("isRequired")),
            secret=bool(item.get("isSecret")),
            default="" if item.get("isSecret") else _text(item.get("default")),
        )
        for item in _dicts(items)
        if _text(item.get("name"))
    ]


def _set_values(items) -> dict[str, str]:
    """The environment variables or headers a configuration carries: those with a value, and the
    required ones (as placeholders); optional ones with nothing set are left to their defaults."""
    found = {}
    for item in _dicts(items):
        name = _text(item.get("name"))
        if not name:
            continue
        value = _text(item.get("value"))
        if value:
            found[name] = _resolved(value, _own_variables(item))
        elif item.get("isRequired"):
            found[name] = _placeholder(name)
    return found


def _short_name(name: str) -> str:
    return name.rsplit("/", 1)[-1] or name


def _launch(package: dict, environment: list[str]) -> tuple[str, list[str]] | None:
    """(command, arguments) that run `package`, runtime arguments before it and package arguments after;
    None for types run another way."""
    kind, identifier, version = (_text(package.get(key)) for key in ("registryType", "identifier", "version"))
    runtime, _ = _arguments(package.get("runtimeArguments"))
    arguments, _ = _arguments(package.get("packageArguments"))
    hint = _text(package.get("runtimeHint"))
    if kind not in RUNTIMES:
        return None
    command = hint if hint in RUNTIMES[kind] else RUNTIMES[kind][0]
    if kind == "npm":
        return command, [
            *(["-y"] if command == "npx" else []),
            *runtime,
            _pinned(identifier, "@", version),
            *arguments,
        ]
    if kind == "pypi":
        return command, [*runtime, _pinned(identifier, "==", version), *arguments]
    if kind == "oci":
        tagged = ":" in identifier.rsplit("/", 1)[-1] or "@" in identifier or not version
        image = identifier if tagged else f"{identifier}:{version}"
        passed = [word for name in environment for word in ("-e", name)]
        if runtime[:1] == ["run"]:  # the runtime arguments spell the whole `docker run`, image included
            named_image = image in runtime or image.rsplit(":", 1)[0] in runtime
            return command, [
                *runtime[:1],
                *passed,
                *runtime[1:],
                *([] if named_image else [image]),
                *arguments,
            ]
        return command, ["run", "-i", "--rm", *runtime, *passed, image, *arguments]
    return command, [*runtime, _pinned(identifier, "@", version), "--yes", *arguments]  # nuget


def _pinned(identifier: str, separator: str, version: str) -> str:
    return f"{identifier}{separator}{version}" if version else identifier


def _package_way(name: str, package: dict) -> Way:
    kind, identifier, version = (_text(package.get(key)) for key in ("registryType", "identifier", "version"))
    variables = _variables(package.get("environmentVariables"))
    environment = _set_values(package.get("environmentVariables"))
    transport = package.get("transport") if isinstance(package.get("transport"), dict) else {}
    transport_type = _text(transport.get("type")) or "stdio"
    launch = _launch(package, list(environment))
    if launch is None:
        if kind == "cargo":
            words = ["cargo", "install", identifier, *(["--version", version] if version else [])]
            arguments, _ = _arguments(package.get("packageArguments"))
            note = f"Then run the installed program with: {shell_command(arguments)}" if arguments else ""
            return Way("package", kind, command=shell_command(words), note=note, variables=variables)
        if kind == "mcpb":
            digest = _text(package.get("fileSha256"))
            note = "Download the bundle and open it with an MCP host that installs .mcpb bundles"
            note += f" (SHA-256 {digest})." if digest else "."
            return Way("package", kind, url=web_url(identifier), note=note, variables=variables)
        words = [identifier, version]
        return Way("package", kind or "package", command=shell_command(words), variables=variables)
    command, arguments = launch
    if transport_type == "stdio":
        entry: dict = {"command": command, "args": arguments}
        if environment:
            entry["env"] = environment
        return Way(
            "package",
            kind,
            command=shell_command([command, *arguments]),
            variables=variables,
            config=_config(name, entry),
        )
    # A package that serves HTTP once started: the host connects to its URL, with its variables resolved
    # from the package's arguments and environment.
    _, runtime_known = _arguments(package.get("runtimeArguments"))
    _, package_known = _arguments(package.get("packageArguments"))
    defaults = {variable.name: variable.default for variable in variables if variable.default}
    known = {**defaults, **environment, **runtime_known, **package_known}
    url = _resolved(_text(transport.get("url")), known)
    entry = {"type": _host_type(transport_type), "url": url}
    if headers := _set_values(transport.get("headers")):
        entry["headers"] = headers
    note = (
        f"Start it with the command above (it serves {transport_type}), then connect your MCP host to {url}."
    )
    return Way(
        "package",
        kind,
        command=shell_command([command, *arguments]),
        url=url if web_url(url) else "",
        note=note,
        variables=variables,
        config=_config(name, entry),
        transport=transport_type,
    )


def _host_type(transport_type: str) -> str:
    return "http" if transport_type == "streamable-http" else transport_type


def _config(name: str, entry: dict) -> str:
    return json.dumps({"mcpServers": {_short_name(name): entry}}, indent=2)


def _remote_way(name: str, remote: dict) -> Way:
    transport = _text(remote.get("type"))
    url = web_url(_resolved(_text(remote.get("url")), _own_variables(remote)))
    variables = _variables(remote.get("headers"))
    entry: dict = {"type": _host_type(transport), "url": url}
    if headers := _set_values(remote.get("headers")):
        entry["headers"] = headers
    return Way(
        "remote", transport, url=url, variables=variables, config=_config(name, entry), transport=transport
    )


def ways_to_use(document: dict) -> list[Way]:
    """Every package and remote of `document`, as the catalog page shows them."""
    name = _text(document.get("name"))
    ways = [_package_way(name, package) for package in _dicts(document.get("packages"))]
    ways += [_remote_way(name, remote) for remote in _dicts(document.get("remotes"))]
    return ways
