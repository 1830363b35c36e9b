"""The readings of a definition's text the scanner's rules run on (servers/scanning.py): the text as it is,
and the same text undone of the usual disguises, so a rule that catches `ignore previous instructions`
also catches it written in fullwidth letters, with Cyrillic look-alikes, as HTML entities, with its letters
spaced out, in leetspeak, or base64-encoded. Each reading is named, and a finding says which one it came
from. What a reading cannot undo (a cipher of the server's own) is for the operator's review."""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata

AS_WRITTEN = "as written"
MAX_READINGS_TEXT = 200_000  # characters of a reading; a definition is bounded long before this
BASE64_SEGMENT = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
SPACED = re.compile(r"(?<!\w)(?:\w[ \t._\-·*|/]{1,3}){3,}\w(?!\w)")
INVISIBLE = dict.fromkeys(
    map(ord, "\u00ad\u034f\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff")
)
# Letters of other scripts drawn like Latin ones (Unicode's confusables, the ones seen in disguised text).
HOMOGLYPHS = str.maketrans(
    {
        **dict(zip("АВЕЅІЈКМНОРСТХУаеіјорсуххѕԁһԛԝ", "ABESIJKMHOPCTXYaeijopcyxxsdhqw", strict=True)),
        **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαβεικνορτυχ", "ABEZHIKMNOPTYXabeikvoptux", strict=True)),
        "ɡ": "g",
        "ɑ": "a",
        "ı": "i",
        "ȷ": "j",
        "ℓ": "l",
        "ⅼ": "l",
        "ꓲ": "I",
    }
)
LEET = str.maketrans(
    {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"}
)


def readings(text: str) -> list[tuple[str, str]]:
    """(name, text) of each distinct reading: `as written` first, then the disguises undone."""
    found: dict[str, str] = {}

    def add(name: str, reading: str) -> None:
        reading = reading[:MAX_READINGS_TEXT]
        if reading.strip() and reading not in found.values():
            found[name] = reading

    add(AS_WRITTEN, text)
    plain = unicodedata.normalize("NFKC", html.unescape(html.unescape(text))).translate(INVISIBLE)
    plain = unicodedata.normalize("NFKC", plain.translate(HOMOGLYPHS))
    add("normalised", plain)
    add("letters joined", _joined(plain))
    add("leetspeak", _joined(plain).translate(LEET))
    decoded = [segment for segment in map(_base64_text, BASE64_SEGMENT.findall(plain)) if segment]
    if decoded:
        add("base64 decoded", " ".join(decoded))
    return list(found.items())


def _joined(text: str) -> str:
    """Letters spaced out (`i g n o r e`, `i.g.n.o.r.e`) joined again; a wider gap (two spaces or more)
    still parts words."""

    def join(found: re.Match) -> str:
        words = re.split(r"\s{2,}", found.group())
        return " ".join(re.sub(r"[ \t._\-·*|/]", "", word) for word in words)

    return SPACED.sub(join, text)


def _base64_text(segment: str) -> str | None:
    """A base64 (or base64url) segment's text, when it decodes to readable UTF-8."""
    padded = segment + "=" * (-len(segment) % 4)
    try:
        raw = base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(character.isprintable() or character.isspace() for character in text)
    return text if text and printable / len(text) > 0.9 else None
