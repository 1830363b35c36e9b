"""Scanning of tool definitions before they are pinned (servers/services/pins.py): the YARA rules of
cisco-ai-mcp-scanner (its rule files and threat table, read from the installed package without importing
it: its other analyzers need network services) compiled with the registry's own (servers/scan_rules/),
run offline on what reaches a model. A definition is scanned in two parts, as that scanner does: its
description (and title), then the rest of it as JSON (name, schemas, annotations).

A finding is a plain dict stored with the change and the pin: `rule`, `severity` (HIGH, MEDIUM or LOW),
`category`, `field` (`description` or `definition`) and `evidence` (the text that matched, shortened);
`reading` too when it matched only once a disguise was undone (servers/scan_text.py: fullwidth letters,
look-alike letters, HTML entities, spaced letters, leetspeak, base64).
One more check is the registry's own, in Python: a description that names another tool of the same server
(LOW: usual in honest text, shown so an operator reads the reference)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from django.conf import settings

from servers.scan_text import AS_WRITTEN, readings

SCANNER = "cisco-ai-mcp-scanner/yara"
SCANNER_DISTRIBUTION = "cisco-ai-mcp-scanner"
SCANNER_PACKAGE = "mcpscanner"
SCAN_SCOPE = ("tool-definitions",)  # what a receipt's verdict covers: the definitions a model reads
HIGH, MEDIUM, LOW = "HIGH", "MEDIUM", "LOW"
SEVERITY_ORDER = {HIGH: 0, MEDIUM: 1, LOW: 2}
EVIDENCE_MAX = 160
OWN_RULES = Path(__file__).resolve().parent / "scan_rules"
# A tool name that reads as an identifier (snake, kebab, dotted or camel case), so that naming it in text
# is a reference, not an ordinary word ("search", "read").
_IDENTIFIER = re.compile(r"^(?=.*[_.\-]|.*[a-z][A-Z])[A-Za-z][\w.\-]{2,}$")


class ScannerUnavailable(RuntimeError):
    """The scanner's package or yara-python is not installed."""


class _Rules:
    """The compiled rules, their severities and the digest of every rule file (the receipt's rule_set_ref),
    built once per process."""

    def __init__(self):
        try:
            import yara
        except ImportError as exc:  # pragma: no cover - installed by requirements.txt
            raise ScannerUnavailable("yara-python is not installed: run `make install`.") from exc
        spec = importlib.util.find_spec(SCANNER_PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise ScannerUnavailable(f"{SCANNER_DISTRIBUTION} is not installed: run `make install`.")
        package = Path(next(iter(spec.submodule_search_locations)))
        sources = {
            f"cisco/{path.name}": path.read_text(encoding="utf-8")
            for path in sorted((package / "data" / "yara_rules").glob("*.yara"))
        }
        sources.update(
            {
                f"registry/{path.name}": path.read_text(encoding="utf-8")
                for path in sorted(OWN_RULES.glob("*.yara"))
            }
        )
        self.rules = yara.compile(sources=sources)
        self.severities = _threat_severities(package / "threats" / "threats.py")
        self.version = metadata.version(SCANNER_DISTRIBUTION)
        digest = hashlib.sha256(f"{SCANNER_DISTRIBUTION} {self.version}\0".encode())
        for name, text in sorted(sources.items()):
            digest.update(f"{name}\0{len(text)}\0".encode() + text.encode())
        self.rule_set_ref = f"sha256:{digest.hexdigest()}"  # moves with the scanner's version too

    def match(self, text: str, field: str) -> list[dict]:
        found = []
        for match in self.rules.match(data=text.encode("utf-8", "surrogatepass")):
            threat = match.meta.get("threat_type", "")
            severity = match.meta.get("severity") or self.severities.get(threat, MEDIUM)
            category = threat.lower().replace(" ", "_") or "unknown"
            severity = severity if severity in SEVERITY_ORDER else MEDIUM
            found.append(finding(match.rule, severity, category, field, _evidence(match)))
        return found


def finding(rule: str, severity: str, category: str, field: str, evidence: str) -> dict:
    """One finding, as changes and pins store it (and skills' versions: skills/scanning.py)."""
    return {
        "rule": rule,
        "severity": severity,
        "category": category,
        "field": field,
        "evidence": evidence if len(evidence) <= EVIDENCE_MAX else evidence[: EVIDENCE_MAX - 1] + "…",
    }


def _threat_severities(threats_file: Path) -> dict[str, str]:
    """The scanner's threat name -> severity table, loaded from its file alone (it imports nothing but
    typing), so the scanner's own package and its dependencies are never imported."""
    spec = importlib.util.spec_from_file_location("_mcp_scanner_threats", threats_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: entry.get("severity", MEDIUM) for name, entry in module.ThreatMapping.YARA_THREATS.items()}


def _evidence(match) -> str:
    for string in match.strings:
        for instance in string.instances:
            return instance.matched_data.decode("utf-8", "replace").strip()
    return ""


_rules: _Rules | None = None
_rules_lock = threading.Lock()


def rules() -> _Rules:
    global _rules
    if _rules is None:
        with _rules_lock:
            if _rules is None:
                _rules = _Rules()
    return _rules


def rule_set_ref() -> str:
    return rules().rule_set_ref


def scanner_version() -> str:
    return rules().version


def scan(definition: Mapping, siblings: Iterable[str] = ()) -> list[dict]:
    """Findings of one pinned definition (servers/pins.py), worst first; `siblings` are the other tools of
    its server, whose names in its description are cross-tool references."""
    described = " ".join(str(definition.get(key) or "") for key in ("title", "description")).strip()
    rest = {key: value for key, value in definition.items() if key not in ("title", "description")}
    findings = _matched(described, "description") if described else []
    findings += _matched(json.dumps(rest, ensure_ascii=False, sort_keys=True), "definition")
    pattern = _references(frozenset(siblings))
    named = set(pattern.findall(described)) - {definition.get("name")} if pattern and described else set()
    if named:
        findings.append(finding("cross_tool_reference", LOW, "tool_reference", "description", min(named)))
    return sorted(_unique(findings), key=lambda found: (SEVERITY_ORDER[found["severity"]], found["rule"]))


def scan_text(text: str, field: str) -> list[dict]:
    """The rules' findings in any text a model may read (a skill's file, say), `field` naming where it
    sits; worst first."""
    found = _unique(_matched(text, field))
    return sorted(found, key=lambda finding: (SEVERITY_ORDER[finding["severity"]], finding["rule"]))


def _matched(text: str, field: str) -> list[dict]:
    """The rules' findings in every reading of `text` (servers/scan_text.py): as written, then with its
    disguises undone; a finding in a disguised reading names it (`reading`)."""
    compiled, findings = rules(), []
    for name, reading in readings(text):
        found = compiled.match(reading, field)
        findings += found if name == AS_WRITTEN else [{**finding, "reading": name} for finding in found]
    return findings


@lru_cache(maxsize=64)
def _references(siblings: frozenset[str]) -> re.Pattern | None:
    """One pattern for every identifier-like name of a server's tools (longest first, so a name is never
    matched by its prefix), compiled once per tool set rather than once per tool and name."""
    names = sorted(
        (name for name in siblings if _IDENTIFIER.match(name)), key=lambda name: (-len(name), name)
    )
    if not names:
        return None
    return re.compile(rf"(?<![\w.\-])({'|'.join(map(re.escape, names))})(?![\w\-])")


def _unique(findings: list[dict]) -> list[dict]:
    seen, kept = set(), []
    for found in findings:
        key = (found["rule"], found["field"])
        if key not in seen:
            seen.add(key)
            kept.append(found)
    return kept


def worst(findings: Iterable[Mapping] | None) -> str | None:
    """The highest severity among findings; None for none."""
    severities = [found["severity"] for found in findings or () if found.get("severity") in SEVERITY_ORDER]
    return min(severities, key=SEVERITY_ORDER.__getitem__) if severities else None


def holds(findings: Iterable[Mapping] | None) -> bool:
    """Whether these findings keep a tool from being pinned without an operator's override
    (TOOL_SCAN_HIGH_HOLDS)."""
    return settings.TOOL_SCAN_HIGH_HOLDS and worst(findings) == HIGH


def verdict(findings_of_pins: Iterable[Iterable[Mapping] | None]) -> str:
    """A receipt's verdict over a pinned set: `clean` (no finding), `warnings` (none above MEDIUM) or
    `findings` (a HIGH one: an operator approved it over the scan)."""
    severities = {worst(findings) for findings in findings_of_pins} - {None}
    if HIGH in severities:
        return "findings"
    return "warnings" if severities else "clean"
