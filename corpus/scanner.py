"""The secret scanner on the single write path.

Refuses (``require_clean``) or masks in place (``mask``) three categories:

- ``credential``: cloud access keys, GitHub/GitLab/Slack/Stripe/Google/OpenAI-style
  tokens, private key blocks, JWTs, and password/secret/token assignments whose value
  looks random (long enough, high entropy, mixed character classes);
- ``payment_card``: 13–19 digits (optionally grouped by single spaces or dashes) with a
  card-network prefix and a valid Luhn check digit;
- ``bank_identifier``: IBANs whose length fits their country and whose mod-97 check holds.

A finding carries its category, a human kind ("GitHub token") and the line number —
never the matched value, so refusals can be shown, logged and audited safely.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

CREDENTIAL = "credential"
PAYMENT_CARD = "payment_card"
BANK_IDENTIFIER = "bank_identifier"
CATEGORIES = (CREDENTIAL, PAYMENT_CARD, BANK_IDENTIFIER)


@dataclass(frozen=True)
class Finding:
    """One detected secret: where and what kind — never the value."""

    category: str
    kind: str
    line: int
    start: int
    end: int

    def describe(self) -> str:
        return f"{self.kind} ({self.category}) on line {self.line}"


class SecretRefused(ValueError):
    """Content holds a secret; the message names category, kind and line only."""

    def __init__(self, findings: list[Finding], where: str = "content") -> None:
        self.findings = findings
        first = findings[0]
        more = f" and {len(findings) - 1} more" if len(findings) > 1 else ""
        super().__init__(
            f"{where} refused: it contains a {first.describe()}{more}. "
            "Remove the value (store credentials in a secret manager, not in the corpus)."
        )

    @property
    def categories(self) -> list[str]:
        return sorted({finding.category for finding in self.findings})


class NulRefused(ValueError):
    """Content contains a NUL character."""


_TOKEN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    (
        "AWS secret access key",
        re.compile(
            r"(?i)aws.{0,20}?(?:secret|private).{0,20}?['\"=:\s]\s*['\"]?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
    ),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b")),
    ("GitHub token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b")),
    ("GitLab token", re.compile(r"\bgl(?:pat|dt|rt|cbt|ptt|oas)-[A-Za-z0-9_-]{20,}")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("Slack webhook", re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}")),
    ("Stripe key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("OpenAI-style key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}\b")),
    ("Twilio/SendGrid key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}\b")),
    (
        "private key block",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*-----|\Z)"),
    ),
    ("JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    (
        "credentials in a URL",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]{1,64}:([^\s:/@]{6,128})@[^\s/]+", re.IGNORECASE),
    ),
]

_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:password|passwd|pwd|pass|secret|secret[_-]?key|api[_-]?key|apikey|access[_-]?key|auth[_-]?token"
    r"|access[_-]?token|token|client[_-]?secret|private[_-]?key)\b[\"']?\s*(?:=|:|=>|:=)\s*[\"']?([^\s\"'`,;]{8,})"
)

_CARD_CANDIDATE = re.compile(r"(?<![\w-])(?:\d[ -]?){12,18}\d(?![\d])")
_IBAN_CANDIDATE = re.compile(r"\b([A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30})\b")

# IBAN lengths by country (ISO 13616 registry, common countries; others fall back to 15–34).
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AT": 20, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "CH": 21, "CY": 28,
    "CZ": 24, "DE": 22, "DK": 18, "EE": 20, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22,
    "GI": 23, "GL": 18, "GR": 27, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30,
    "KW": 30, "KZ": 20, "LB": 28, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22,
    "MK": 19, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29,
    "RO": 24, "RS": 22, "SA": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TN": 24, "TR": 26, "UA": 29,
    "VG": 24, "XK": 20,
}  # fmt: skip

# Card-network prefixes: Visa 4; Mastercard 51–55, 2221–2720; Amex 34, 37; Discover 6011, 644–649, 65;
# JCB 3528–3589; Diners 300–305, 36, 38–39; UnionPay 62; Maestro 50, 56–58, 63, 67.
_CARD_PREFIX = re.compile(r"^(?:4|5[0-8]|2[2-7]|3[4-9]|30[0-5]|6[0-7])")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _iban_ok(raw: str) -> bool:
    compact = raw.replace(" ", "")
    country = compact[:2]
    expected = _IBAN_LENGTHS.get(country)
    if expected is not None and len(compact) != expected:
        return False
    if expected is None and not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(char, 36)) for char in rearranged)
    return int(number) % 97 == 1


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _looks_random(value: str) -> bool:
    """A password-ish value: long, mixed classes, high entropy — not a word or a placeholder."""
    if len(value) < 8:
        return False
    lowered = value.lower()
    if lowered.startswith(("<", "{", "$", "%", "process.env", "os.environ", "env(", "settings.")):
        return False
    if set(value) <= set("*x.-_") or lowered in {"password", "changeme", "redacted", "placeholder"}:
        return False
    classes = sum(bool(re.search(pattern, value)) for pattern in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9]"))
    return classes >= 3 and _entropy(value) >= 3.0


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _iter_findings(text: str) -> Iterator[Finding]:
    for kind, pattern in _TOKEN_PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span(1) if match.groups() and match.group(1) else match.span()
            yield Finding(CREDENTIAL, kind, _line_of(text, match.start()), start, end)
    for match in _ASSIGNMENT.finditer(text):
        if _looks_random(match.group(1)):
            yield Finding(CREDENTIAL, "password or secret assignment", _line_of(text, match.start()), *match.span(1))
    for match in _CARD_CANDIDATE.finditer(text):
        raw = match.group(0)
        separators = {char for char in raw if not char.isdigit()}
        if len(separators) > 1:
            continue  # mixed separators: a date range or a phone number, not a card
        digits = re.sub(r"\D", "", raw)
        if 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) and _luhn_ok(digits):
            yield Finding(PAYMENT_CARD, "payment card number", _line_of(text, match.start()), *match.span())
    for match in _IBAN_CANDIDATE.finditer(text):
        if _iban_ok(match.group(1)):
            yield Finding(BANK_IDENTIFIER, "IBAN", _line_of(text, match.start()), *match.span(1))


def scan(text: str) -> list[Finding]:
    """Every finding in ``text``, ordered by position, overlapping ones merged."""
    findings = sorted(_iter_findings(text), key=lambda f: (f.start, -f.end))
    merged: list[Finding] = []
    for finding in findings:
        if merged and finding.start < merged[-1].end:
            continue
        merged.append(finding)
    return merged


def check_nul(text: str, where: str = "content") -> None:
    """Refuse NUL anywhere in stored text."""
    if "\x00" in text:
        raise NulRefused(f"{where} refused: it contains a NUL character")


def require_clean(text: str, where: str = "content") -> None:
    """Raise ``NulRefused`` or ``SecretRefused`` if ``text`` may not be stored."""
    check_nul(text, where)
    findings = scan(text)
    if findings:
        raise SecretRefused(findings, where)


def mask(
    text: str, replacement: Callable[[Finding], str] | None = None, *, across_lines: bool = False
) -> tuple[str, dict[str, int]]:
    """Replace every finding in place; return the masked text and a count per category.

    ``across_lines``: also find values a line break cut in two (text extracted from a PDF
    wraps an IBAN or card number like any other words). Line breaks are read as spaces for
    the scan only — the same length, so the offsets hold — and the whole value is masked.
    """
    render = replacement or (lambda finding: f"[REDACTED {finding.category}]")
    counts = dict.fromkeys(CATEGORIES, 0)
    pieces: list[str] = []
    cursor = 0
    findings = scan(text.replace("\r", " ").replace("\n", " ") if across_lines else text)
    for finding in findings:
        pieces.append(text[cursor : finding.start])
        pieces.append(render(finding))
        cursor = finding.end
        counts[finding.category] += 1
    pieces.append(text[cursor:])
    return "".join(pieces), counts
