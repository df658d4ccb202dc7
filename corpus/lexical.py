"""Keyword terms for scripts written without spaces, and full-width text.

Postgres full-text search splits words on spaces and punctuation, so a Japanese, Chinese
or Thai sentence becomes one enormous "word" that no query matches. Beside the English
tsvector, each chunk therefore carries *character bigrams* of every run of such a
script (plus unigrams, so a one-character query still matches), indexed with the
``simple`` configuration in the same tsvector and GIN index. A query's runs become
bigrams ANDed together. This is the classic CJK n-gram approach (as in Lucene's CJK
analyzer), needs no extension beyond core Postgres, and is locale-independent because
every term is spelled in ASCII (``x65e5x672c`` for 日本): how a server's locale
classifies non-ASCII letters never changes what matches.

All text is NFKC-normalised first, so full-width Latin (ＰｏｓｔｇｒｅＳＱＬ), half-width
katakana and compatibility forms match their ordinary spelling.
"""

from __future__ import annotations

import re
import unicodedata

# Scripts written without spaces between words.
_NO_SPACE_SCRIPTS = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0002ffff"  # CJK Extensions B–F
)
_RUN = re.compile(f"[{_NO_SPACE_SCRIPTS}]+")


def normalise(text: str) -> str:
    """NFKC: full-width and compatibility forms become their ordinary spelling."""
    return unicodedata.normalize("NFKC", text)


def index_text(text: str) -> str:
    """NFKC text with no-space runs set apart, so "PostgreSQL運用" still yields the word "postgresql"."""
    return _RUN.sub(lambda match: f" {match.group(0)} ", normalise(text))


def _term(chars: str) -> str:
    return "x" + "x".join(f"{ord(char):x}" for char in chars)


def runs(text: str) -> list[str]:
    """The runs of no-space scripts in ``text`` (after NFKC)."""
    return _RUN.findall(normalise(text))


def index_terms(text: str) -> str:
    """Space-separated unigram and bigram terms of every no-space run, for the index."""
    terms: list[str] = []
    for run in runs(text):
        terms.extend(_term(char) for char in run)
        terms.extend(_term(run[i : i + 2]) for i in range(len(run) - 1))
    return " ".join(terms)


def query_terms(text: str) -> list[str]:
    """Terms a query's no-space runs must all match: bigrams, or a unigram for one character."""
    terms: list[str] = []
    for run in runs(text):
        if len(run) == 1:
            terms.append(_term(run))
        else:
            terms.extend(_term(run[i : i + 2]) for i in range(len(run) - 1))
    return list(dict.fromkeys(terms))


def latin_part(text: str) -> str:
    """The query with no-space runs removed (for ``websearch_to_tsquery('english', ...)``)."""
    return _RUN.sub(" ", normalise(text)).strip()
