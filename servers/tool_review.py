"""The review of a tool change as the console shows it (servers/admin.py ToolChangeAdmin): each pinned field
that changed, its approved value above or beside its value now, wrapped so every character can be read at
any width, the words that differ marked (struck through in the approved value, underlined in the new one)
and characters no one can see (zero-width, bidirectional controls, Unicode tags) shown by their code
point, since that is where an injected instruction hides. Strings are shown as text; other values as
indented JSON."""

from __future__ import annotations

import json
import re
import unicodedata
from difflib import SequenceMatcher

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from servers.models import ToolChange
from servers.pins import field_diff

_TOKENS = re.compile(r"\s+|[^\s]+")
# Above this many word pairs the words are not matched (the values are still shown whole, unmarked).
MATCH_LIMIT = 4_000_000
_SHOWN_CONTROLS = {"\n", "\t"}


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def unseen(character: str) -> bool:
    """Whether a character shows nothing on the page: formats (zero-width, bidi, tags), controls other than
    line breaks and tabs, private use and unassigned code points."""
    return character not in _SHOWN_CONTROLS and unicodedata.category(character) in {"Cf", "Cc", "Co", "Cn"}


def _escaped(text: str) -> str:
    """`text` as HTML, each character no one can see replaced by a visible mark naming its code point."""
    return format_html_join(
        "",
        "{}",
        ((piece,) for piece in _pieces(text)),
    )


def _pieces(text: str):
    plain = []
    for character in text:
        if unseen(character):
            if plain:
                yield "".join(plain)
                plain = []
            code = f"U+{ord(character):04X}"
            yield format_html('<span class="unseen" title="an invisible character">{}</span>', code)
        else:
            plain.append(character)
    if plain:
        yield "".join(plain)


def marked(old: str, new: str) -> tuple[SafeString, SafeString]:
    """(old, new) as HTML, the words only the old has in <del>, those only the new has in <ins>."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    if len(a) * len(b) > MATCH_LIMIT:
        return mark_safe(_escaped(old)), mark_safe(_escaped(new))  # noqa: S308 (escaped above)
    old_html, new_html = [], []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        before, after = "".join(a[i1:i2]), "".join(b[j1:j2])
        if tag == "equal":
            old_html.append(_escaped(before))
            new_html.append(_escaped(after))
            continue
        if before:
            old_html.append(format_html("<del>{}</del>", _escaped(before)))
        if after:
            new_html.append(format_html("<ins>{}</ins>", _escaped(after)))
    return mark_safe("".join(old_html)), mark_safe("".join(new_html))  # noqa: S308 (each piece escaped)


def diff_table(change: ToolChange) -> str:
    """Every pinned field the change touches: its name, then the approved value and the value now."""
    fields = field_diff(change.old_definition, change.new_definition, change.subject)
    return diff_sections(
        (name, None if old is None else _text(old), None if new is None else _text(new))
        for name, old, new in fields
    )


def diff_sections(pairs) -> str:
    """(name, approved text or None, text now or None) for each thing that changed (a tool's field, a
    skill's file), each shown old beside new, marked, wrapped at any width; None reads "(absent)"."""
    sections = []
    for name, old, new in pairs:
        old_html, new_html = marked(old or "", new or "")
        sections.append(
            format_html(
                '<section class="tool-diff-field" data-field="{}"><h3>{}</h3><div class="tool-diff-pair">'
                '<div><h4>approved</h4><pre class="tool-diff-old">{}</pre></div>'
                '<div><h4>now</h4><pre class="tool-diff-new">{}</pre></div></div></section>',
                name,
                name,
                old_html if old is not None else mark_safe("<em>(absent)</em>"),
                new_html if new is not None else mark_safe("<em>(absent)</em>"),
            )
        )
    return format_html('<div class="tool-diff">{}</div>', mark_safe("".join(sections)))  # noqa: S308


def findings_table(findings: list[dict]) -> str:
    """A scan's findings (servers/scanning.py), worst first: severity, rule, where, what matched."""
    if not findings:
        return "none"
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code>{}</td></tr>",
        (
            (
                f["severity"],
                f["rule"],
                f["field"],
                f["evidence"],
                f" ({f['reading']})" if f.get("reading") else "",
            )
            for f in findings
        ),
    )
    head = mark_safe(
        '<tr><th scope="col">severity</th><th scope="col">rule</th><th scope="col">in</th>'
        '<th scope="col">matched</th></tr>'
    )
    return format_html('<table class="scan-findings">{}{}</table>', head, rows)
