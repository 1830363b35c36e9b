"""The offline rules of cisco-ai-skill-scanner's core pack, read from the installed package's data files
without importing it (its analyzers need LLM clients and web frameworks, none of which is installed:
requirements-scanner.txt, --no-deps): its YARA rules that yara-python compiles (those written for yara-x
alone are left out, and named by `left_out`), and its regex signatures by file type, each with the
severity its pack.yaml gives (CRITICAL read as HIGH, INFO as LOW). skills/scanning.py applies them to a
skill's code; docs/skills.md says what they find, measured."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import threading
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import yaml

from servers import scanning

DISTRIBUTION = "cisco-ai-skill-scanner"
PACKAGE = "skill_scanner"
SEVERITIES = {
    "CRITICAL": scanning.HIGH,
    "HIGH": scanning.HIGH,
    "MEDIUM": scanning.MEDIUM,
    "LOW": scanning.LOW,
    "INFO": scanning.LOW,
}
FILE_TYPES = {
    ".py": "python",
    ".sh": "bash",
    ".bash": "bash",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".md": "markdown",
}


@dataclass
class _Signature:
    rule: str
    severity: str
    category: str
    file_types: frozenset[str]
    patterns: list[re.Pattern]
    excluded: list[re.Pattern]


@dataclass
class Pack:
    yara: object
    severities: dict[str, str]
    signatures: list[_Signature]
    version: str
    ref: str  # sha256 of the version and every rule file read, as the tools' rule_set_ref
    left_out: list[str] = field(default_factory=list)

    def yara_match(self, path: str, data: bytes) -> list[dict]:
        """Findings of the YARA rules on a file's bytes."""
        found = []
        for hit in self.yara.match(data=data):
            strings = [instance for string in hit.strings for instance in string.instances]
            evidence = strings[0].matched_data.decode("utf-8", "replace") if strings else hit.rule
            severity = self.severities.get(hit.rule, scanning.MEDIUM)
            found.append(scanning.finding(hit.rule, severity, "skill-scanner", path, evidence.strip()))
        return found

    def signature_match(self, path: str, text: str) -> list[dict]:
        """Findings of the signatures written for the file's type (by its name, or its shebang)."""
        found = []
        kind = file_type(path, text)
        for signature in self.signatures:
            if signature.file_types and kind not in signature.file_types:
                continue
            match = next((m for pattern in signature.patterns if (m := pattern.search(text))), None)
            if match is not None and not any(pattern.search(text) for pattern in signature.excluded):
                found.append(
                    scanning.finding(
                        signature.rule, signature.severity, signature.category, path, match.group(0)
                    )
                )
        return found


def file_type(path: str, text: str | None) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in FILE_TYPES:
        return FILE_TYPES[suffix]
    first = (text or "").split("\n", 1)[0]
    if first.startswith("#!"):
        return "python" if "python" in first else "bash" if ("sh" in first) else "other"
    return "other"


_lock = threading.Lock()
_pack: Pack | None = None


def pack() -> Pack:
    """The compiled pack, built once per process (scanning.ScannerUnavailable when it is not installed)."""
    global _pack
    with _lock:
        if _pack is None:
            _pack = _load()
        return _pack


def _load() -> Pack:
    import yara

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise scanning.ScannerUnavailable(f"{DISTRIBUTION} is not installed: run `make install`.")
    core = Path(next(iter(spec.submodule_search_locations))) / "data" / "packs" / "core"
    declared = yaml.safe_load((core / "pack.yaml").read_text(encoding="utf-8"))["rules"]
    digest = hashlib.sha256(f"{DISTRIBUTION} {metadata.version(DISTRIBUTION)}\0".encode())
    sources, left_out = {}, []
    for path in sorted((core / "yara").glob("*.yara")):
        text = path.read_text(encoding="utf-8")
        try:
            yara.compile(source=text)
        except yara.SyntaxError:
            left_out.append(path.name)  # written for yara-x: a syntax yara-python does not read
            continue
        sources[path.name] = text
        digest.update(f"{path.name}\0{len(text)}\0".encode() + text.encode())
    severities = {
        rule_id.removeprefix("YARA_"): SEVERITIES.get(
            str(rule.get("severity", "MEDIUM")).upper(), scanning.MEDIUM
        )
        for rule_id, rule in declared.items()
        if rule.get("source") == "yara"
    }
    signatures = []
    for path in sorted((core / "signatures").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        digest.update(f"{path.name}\0{len(text)}\0".encode() + text.encode())
        for entry in yaml.safe_load(text) or []:
            if not declared.get(entry["id"], {}).get("knobs", {}).get("enabled", True):
                continue
            signatures.append(
                _Signature(
                    rule=entry["id"],
                    severity=SEVERITIES.get(str(entry.get("severity", "MEDIUM")).upper(), scanning.MEDIUM),
                    category=entry.get("category", ""),
                    file_types=frozenset(entry.get("file_types") or ()),
                    patterns=[re.compile(pattern) for pattern in entry.get("patterns", ())],
                    excluded=[re.compile(pattern) for pattern in entry.get("exclude_patterns", ())],
                )
            )
    return Pack(
        yara=yara.compile(sources=sources),
        severities=severities,
        signatures=signatures,
        version=metadata.version(DISTRIBUTION),
        ref=f"sha256:{digest.hexdigest()}",
        left_out=left_out,
    )
