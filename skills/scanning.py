"""Every file of a skill scanned before its version can be approved, not only SKILL.md, each by the rules
written for what it is:

- **text a model reads** (SKILL.md, references, any text that is not code): the registry's offline rules
  for such text (servers/scanning.py: the YARA rules of cisco-ai-mcp-scanner with the registry's own,
  through every disguise they undo), and cisco-ai-skill-scanner's signatures for Markdown;
- **code** (`.py`, `.sh`, `.js`, `.ts`, a file with a shebang, any text under `scripts/`):
  cisco-ai-skill-scanner's core pack (skills/skill_pack.py: its YARA rules and its signatures for the
  file's language), which is written for code: the tool-description rules read ordinary code as attacks
  (docs/skills.md has the measurement);
- **the registry's own rules** for the attacks particular to skills, in Python:
  - `credential_read` (HIGH, code): reads a credential file (SSH keys, cloud and registry credentials,
    `.netrc`, `/etc/shadow`) or the environment's secrets by name;
  - `destructive_command` (HIGH, code): wipes a disk or the root (`rm -rf /`, `mkfs`, `dd of=/dev/…`);
  - `sends_data_out` (MEDIUM, code): posts or uploads data to another host (`curl -d/-F/-T`, `wget
    --post`, `requests.post`, `fetch(..., {method: "POST"})`, `nc`);
  - `file_link` (MEDIUM, any text): a link to a `file://` URL;
  - `binary_script` (MEDIUM): a file under `scripts/` that is not text (a binary no one can read);
    binaries anywhere get the pack's YARA rules (embedded executables).

A finding's `field` is the file's path. What holds a version is the tools' rule (servers/scanning.holds)."""

from __future__ import annotations

import re

from servers import scanning
from skills import skill_pack

SCRIPTS = "scripts/"
TEXT_MAX = 512 * 1024  # larger text files are scanned in their first TEXT_MAX characters
CODE = "code"
TEXT = "text"
_RULES = (
    (
        "credential_read",
        scanning.HIGH,
        re.compile(
            r"(~|\$HOME|/home/[^/\s]+|/root)/\.(ssh|aws|azure|kube|docker|config/gcloud|netrc|npmrc|pypirc)"
            r"|id_(rsa|ed25519|ecdsa)\b|/etc/shadow\b"
            r"|(os\.environ|getenv|process\.env)\W{1,3}[A-Z_]*(TOKEN|SECRET|PASSWORD|API_KEY)",
        ),
        CODE,
    ),
    (
        "destructive_command",
        scanning.HIGH,
        re.compile(
            r"\brm\s+-[a-zA-Z]*[rf][a-zA-Z]*\s+(-[a-zA-Z]+\s+)*/(\s|$|\*)|\bmkfs(\.\w+)?\s|\bdd\b[^\n]*\bof=/dev/"
        ),
        CODE,
    ),
    (
        "sends_data_out",
        scanning.MEDIUM,
        re.compile(
            r"\bcurl\b[^\n]*\s(-d|--data\S*|-F|--form|-T|--upload-file)\s"
            r"|\bwget\b[^\n]*--post-(data|file)|requests\.(post|put)\(|\bnc\s+-?\w*\s*\S+\s+\d+"
            r"|fetch\([^)]*method\s*:\s*[\"']POST",
        ),
        CODE,
    ),
    ("file_link", scanning.MEDIUM, re.compile(r"file://[^\s)\"'>]*", re.IGNORECASE), None),
)
CODE_TYPES = frozenset({"python", "bash", "javascript", "typescript"})


def kind_of(path: str, text: str) -> str:
    """`code` or `text` (what a model reads as prose)."""
    return CODE if path.startswith(SCRIPTS) or skill_pack.file_type(path, text) in CODE_TYPES else TEXT


def scan_files(files: dict[str, bytes]) -> list[dict]:
    """Findings of every file of a skill (path -> bytes), worst first."""
    pack = skill_pack.pack()
    findings = []
    for path, data in sorted(files.items()):
        try:
            text = data.decode("utf-8")[:TEXT_MAX]
        except UnicodeDecodeError:
            if path.startswith(SCRIPTS):
                findings.append(scanning.finding("binary_script", scanning.MEDIUM, "skill", path, "not text"))
            findings += pack.yara_match(path, data[: TEXT_MAX * 4])
            continue
        kind = kind_of(path, text)
        if kind == CODE:
            findings += pack.yara_match(path, text.encode("utf-8")) + pack.signature_match(path, text)
        else:
            findings += scanning.scan_text(text, path)
            if skill_pack.file_type(path, text) == "markdown":
                findings += pack.signature_match(path, text)
        for rule, severity, pattern, only in _RULES:
            if only is not None and only != kind:
                continue
            if match := pattern.search(text):
                findings.append(scanning.finding(rule, severity, "skill", path, match.group(0)))
    order = scanning.SEVERITY_ORDER
    return sorted(findings, key=lambda found: (order[found["severity"]], found["field"], found["rule"]))


def scanner_name() -> str:
    """What scanned a skill, for its attestation."""
    return f"{scanning.SCANNER}+{skill_pack.DISTRIBUTION}+registry-skills"


def scanner_version() -> str:
    return f"{scanning.scanner_version()}+{skill_pack.pack().version}"


def rules_ref() -> str:
    return f"{scanning.rule_set_ref()}+{skill_pack.pack().ref}"
