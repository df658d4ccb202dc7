"""Write the labelled secrets corpus under ``bench/data/secrets/`` (deterministic).

    .venv/bin/python bench/data/build_secrets.py

``planted.jsonl``: one record per planted value — ``kind``, ``disguise``, ``text`` (a line of
technical prose, Markdown or configuration around the value) and ``span`` (where the value,
as disguised, sits in ``text``). Every value is synthetic and valid for its kind: card
numbers pass Luhn with a real issuer prefix and length, IBANs carry their country's BBAN
format and mod-97 check digits (python-stdnum's registry), tokens have their vendor's shape.

``ordinary.jsonl``: technical snippets that must not be flagged — ``kind`` and ``text``:
commit hashes, UUIDs, ISBNs, order and tracking numbers, phone numbers, versions, checksums,
base64 images, IMEIs, timestamps, IP addresses, and prose and code that talk *about*
passwords and tokens without holding one.

Disguises: ``plain``; ``spaced`` (cards and IBANs in printed groups with spaces, dashes or
dots; other values behind non-breaking spaces and tabs); ``entities`` (characters written as
HTML numeric entities); ``split`` (a line break inside the value); ``zero_width`` (zero-width
and bidi characters inside); ``emphasis`` (Markdown emphasis or code markers inside);
``fullwidth`` (full-width forms a reader takes for ASCII).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from stdnum import iban as stdnum_iban
from stdnum import luhn

OUT = Path(__file__).resolve().parent / "secrets"
SEED = 20261201
PER_KIND = 42  # 6 disguises x 7
DISGUISES = ["plain", "spaced", "entities", "split", "zero_width", "emphasis", "fullwidth"]

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"


def rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# ----------------------------------------------------------------------------- values


def card(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + rand(rng, string.digits, length - len(prefix) - 1)
    return body + luhn.calc_check_digit(body)


def card_value(prefixes: list[str], lengths: list[int]) -> Callable[[random.Random], str]:
    return lambda rng: card(rng, rng.choice(prefixes), rng.choice(lengths))


IBAN_COUNTRIES = [
    "GB", "DE", "FR", "NL", "ES", "IT", "BE", "CH", "AT", "PL", "SE", "NO", "DK", "FI", "IE", "PT", "GR",
    "SA", "AE", "BR", "TR", "CZ", "HU", "RO", "LU", "MT", "CY", "IS", "LT", "EE", "HR", "SI", "SK", "QA",
    "KW", "JO", "IL", "MU", "PK", "UA", "GE", "MC",
]  # fmt: skip


def iban_value(rng: random.Random) -> str:
    """A valid IBAN of a random registry country (retrying where a national check digit applies)."""
    country = rng.choice(IBAN_COUNTRIES)
    structure = stdnum_iban._ibandb.info(country)[0][1]["bban"]
    while True:
        bban = ""
        for count, kind in _parts(structure):
            alphabet = {"n": string.digits, "a": string.ascii_uppercase, "c": UPPER_DIGITS}[kind]
            bban += rand(rng, alphabet, count)
        value = country + stdnum_iban.calc_check_digits(country + "00" + bban) + bban
        if stdnum_iban.is_valid(value):
            return value


def _parts(structure: str) -> list[tuple[int, str]]:
    parts: list[tuple[int, str]] = []
    number = ""
    for char in structure:
        if char.isdigit():
            number += char
        elif char == "!":
            continue
        else:
            parts.append((int(number), char))
            number = ""
    return parts


def pem(rng: random.Random, label: str) -> str:
    body = base64.b64encode(rng.randbytes(rng.randint(300, 900))).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"


def jwt(rng: random.Random) -> str:
    def b64(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    header = b64({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"})
    payload = b64(
        {"sub": str(rng.randint(1000, 99999)), "iat": rng.randint(1_600_000_000, 1_800_000_000), "role": "admin"}
    )
    return f"{header}.{payload}.{rand(rng, B64URL, 43)}"


def password(rng: random.Random) -> str:
    words = ["hunter", "summer", "falcon", "orbit", "maple", "copper", "delta", "harbor", "violet", "ember"]
    shapes = [
        lambda: f"{rng.choice(words)}{rng.randint(2, 99)}-{rng.choice(['prod', 'stage', 'ops', 'db'])}",
        lambda: f"{rng.choice(words).capitalize()}{rng.randint(1990, 2030)}{rng.choice('!#$%&*')}",
        lambda: rand(rng, ALNUM + "!#%&*+-=?@^_", rng.randint(12, 24)),
        lambda: f"{rng.choice(words)}-{rng.choice(words)}-{rng.choice(words)}-{rng.randint(10, 99)}",
        # Shapes an identifier rule once let through: a word with digits, dotted ones.
        lambda: f"{rng.choice(words)}{rng.randint(10, 999)}",
        lambda: f"{rng.choice(words)}{rng.randint(2, 9)}.{rng.choice(['prod', 'stage', 'ops', 'db'])}",
        lambda: f"{rng.choice(words).capitalize()}{rng.randint(1990, 2030)}.{rng.choice(words).capitalize()}",
        lambda: rand(rng, string.ascii_uppercase, 4) + rand(rng, string.digits, 1) + rand(rng, UPPER_DIGITS, 3),
    ]
    return rng.choice(shapes)()


VALUES: dict[str, Callable[[random.Random], str]] = {
    "aws_access_key_id": lambda r: rng_choice(r, ["AKIA", "ASIA"]) + rand(r, UPPER_DIGITS, 16),
    "github_token": lambda r: rng_choice(r, ["ghp_", "gho_", "ghs_"]) + rand(r, ALNUM, 36),
    "github_fine_grained_token": lambda r: "github_pat_" + rand(r, ALNUM, 22) + "_" + rand(r, ALNUM, 59),
    "gitlab_token": lambda r: "glpat-" + rand(r, ALNUM + "-_", 20),
    "slack_token": lambda r: f"xoxb-{r.randint(10**10, 10**11)}-{r.randint(10**10, 10**11)}-{rand(r, ALNUM, 24)}",
    "slack_webhook": lambda r: (
        "https://hooks.slack.com/services/T"
        + rand(r, UPPER_DIGITS, 8)
        + "/B"
        + rand(r, UPPER_DIGITS, 8)
        + "/"
        + rand(r, ALNUM, 24)
    ),
    "stripe_secret_key": lambda r: rng_choice(r, ["sk_live_", "rk_live_"]) + rand(r, ALNUM, 24),
    "google_api_key": lambda r: "AIza" + rand(r, ALNUM + "-_", 35),
    "gcp_oauth_client_secret": lambda r: "GOCSPX-" + rand(r, ALNUM + "-_", 28),
    "azure_storage_key": lambda r: "AccountKey=" + base64.b64encode(r.randbytes(64)).decode(),
    "azure_client_secret": lambda r: rand(r, ALNUM, 3) + str(r.randint(0, 9)) + "Q~" + rand(r, ALNUM + "_~.-", 31),
    "openai_key": lambda r: "sk-proj-" + rand(r, ALNUM + "-_", 48),
    "anthropic_key": lambda r: "sk-ant-api03-" + rand(r, ALNUM + "-_", 93) + "AA",
    "sendgrid_key": lambda r: "SG." + rand(r, ALNUM + "-_", 22) + "." + rand(r, ALNUM + "-_", 43),
    "twilio_api_key": lambda r: "SK" + rand(r, HEX, 32),
    "npm_token": lambda r: "npm_" + rand(r, ALNUM, 36),
    "pypi_token": lambda r: "pypi-AgEIcHlwaS5vcmc" + rand(r, ALNUM + "-_", 60),
    "jwt": jwt,
    "rsa_private_key": lambda r: pem(r, "RSA PRIVATE KEY"),
    "openssh_private_key": lambda r: pem(r, "OPENSSH PRIVATE KEY"),
    "pgp_private_key": lambda r: pem(r, "PGP PRIVATE KEY BLOCK"),
    # A password inside a URL is percent-encoded (an '@' or '/' in it would end the user info).
    "connection_string_password": lambda r: quote(password(r), safe=""),
    "config_password": password,
    "prose_password": password,
    "visa_card": card_value(["4"], [16, 16, 16, 13, 19]),
    "mastercard": card_value(["51", "52", "53", "54", "55", "2221", "2500", "2720"], [16]),
    "amex_card": card_value(["34", "37"], [15]),
    "discover_card": card_value(["6011", "644", "65"], [16]),
    "jcb_card": card_value(["3528", "3589", "3566"], [16]),
    "iban": iban_value,
}


def rng_choice(rng: random.Random, options: list[str]) -> str:
    return rng.choice(options)


# ----------------------------------------------------------------------------- contexts

CONTEXTS: dict[str, list[str]] = {
    "default": [
        "Deploy notes: use {v} for the staging job.",
        "- key: {v}",
        "| service | credential |\n|---|---|\n| billing | {v} |",
        "Rotated yesterday, the new one is {v} (do not share).",
        "> From the incident channel: {v}",
        "export TOKEN={v}",
    ],
    "connection_string_password": [
        "DATABASE_URL=postgres://app:{v}@db.internal:5432/brain",
        "Connect with `mysql://report:{v}@10.0.3.7/sales`.",
        "redis://default:{v}@cache.internal:6379/0 is the cache.",
    ],
    "config_password": [
        "DB_PASSWORD={v}",
        "password: {v}",
        '"client_secret": "{v}",',
        "smtp_pass = '{v}'",
        "--password {v}",
    ],
    "prose_password": [
        "The password for the build box is {v} until Friday.",
        "FYI the wifi passphrase is {v}.",
        "Root password was {v}, I changed it after the audit.",
        "The admin PIN code is {v} for the front door panel.",
    ],
    "card": [
        "Charge it to {v} please.",
        "Corporate card: {v} (exp 09/29).",
        "- card number {v}",
        "Customer read out {v} on the call.",
    ],
    "iban": ["Wire the refund to {v} by Monday.", "IBAN: {v}", "Supplier account {v} (verified)."],
}


def context_for(kind: str) -> str:
    if kind.endswith("_card") or kind == "mastercard":
        return "card"
    if kind in CONTEXTS:
        return kind
    return "default"


# ----------------------------------------------------------------------------- disguises

ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u2066"]


def disguise(rng: random.Random, kind: str, value: str, how: str) -> str:
    is_number = context_for(kind) in ("card", "iban")
    cut = rng.randint(max(1, len(value) // 4), max(2, 3 * len(value) // 4))
    if how == "plain":
        return value
    if how == "spaced":
        if is_number:
            separator = rng.choice([" ", "-", "."] if kind != "iban" else [" ", " ", "-"])
            size = 4
            return separator.join(value[i : i + size] for i in range(0, len(value), size))
        return value  # the context puts non-breaking spaces and tabs around it (see planted)
    if how == "entities":
        chars = []
        for index, char in enumerate(value):
            if char != "\n" and (index < 4 or rng.random() < 0.3):
                chars.append(f"&#{ord(char)};" if rng.random() < 0.5 else f"&#x{ord(char):x};")
            else:
                chars.append(char)
        return "".join(chars)
    if how == "split":
        if kind.endswith("private_key"):
            lines = value.split("\n")
            middle = len(lines) // 2
            lines[middle] = lines[middle][:20] + "\n" + lines[middle][20:]
            return "\n".join(lines)
        return value[:cut] + rng.choice(["\n", " \n", "\n  "]) + value[cut:]
    if how == "zero_width":
        chars = list(value)
        for _ in range(rng.randint(1, 3)):
            position = rng.randint(1, len(chars) - 1)
            chars.insert(position, rng.choice(ZERO_WIDTH))
        return "".join(chars)
    if how == "emphasis":
        marker = rng.choice(["**", "*", "`", "~~"])
        end = rng.randint(cut + 1, len(value))
        return value[:cut] + marker + value[cut:end] + marker + value[end:]
    if how == "fullwidth":
        chars = list(value)
        for index, char in enumerate(chars):
            if char.isalnum() and char.isascii() and rng.random() < 0.5:
                chars[index] = chr(ord(char) + 0xFEE0)
        return "".join(chars)
    raise ValueError(how)


def planted(rng: random.Random) -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    for kind, make in VALUES.items():
        for index in range(PER_KIND):
            how = DISGUISES[index % len(DISGUISES)]
            value = make(rng)
            shown = disguise(rng, kind, value, how)
            template = rng.choice(CONTEXTS[context_for(kind)])
            before, after = template.split("{v}")
            if how == "spaced" and context_for(kind) in ("connection_string_password", "config_password"):
                before, after = "\u00a0\u00a0" + before, after + "\t "  # no space can sit inside a URL
            elif how == "spaced" and context_for(kind) not in ("card", "iban"):
                before, after = before + "\u00a0\u00a0", "\t " + after
            text = before + shown + after
            records.append(
                {
                    "id": f"{kind}-{index}",
                    "kind": kind,
                    "disguise": how,
                    "text": text,
                    "span": [len(before), len(before) + len(shown)],
                }
            )
    return records


# ----------------------------------------------------------------------------- ordinary


def ordinary(rng: random.Random) -> list[dict[str, object]]:
    def sha(n: int = 40) -> str:
        return hashlib.sha256(rng.randbytes(32)).hexdigest()[:n]

    def isbn13() -> str:
        digits = "978" + rand(rng, string.digits, 9)
        total = sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(digits))
        check = (10 - total % 10) % 10
        return f"{digits[:3]}-{digits[3]}-{digits[4:7]}-{digits[7:12]}-{check}"

    def imei() -> str:
        body = rng.choice(["35", "86", "01", "99"]) + rand(rng, string.digits, 12)
        return body + luhn.calc_check_digit(body)

    def phone() -> str:
        return rng.choice(
            [
                f"+1 ({rng.randint(200, 999)}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
                f"+44 20 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
                f"+49 30 {rng.randint(100000, 999999)}-{rng.randint(10, 99)}",
                f"0{rng.randint(6, 7)} {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)}",
                f"+91 {rng.randint(70000, 99999)} {rng.randint(10000, 99999)}",
            ]
        )

    def png() -> str:
        return (
            "data:image/png;base64,"
            + base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(rng.randint(60, 240))).decode()
        )

    words = ["service", "deploy", "cache", "ledger", "invoice", "report", "queue", "worker"]
    generators: dict[str, Callable[[], str]] = {
        "commit_hash": lambda: f"Fixed in commit {sha()} ({sha(7)} on main).",
        "uuid": lambda: f"Request {uuid.UUID(bytes=rng.randbytes(16), version=4)} failed twice.",
        "isbn": lambda: f"See ISBN {isbn13()} chapter {rng.randint(1, 20)}.",
        "order_number": lambda: rng.choice(
            [
                f"Order #{rng.randint(10**7, 10**9)} shipped.",
                f"PO-{rng.randint(2020, 2030)}-{rng.randint(10000, 99999)} approved.",
                f"Invoice INV{rng.randint(10**9, 10**12)} is overdue.",
                f"Ticket {rng.randint(10**5, 10**7)}-{rng.randint(100, 999)} closed.",
            ]
        ),
        "tracking_number": lambda: rng.choice(
            [
                f"Tracking 1Z{rand(rng, UPPER_DIGITS, 16)}.",
                f"USPS {rng.randint(9200, 9499)} {rand(rng, string.digits, 4)} {rand(rng, string.digits, 4)} "
                f"{rand(rng, string.digits, 4)} {rand(rng, string.digits, 4)} {rand(rng, string.digits, 2)}",
                f"FedEx {rand(rng, string.digits, 12)}",
            ]
        ),
        "phone_number": lambda: f"Call the on-call desk at {phone()}.",
        "version": lambda: (
            f"Upgrade to v{rng.randint(0, 30)}.{rng.randint(0, 40)}.{rng.randint(0, 200)}"
            f"{rng.choice(['', '-rc1', '+build.' + str(rng.randint(1, 999)), '.post1'])} before Friday."
        ),
        "checksum": lambda: rng.choice(
            [f"sha256:{sha(64)}", f"md5 {hashlib.md5(rng.randbytes(8)).hexdigest()}", f"CRC32 {rand(rng, HEX, 8)}"]  # noqa: S324
        ),
        "base64_image": lambda: f"![logo]({png()})",
        "imei": lambda: f"Device IMEI {imei()} reported lost.",
        "timestamp": lambda: rng.choice(
            [
                f"ts={rng.randint(1_600_000_000_000, 1_800_000_000_000)}",
                f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
                f"epoch {rng.randint(1_600_000_000, 1_800_000_000)}",
            ]
        ),
        "ip_address": lambda: (
            f"Allow {rng.randint(1, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}/"
            f"{rng.choice([24, 32, 16])} and fd00::{rand(rng, HEX, 4)}."
        ),
        "docker_digest": lambda: f"image: registry.internal/{rng.choice(words)}@sha256:{sha(64)}",
        "amount": lambda: (
            f"Total {rng.randint(1, 99)},{rng.randint(100, 999)},{rng.randint(100, 999)}.{rng.randint(10, 99)} EUR "
            f"across {rng.randint(1000, 99999)} lines."
        ),
        "long_id": lambda: rng.choice(
            [
                f"Snowflake id {rng.randint(10**17, 10**18)}",
                f"account {rand(rng, string.digits, 10)}",
                f"row {rng.randint(10**12, 10**13)} in shard {rng.randint(1, 64)}",
            ]
        ),
        "password_talk": lambda: rng.choice(
            [
                "The password must be at least 12 characters long.",
                "Rotate the API key every 90 days and store it in Vault.",
                "The password is stored in 1Password under Ops.",
                "Reset your password from the account page.",
                "Token expiry is 3600 seconds.",
                "The secret is kept in the sealed secrets controller.",
                "Use a passphrase of four random words.",
                "The API key is sent in the Authorization header.",
                "PIN entry is required after 3 failed attempts.",
                "Password reset links expire after 30 minutes.",
            ]
        ),
        "password_code": lambda: rng.choice(
            [
                "password = request.POST.get('password')",
                "api_key = os.environ['API_KEY']",
                "token: ${{ secrets.GITHUB_TOKEN }}",
                "DB_PASSWORD=${DB_PASSWORD}",
                'password: "<your-password>"',
                "secret_key = settings.SECRET_KEY",
                "client_secret: !vault |",
                "password = getpass.getpass()",
                "token = self.token_service.issue(user)",
                '"password": "********"',
                "PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']",
                "auth_token: str = Field(min_length=32)",
                "password=None, token=None",
                "access_token = response.json()['access_token']",
                "The password is config.password unless DB_PASSWORD is set.",
                "password = settings.DATABASES['default']['PASSWORD']",
                "api_key: YOUR_API_KEY",
            ]
        ),
        "url": lambda: rng.choice(
            [
                f"https://github.com/acme/{rng.choice(words)}/pull/{rng.randint(1, 9999)}",
                f"https://docs.internal/{rng.choice(words)}/{sha(12)}?page={rng.randint(1, 40)}",
                f"postgres://localhost:5432/{rng.choice(words)}",
                f"https://user@example.com/{rng.choice(words)}",
            ]
        ),
        "hex_color_and_css": lambda: (
            f"color: #{rand(rng, HEX, 6)}; margin: {rng.randint(0, 40)}px {rng.randint(0, 40)}px;"
        ),
        "markdown_table_numbers": lambda: (
            "| q | revenue | units |\n|---|---|---|\n"
            + "\n".join(f"| Q{i} | {rng.randint(1000, 99999)} | {rng.randint(10, 9999)} |" for i in range(1, 5))
        ),
    }
    per_kind = 1200 // len(generators) + 1
    records: list[dict[str, object]] = []
    for kind, make in generators.items():
        for index in range(per_kind):
            records.append({"id": f"{kind}-{index}", "kind": kind, "text": make()})
    return records


def main() -> None:
    rng = random.Random(SEED)
    OUT.mkdir(parents=True, exist_ok=True)
    plants = planted(rng)
    normal = ordinary(rng)
    for name, records in (("planted.jsonl", plants), ("ordinary.jsonl", normal)):
        with (OUT / name).open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    kinds = {str(record["kind"]) for record in plants}
    print(f"{len(plants)} planted values of {len(kinds)} kinds, {len(normal)} ordinary snippets → {OUT}")


if __name__ == "__main__":
    main()
