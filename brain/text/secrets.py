"""The one secret detector: every app finds, masks and refuses secrets through this module.

Contract:

- ``find(text) -> list[Finding]``: every credential, payment card and bank identifier in the
  text, as spans of the *original* text, ordered and non-overlapping;
- ``mask(text) -> (masked, counts)``: each finding replaced by ``[REDACTED <category>]``;
- ``refuse(text, field=...)``: raises ``NulRefused`` for a NUL and ``SecretRefused`` for a
  finding; the message names the field, the kind and the line — never the value;
- ``redact(text)``: ``mask`` for log lines, reading ``%XX`` escapes as a URL would.

What is scanned is what a person reads, not the raw bytes: each text is scanned in three
readings (``brain.text.reading``) — entities decoded, invisible characters removed and NFKC
applied; then also with Markdown/HTML markup removed and line breaks (wrapped lines, quoted
lines, subtitle cues) read as a space; then with line breaks read as nothing. A finding in
any reading masks the original characters it came from.

Categories: ``credential`` (cloud and SaaS tokens, private keys, JWTs, passwords in
connection strings, in configuration and in prose), ``payment_card`` (issuer prefix and
length, Luhn), ``bank_identifier`` (IBANs of every registry country, by ``python-stdnum``:
the country's BBAN format and mod-97). Kinds are human labels ("GitHub token").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from stdnum import iban as stdnum_iban
from stdnum import luhn

from brain.domain import DomainError
from brain.text.reading import INVISIBLE, Reading, flowing, plain

CREDENTIAL = "credential"
PAYMENT_CARD = "payment_card"
BANK_IDENTIFIER = "bank_identifier"
CATEGORIES = (CREDENTIAL, PAYMENT_CARD, BANK_IDENTIFIER)


@dataclass(frozen=True)
class Finding:
    """One detected secret: its kind and where it is in the original text — never the value."""

    category: str
    kind: str
    start: int
    end: int
    line: int

    def describe(self) -> str:
        return f"{self.kind} ({self.category}) on line {self.line}"

    @property
    def article(self) -> str:
        """The article the kind is said with, "a" or "an" ("an AWS access key id", "an IBAN", "an npm token")."""
        return "an" if self.kind[:1] in "AEIOaeio" or self.kind.startswith("npm") else "a"


class NulRefused(DomainError, ValueError):
    """Text holds what PostgreSQL text cannot: a NUL character, or a lone UTF-16 surrogate
    (``what`` says which)."""

    def __init__(self, field: str = "content", what: str = "a NUL character") -> None:
        self.field = field
        super().__init__(f"{field} refused: it contains {what}")


class SecretRefused(DomainError, ValueError):
    """Text holds a secret; the message names the field, the kind and the line only."""

    def __init__(self, findings: list[Finding], field: str = "content") -> None:
        self.findings = findings
        self.field = field
        first = findings[0]
        more = f" and {len(findings) - 1} more" if len(findings) > 1 else ""
        super().__init__(
            f"{field} refused: it contains {first.article} {first.describe()}{more}. "
            "Remove the value (keep credentials in a secret manager, not in the brain)."
        )

    @property
    def categories(self) -> list[str]:
        return sorted({finding.category for finding in self.findings})

    @property
    def lines(self) -> list[int]:
        return sorted({finding.line for finding in self.findings})


# --------------------------------------------------------------------------- patterns

# Tokens recognised by their own shape. Each is anchored so that it does not start or end
# inside a longer run of the same alphabet (base64 images, hashes). The hints are literal
# substrings every match contains (lower-cased for the case-blind patterns): a text without
# one skips the pattern, which keeps the detector fast on ordinary prose.
_TOKENS: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    (
        "AWS access key id",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[0-9A-Z]{16}(?![A-Za-z0-9])"
        ),
        (
            "AKIA",
            "ASIA",
            "ABIA",
            "ACCA",
            "AGPA",
            "AIDA",
            "AROA",
            "AIPA",
            "ANPA",
            "ANVA",
            "APKA",
        ),
    ),
    (
        "GitHub token",
        re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,255}(?![A-Za-z0-9])"),
        (
            "ghp_",
            "gho_",
            "ghu_",
            "ghs_",
            "ghr_",
        ),
    ),
    ("GitHub token", re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,255}(?![A-Za-z0-9_])"), ("github_pat_",)),
    (
        "GitLab token",
        re.compile(r"(?<![A-Za-z0-9_])gl(?:pat|dt|rt|cbt|ptt|oas|ft|imt|agent)-[A-Za-z0-9_-]{20,}"),
        ("gl",),
    ),
    ("Slack token", re.compile(r"(?<![A-Za-z0-9])xox[abposre]-[A-Za-z0-9-]{10,}"), ("xox",)),
    ("Slack token", re.compile(r"(?<![A-Za-z0-9])xapp-\d-[A-Za-z0-9-]{10,}"), ("xapp-",)),
    (
        "Slack webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}"),
        ("hooks.slack.com",),
    ),
    (
        "Stripe key",
        re.compile(r"(?<![A-Za-z0-9])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?![A-Za-z0-9])"),
        (
            "_live_",
            "_test_",
        ),
    ),
    ("Stripe webhook secret", re.compile(r"(?<![A-Za-z0-9])whsec_[A-Za-z0-9+/=]{24,}"), ("whsec_",)),
    ("Google API key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"), ("AIza",)),
    (
        "Google OAuth client secret",
        re.compile(r"(?<![A-Za-z0-9])GOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])"),
        ("GOCSPX-",),
    ),
    ("Google OAuth access token", re.compile(r"(?<![A-Za-z0-9])ya29\.[A-Za-z0-9_-]{30,}"), ("ya29.",)),
    ("Azure storage account key", re.compile(r"(?i)AccountKey=[A-Za-z0-9+/]{86}=="), ("accountkey=",)),
    (
        "Azure client secret",
        re.compile(r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
        ("Q~",),
    ),
    ("Azure SAS signature", re.compile(r"(?i)[?&]sig=[A-Za-z0-9%+/]{40,}(?:%3D|=){0,2}"), ("sig=",)),
    ("Anthropic key", re.compile(r"(?<![A-Za-z0-9])sk-ant-[a-z]+\d*-[A-Za-z0-9_-]{32,}"), ("sk-ant-",)),
    (
        "OpenAI key",
        re.compile(r"(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}(?![A-Za-z0-9_-])"),
        ("sk-",),
    ),
    (
        "SendGrid key",
        re.compile(r"(?<![A-Za-z0-9])SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}(?![A-Za-z0-9_-])"),
        ("SG.",),
    ),
    ("Twilio API key", re.compile(r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])"), ("SK",)),
    ("npm token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), ("npm_",)),
    ("PyPI token", re.compile(r"(?<![A-Za-z0-9])pypi-AgE[A-Za-z0-9_-]{50,}"), ("pypi-AgE",)),
    ("Hugging Face token", re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{34,}(?![A-Za-z0-9])"), ("hf_",)),
    ("DigitalOcean token", re.compile(r"(?<![A-Za-z0-9])do[opr]_v1_[a-f0-9]{64}(?![A-Za-z0-9])"), ("_v1_",)),
    ("Shopify token", re.compile(r"(?<![A-Za-z0-9])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])"), ("shp",)),
    (
        "HashiCorp Vault token",
        re.compile(r"(?<![A-Za-z0-9])hv[sb]\.[A-Za-z0-9_-]{24,}"),
        (
            "hvs.",
            "hvb.",
        ),
    ),
    ("Mailgun key", re.compile(r"(?<![A-Za-z0-9])key-[0-9a-f]{32}(?![A-Za-z0-9])"), ("key-",)),
    ("Atlassian token", re.compile(r"(?<![A-Za-z0-9])ATATT3[A-Za-z0-9_=-]{60,}"), ("ATATT3",)),
    (
        "Brain token",
        re.compile(r"(?<![A-Za-z0-9_])(?:bmt|bqc|bld)_[A-Za-z0-9_-]{24,}(?![A-Za-z0-9_-])"),
        (
            "bmt_",
            "bqc_",
            "bld_",
        ),
    ),
    (
        "JSON Web Token",
        re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        ("eyJ",),
    ),
]

# A block runs from its BEGIN line to the next END line (or, cut off, 20,000 characters on);
# the END is found once per block with str.find, never re-scanned per BEGIN (a text of many
# BEGIN lines made a lazy regex quadratic).
_PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d: ")
_BLOCK_END = re.compile(r"-----END[ A-Z0-9]{0,40}-----|Private-MAC: [0-9a-f]+")
_MAX_KEY_BLOCK = 20_000

# scheme://user:password@host — the password is the secret.
_URL_CREDENTIALS = re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@\"'<>]{1,128}:([^\s/@\"'<>]{1,256})@[^\s/@]")

_SETTING_NAMES = (
    r"password|passwd|pwd|passphrase|passcode|pass|pin|secret|secret[_-]?key|client[_-]?secret|app[_-]?secret"
    r"|api[_-]?key|apikey|api[_-]?secret|access[_-]?key|access[_-]?key[_-]?id|secret[_-]?access[_-]?key"
    r"|auth[_-]?token|access[_-]?token|refresh[_-]?token|bearer[_-]?token|token|private[_-]?key|signing[_-]?key"
    r"|encryption[_-]?key|db[_-]?pass(?:word)?|database[_-]?password|aws[_-]?secret[_-]?access[_-]?key"
)
# Configuration: NAME = value, NAME: value, "name": "value", NAME=value; (ODBC), --password value.
_ASSIGNMENT = re.compile(
    r"(?i)(?=[abcdeprst])(?:(?<![A-Za-z0-9])|(?<=[_.-]))(?:"
    + _SETTING_NAMES
    + r")[\"']?\s*(?:=|:|=>|:=|\s(?=[\"']))\s*"
    r"(?P<quote>[\"'`]?)(?P<value>[^\s\"'`,;]{1,256})"
)
_FLAG = re.compile(
    r"(?i)(?<![A-Za-z0-9-])--(?:password|passwd|token|secret|api-key)[ =](?P<quote>[\"']?)(?P<value>[^\s\"']{1,256})"
)
# Prose: "the password for the build box is hunter2-prod", "our API key: …", "PIN was 4471-22".
_PROSE = re.compile(
    r"(?i)(?=[apst])\b(?:password|passphrase|passcode|pass ?word|pin(?: code)?|secret(?: key)?|api ?key|access key"
    r"|token)s?\b"
    # "(?:\s*[:=])?\s+", not "\s*[:=]?\s+": the same text, but the latter split a long run of
    # blanks between its two arms in every way (quadratic: 20,000 spaces after "password:" took 18 s).
    r"[^.!?\n]{0,60}?\b(?:is|was|are|=|:|reads|becomes|became|set to|changed to|will be)(?:\s*[:=])?\s+"
    r"(?P<quote>[\"'“‘`«]?)(?P<value>[^\s\"'“”‘’`«»]{4,128})"
)

_PLACEHOLDERS = {
    "password", "passwd", "pass", "pwd", "pw", "changeme", "change-me", "redacted", "placeholder", "secret",
    "example", "xxxxxx",
    "none", "null", "true", "false", "required", "optional", "string", "hidden", "masked", "undefined", "empty",
    "your-password", "your_password", "yourpassword", "mypassword", "notasecret", "dummy", "sample", "test",
    "testing", "default",
}  # fmt: skip
_CODE_REFERENCE = re.compile(
    r"(?:[A-Za-z_][A-Za-z0-9_]*)(?:(?:\.|->|::)[A-Za-z_][A-Za-z0-9_]*)+[.(\[]?|[A-Z][A-Z0-9_]*|[a-z_][a-z0-9_]*"
)
_ENGLISH_TAIL = re.compile(r"[.,;:)\]]+$")  # "… is generated)." ends a clause, not a value
# A file's path (``Source code: Lib/crypt.py`` under a heading about passwords).
_FILE_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)+\.[a-z]{1,5}")


def _code_reference(value: str) -> bool:
    """An identifier or attribute path where a value would be: ``english_ispell``,
    ``settings.DB_PASSWORD``, ``config.password``, ``os.environ[``.

    What code marks as code — an underscore, a call or subscript, ``->``/``::``, or a dotted
    path of words — and no more: a lower-case word with digits (``hunter22``, ``tr0ub4dor``),
    a capital run with digits (``XK7QP2MZ``) or a dotted value with digits
    (``Summer2026.Guest``, ``hunter2.prod``) is how passwords are written.
    """
    if not _CODE_REFERENCE.fullmatch(value):
        return False
    if "_" in value or value.endswith(("(", "[")) or "->" in value or "::" in value:
        return True
    return "." in value.rstrip(".") and not any(c.isdigit() for c in value)


def _classes(value: str) -> int:
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


_PLACEHOLDER_SHAPES = re.compile(
    r"<[^<>]*>|\{\{.*\}\}|\$\{.*|\$[A-Za-z_][A-Za-z0-9_]*|%\(?[A-Za-z_]+\)?s?%?|![a-z]+|@[A-Za-z.]+\(.*|\[.*\]"
)


# A call, a subscript, or an attribute path of words (``request.user.password``); a dotted
# run with digits in it (``Zq7.Wv3.Rt9``) is a value (see ``_code_reference``).
_CODE_SHAPE = re.compile(r"\(.*\)|\[.*\]|\(\)|\[[\"']|^[A-Za-z_]+\.[A-Za-z_]+\.")


def _is_placeholder(value: str) -> bool:
    """A template, reference or filler rather than a value: ``<password>``, ``${DB_PASS}``, ``****``."""
    lowered = value.lower()
    if lowered in _PLACEHOLDERS or lowered.strip("*x.-_#?") == "":
        return True
    if _PLACEHOLDER_SHAPES.fullmatch(value) or "${" in value or "{{" in value:
        return True
    if _CODE_SHAPE.search(value):  # a call, a subscript or an attribute path: code, not a value
        return True
    return lowered.startswith(
        ("[redacted", "env:", "vault:", "secret:", "ssm:", "arn:", "op://", "file:", "http://", "https://")
    )


def _closes_or_opens_code(value: str, quoted: bool) -> bool:
    """A "value" that is the code or prose around a prompt: a quote that closed a string
    (``prompt="Password: "):``) or a bracket opening the next thing (``Password: [several``)."""
    return value[:1] in (")", "]", "}") or (not quoted and value[:1] in ("(", "[", "{"))


def _configured_secret(value: str, quoted: bool) -> bool:
    """Is this the value of a password-like setting (not a reference, a type or a placeholder)?"""
    if _is_placeholder(value):  # before a closing bracket is stripped: ``passwd = input(prompt)``
        return False
    if _closes_or_opens_code(value, quoted):
        return False
    value = value.rstrip(".,;)") if not quoted else value
    if len(value) < 6 or _is_placeholder(value):
        return False
    if not quoted and _code_reference(value):
        return False
    if value.isdigit():
        return True  # PINs and numeric passwords
    if quoted:
        return _classes(value) >= 2 or len(value) >= 12
    return _classes(value) >= 2 and any(not c.isalpha() for c in value)


def _prose_secret(value: str, quoted: bool = False) -> bool:
    """A value written after "the password is": a token a word list would not hold."""
    if _closes_or_opens_code(value, quoted):
        return False
    value = _ENGLISH_TAIL.sub("", value)
    if len(value) < 6 or _is_placeholder(value):
        return False
    if value.isdigit():
        return len(value) >= 6
    if value.isalpha():
        # A word ("rotated", "stored") unless its case is random: "vriivmrcmOXJMZWg".
        return len(value) >= 8 and any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    if _code_reference(value) or _FILE_PATH.fullmatch(value):
        return False  # an identifier ("english_ispell") or a file ("Lib/crypt.py")
    if re.fullmatch(r"\d+(?:[.,]\d+)?(?:%|[a-z]{1,5})?", value, re.IGNORECASE):
        return False  # a quantity: 12chars, 90days, 3.5
    return _classes(value) >= 2 and any(c.isalpha() for c in value)


# ----------------------------------------------------------------------- cards and IBANs

# Digits with at most one separator (space, tab, dash or dot) between any two, 12–19 digits,
# not inside a longer number or word.
_CARD_CANDIDATE = re.compile(
    r"(?<![\w.,])(?<!(?<![A-Za-z])\d[ .-])(?<![.,-]-)\d(?:[ \t.-]?\d){11,18}(?!\w|[ .-]\d+(?!\w))"
)
# Issuer prefixes and the lengths each issues (ISO/IEC 7812 as the networks publish them).
_CARD_ISSUERS: list[tuple[re.Pattern[str], tuple[int, ...]]] = [
    (re.compile(r"4"), (13, 16, 19)),  # Visa
    (re.compile(r"5[1-5]|2(?:2[2-9][1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)"), (16,)),  # Mastercard
    (re.compile(r"3[47]"), (15,)),  # American Express
    (re.compile(r"6011|64[4-9]|65|622(?:12[6-9]|1[3-9]\d|[2-8]\d\d|9[01]\d|92[0-5])"), (16, 17, 18, 19)),  # Discover
    (re.compile(r"35(?:2[89]|[3-8]\d)"), (16, 17, 18, 19)),  # JCB
    (re.compile(r"30[0-5]|3095|36|3[89]"), (14, 15, 16, 17, 18, 19)),  # Diners Club
    (re.compile(r"62|81"), (16, 17, 18, 19)),  # UnionPay
    (re.compile(r"5[06-8]|6304|6759|67677[04]|639|6220"), (12, 13, 14, 15, 16, 17, 18, 19)),  # Maestro
    (re.compile(r"220[0-4]"), (16, 17, 18, 19)),  # Mir
    (re.compile(r"60|508|652|653"), (16,)),  # RuPay
    (re.compile(r"9792"), (16,)),  # Troy
]
_IBAN_CANDIDATE = re.compile(r"(?i)(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ \t-]?[A-Z0-9]){11,32}")


def _card_ok(digits: str) -> bool:
    if not luhn.is_valid(digits):
        return False
    return any(prefix.match(digits) and len(digits) in lengths for prefix, lengths in _CARD_ISSUERS)


def _cards(text: str) -> Iterator[tuple[str, str, int, int]]:
    for match in _CARD_CANDIDATE.finditer(text):
        raw = match.group(0)
        separators = {char for char in raw if not char.isdigit()}
        if len(separators) > 1:
            continue  # mixed separators: a date range or a phone number, not a card
        groups = re.split(r"[ \t.-]", raw) if separators else [raw]
        if separators == {"."} and len(groups) < 3:
            continue  # 1234567.123456: a decimal number
        digits = "".join(groups)
        if _card_ok(digits):
            yield PAYMENT_CARD, "payment card number", match.start(), match.end()


@functools.cache
def _iban_length(country: str) -> int | None:
    """The length of an IBAN of ``country`` (from python-stdnum's registry), None if it has none."""
    try:
        info = stdnum_iban._ibandb.info(country)
    except Exception:
        return None
    structure = info[0][1].get("bban") if info and len(info[0]) > 1 else None
    if not structure:
        return None
    return 4 + sum(int(count) for count in re.findall(r"(\d+)!?[nac]", structure))


def _ibans(text: str) -> Iterator[tuple[str, str, int, int]]:
    for match in _IBAN_CANDIDATE.finditer(text):
        raw = match.group(0)
        # The candidate may run on into the next word: cut it at its country's IBAN length.
        positions = [index for index, char in enumerate(raw) if char.isalnum()]
        compact = "".join(raw[index] for index in positions).upper()
        length = _iban_length(compact[:2])
        if length is not None and len(compact) >= length and stdnum_iban.is_valid(compact[:length]):
            yield BANK_IDENTIFIER, "IBAN", match.start(), match.start() + positions[length - 1] + 1


# ----------------------------------------------------------------------- scanning


def _shaped_tokens(text: str) -> Iterator[tuple[str, str, int, int]]:
    lowered = text.lower()
    for kind, pattern, hints in _TOKENS:
        haystack = lowered if pattern.flags & re.IGNORECASE else text
        if not any(hint in haystack for hint in hints):
            continue
        for match in pattern.finditer(text):
            yield CREDENTIAL, kind, match.start(), match.end()


def _private_keys(text: str) -> Iterator[tuple[str, str, int, int]]:
    if "PRIVATE KEY" not in text and "PuTTY-User-Key-File" not in text:
        return
    cursor = 0
    for begin in _PRIVATE_KEY_BEGIN.finditer(text):
        if begin.start() < cursor:
            continue  # inside the block already reported
        limit = min(len(text), begin.end() + _MAX_KEY_BLOCK)
        end = _BLOCK_END.search(text, begin.end(), limit)
        cursor = end.end() if end is not None else limit
        yield CREDENTIAL, "private key", begin.start(), cursor


def _url_credentials(text: str) -> Iterator[tuple[str, str, int, int]]:
    if "://" not in text or "@" not in text:
        return
    for match in _URL_CREDENTIALS.finditer(text):
        if not _is_placeholder(match.group(1)):
            yield CREDENTIAL, "password in a connection string", *match.span(1)


_SETTING_HINTS = ("pass", "pwd", "secret", "key", "token", "pin")


def _settings(text: str) -> Iterator[tuple[str, str, int, int]]:
    lowered = text.lower()
    if not any(hint in lowered for hint in _SETTING_HINTS):
        return
    for pattern in (_ASSIGNMENT, _FLAG):
        for match in pattern.finditer(text):
            if _configured_secret(match.group("value"), bool(match.group("quote"))):
                yield CREDENTIAL, "password or secret setting", *match.span("value")
    for match in _PROSE.finditer(text):
        if _prose_secret(match.group("value"), bool(match.group("quote"))):
            value_start = match.start("value")
            yield CREDENTIAL, "password in prose", value_start, value_start + len(_ENGLISH_TAIL.sub("", match["value"]))


_Scanner = Callable[[str], Iterator[tuple[str, str, int, int]]]
# Which scanners read which reading. The line-glued reading joins a value that a line break
# cut in two; for settings and prose it would also join a value to the next line's words,
# so ``find`` keeps such a finding only where the part after the break starts no setting.
_PLAIN_SCANNERS: tuple[_Scanner, ...] = (_shaped_tokens, _private_keys, _url_credentials, _settings, _cards, _ibans)
_FLOWING_SCANNERS: tuple[_Scanner, ...] = (_shaped_tokens, _url_credentials, _settings, _cards, _ibans)
_GLUED_SCANNERS: tuple[_Scanner, ...] = (_shaped_tokens, _url_credentials, _settings)
# A new line that reads as its own statement: a setting, a list item, a quote, a heading, a
# table row, or a rule or fence line ("sensitivity: secret" then a frontmatter's closing "---").
_NEXT_SETTING = re.compile(r"[=:]|^\s*(?:[-*+]\s|[>#|]|(?:-{3,}|\*{3,}|_{3,}|={3,}|`{3,}|~{3,})\s*$)")


def _readings(text: str, *, url: bool) -> Iterable[tuple[Reading, tuple[_Scanner, ...], bool]]:
    yield from _text_readings(text, url=False)
    if url and ("%" in text or "+" in text):
        # Also as a URL decodes it; the raw readings above keep a '+' that belongs to a value.
        yield from _text_readings(text, url=True)


def _text_readings(text: str, *, url: bool) -> Iterable[tuple[Reading, tuple[_Scanner, ...], bool]]:
    base = plain(text, url=url)
    yield base, _PLAIN_SCANNERS, False
    if not text.isascii() and INVISIBLE.search(text):
        # Invisible characters removed join a value split by them; read as spaces they keep
        # the boundary a token needs against the word before it ("keyid\u200bAKIA…").
        yield plain(text, url=url, invisible=" "), _PLAIN_SCANNERS, False
    flowed = flowing(base, glue=" ")
    if flowed.text != base.text:
        yield flowed, _FLOWING_SCANNERS, False
    glued = flowing(base, glue="")
    if glued.text not in (base.text, flowed.text):
        yield glued, _GLUED_SCANNERS, True


def _runs_into_next_line(text: str, start: int, end: int) -> bool:
    """Does a glued finding swallow the start of a new line that reads as its own statement?"""
    segment = text[start:end]
    if "\n" not in segment and "\r" not in segment:
        return False
    after = re.split(r"[\r\n]", segment)[-1]
    return bool(_NEXT_SETTING.search(after))


def _with_lines(text: str, spans: list[tuple[int, int, str, str]]) -> list[Finding]:
    """The findings of ``spans`` (sorted by start) with their line numbers, in one pass over
    ``text``: counting from the top for each finding was quadratic in the findings — a 2 MB body
    of 100,000 URLs with credentials held a worker for a minute."""
    findings: list[Finding] = []
    line, counted_to = 1, 0
    for start, end, category, kind in spans:
        line += text.count("\n", counted_to, start)
        counted_to = start
        findings.append(Finding(category, kind, start, end, line))
    return findings


def find(text: str, *, url: bool = False) -> list[Finding]:
    """Every secret in ``text`` as original spans: ordered, overlaps merged (first kind kept).

    ``url``: also read ``%XX`` escapes (log lines and query strings).
    """
    if not text:
        return []
    spans: list[tuple[int, int, str, str]] = []
    for reading, scanners, glued in _readings(text, url=url):
        for scanner in scanners:
            for category, kind, start, end in scanner(reading.text):
                if end <= start:
                    continue
                original_start, original_end = reading.span(start, end)
                if glued and scanner is _settings and _runs_into_next_line(text, original_start, original_end):
                    continue
                spans.append((original_start, original_end, category, kind))
    spans.sort(key=lambda span: (span[0], -span[1]))
    merged: list[tuple[int, int, str, str]] = []
    for span in spans:
        if merged and span[0] < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], span[1]), last[2], last[3])
            continue
        merged.append(span)
    return _with_lines(text, merged)


# What PostgreSQL text cannot hold: NUL, and lone surrogates (a JSON ``"\\ud800"`` parses to
# one; UTF-8 cannot encode it, so the database driver raised on it).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable(text: str) -> str | None:
    """What in ``text`` cannot be stored, in words ("a NUL character", "a lone UTF-16 surrogate
    (not a character)"), or None."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    return "a NUL character" if found.group() == "\x00" else "a lone UTF-16 surrogate (not a character)"


def storable(text: str) -> str:
    """``text`` with what cannot be stored taken out: NUL dropped, a lone surrogate as U+FFFD.
    For text no person typed (a converter's output), where refusing would lose the rest."""
    return _UNSTORABLE.sub(lambda found: "" if found.group() == "\x00" else "\ufffd", text)


def check_nul(text: str, *, field: str = "content") -> None:
    """Refuse (``NulRefused``) what stored text cannot hold (``unstorable``)."""
    problem = unstorable(text)
    if problem is not None:
        raise NulRefused(field, problem)


def refuse(text: str, *, field: str = "content") -> None:
    """Raise ``NulRefused`` or ``SecretRefused`` (naming ``field``) if ``text`` may not be stored."""
    check_nul(text, field=field)
    findings = find(text)
    if findings:
        raise SecretRefused(findings, field)


def refused(text: str) -> bool:
    """Whether ``refuse`` would refuse ``text`` — for a caller that keeps the text out (a join
    kept apart, a form field not shown again) instead of raising."""
    return unstorable(text) is not None or bool(find(text))


def refuse_all(fields: Iterable[tuple[str, str | None]]) -> None:
    """``refuse`` each ``(field, text)`` pair in order; ``None`` values are skipped."""
    for field, text in fields:
        if text is not None:
            refuse(text, field=field)


def mask(
    text: str, replacement: Callable[[Finding], str] | None = None, *, url: bool = False
) -> tuple[str, dict[str, int]]:
    """Replace every finding; return the masked text and a count per category."""
    render = replacement or (lambda finding: f"[REDACTED {finding.category}]")
    counts = dict.fromkeys(CATEGORIES, 0)
    findings = find(text, url=url)
    if not findings:
        return text, counts
    pieces: list[str] = []
    cursor = 0
    for finding in findings:
        pieces.append(text[cursor : finding.start])
        pieces.append(render(finding))
        cursor = finding.end
        counts[finding.category] += 1
    pieces.append(text[cursor:])
    return "".join(pieces), counts


def redact(text: str) -> str:
    """``text`` with every finding masked, reading URL escapes too (for log lines)."""
    return mask(text, url=True)[0]
