"""Every file of a skill scanned before its version can be approved, not only SKILL.md: each text file by
the registry's offline rules for what reaches a model (servers/scanning.py: the YARA rules of
cisco-ai-mcp-scanner with the registry's own, through every disguise it undoes), plus the rules of the
attacks particular to skills, in Python:

- `credential_read` (HIGH): a script reads a credential file (SSH keys, cloud and registry credentials,
  `.netrc`, `/etc/shadow`) or the environment's secrets by name;
- `sends_data_out` (MEDIUM): a script posts or uploads data to another host (`curl -d/-F/-T`, `wget
  --post`, `requests.post`, `fetch(..., {method: "POST"})`, `nc`);
- `file_link` (MEDIUM): a link to a `file://` URL, anywhere;
- `binary_script` (MEDIUM): a file under `scripts/` that is not text (a binary no one can read).

A finding's `field` is the file's path. What holds a version is the tools' rule (servers/scanning.holds)."""

from __future__ import annotations

import re

from servers import scanning

SCRIPTS = "scripts/"
TEXT_MAX = 512 * 1024  # larger text files are scanned in their first TEXT_MAX characters
_RULES = (
    (
        "credential_read",
        scanning.HIGH,
        re.compile(
            r"(~|\$HOME|/home/[^/\s]+|/root)/\.(ssh|aws|azure|kube|docker|config/gcloud|netrc|npmrc|pypirc)"
            r"|id_(rsa|ed25519|ecdsa)\b|/etc/shadow\b"
            r"|(os\.environ|getenv|process\.env)\W{1,3}[A-Z_]*(TOKEN|SECRET|PASSWORD|API_KEY)",
        ),
        True,
    ),
    (
        "sends_data_out",
        scanning.MEDIUM,
        re.compile(
            r"\bcurl\b[^\n]*\s(-d|--data\S*|-F|--form|-T|--upload-file)\s"
            r"|\bwget\b[^\n]*--post-(data|file)|requests\.(post|put)\(|\bnc\s+-?\w*\s*\S+\s+\d+"
            r"|fetch\([^)]*method\s*:\s*[\"']POST",
        ),
        True,
    ),
    ("file_link", scanning.MEDIUM, re.compile(r"file://[^\s)\"'>]*", re.IGNORECASE), False),
)


def scan_files(files: dict[str, bytes]) -> list[dict]:
    """Findings of every file of a skill (path -> bytes), worst first."""
    findings = []
    for path, data in sorted(files.items()):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            if path.startswith(SCRIPTS):
                findings.append(_finding("binary_script", scanning.MEDIUM, path, "not text"))
            continue
        text = text[:TEXT_MAX]
        findings += scanning.scan_text(text, path)
        for rule, severity, pattern, scripts_only in _RULES:
            if scripts_only and not path.startswith(SCRIPTS):
                continue
            if match := pattern.search(text):
                findings.append(_finding(rule, severity, path, match.group(0)))
    order = scanning.SEVERITY_ORDER
    return sorted(findings, key=lambda found: (order[found["severity"]], found["field"], found["rule"]))


def _finding(rule: str, severity: str, path: str, evidence: str) -> dict:
    return {
        "rule": rule,
        "severity": severity,
        "category": "skill",
        "field": path,
        "evidence": evidence[: scanning.EVIDENCE_MAX],
    }
