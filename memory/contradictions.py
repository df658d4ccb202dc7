"""A deterministic contradiction check between two short memories (no model).

``contradiction(existing, new)`` returns a ``Contradiction`` when the new memory gives a
different value for the same thing as the existing one, or denies what it affirms, and
``None`` otherwise. It is meant for a new memory and its nearest same-layer neighbours
(already known to be about something similar), so it never judges the topic on its own:
it looks for exactly one precise disagreement between two statements that otherwise
say the same thing.

How it decides, in order:

1. A question or a hedged statement ("we're considering…", "might", "if") asserts
   nothing, so there is no contradiction.
2. Each text is split into tokens and typed *slots*: clock times, weekdays, dates
   (day/month/year, ISO dates, quarters), periods ("every 90 days", "monthly"), amounts
   (money by currency, percentages, sizes, durations, offsets such as "two weeks'
   notice", counts keyed by the noun they count), versions keyed by what they version
   ("PostgreSQL 15", "v2.4.1"), and names (capitalised words, identifiers such as
   ``db-2``, channels such as ``#ops``). Amounts are compared in a common unit, so
   ``14 days`` equals ``two weeks`` and ``€40k`` equals ``40,000 euros``.
3. A slot kind and key *conflicts* when both texts have values for it and none of them
   agree (``Thursday``/``Friday``). ``15`` against ``15 and 16`` is not a conflict: the
   new text only adds a value. More than one conflict usually means the texts are about
   different things ("the Q3 budget is 40k" / "the Q4 budget is 55k"), so no verdict.
4. Everything else must agree: the content words (lightly stemmed, minus function words
   and change markers such as "now" and "moved") and the other slots. If *both* sides
   say something the other does not, they are about different subjects ("churn target"
   / "growth target"), so no verdict. If only one side does, that is added detail.
5. With no slot conflict, the main clauses' polarity is compared: negation ("not",
   "no longer", "never", "n't") and antonyms (enabled/disabled, required/optional,
   allowed/forbidden, on/off, open/closed, automatic/manual). A flip counts only when
   the rest agrees as in step 4 and the texts share at least two words.

Precision matters more than recall: a flag demotes a canonical write to draft. So any
doubt returns ``None``. The check is symmetric: swapping the arguments gives the same
verdict, with the values swapped. Known blind spots: paraphrased predicates ("kept" /
"retained"), a name as the first word of a sentence (without a lexicon it cannot be
told apart from any capitalised word), antonyms outside the list ("frozen" / "hiring"),
and a more specific subject on one side ("the security team's rotation"). Scored on
``memory.evaluation.contradictions``.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from corpus.lexical import normalise

Kind = Literal["number", "date", "time", "name", "polarity"]


@dataclass(frozen=True)
class Contradiction:
    """Why the new memory contradicts the existing one.

    ``kind`` is what disagrees. ``existing_value`` and ``new_value`` are the disagreeing
    values as written; for ``polarity``, they are the affirmed and the denied wording.
    ``reason`` is one short sentence for a person.
    """

    kind: Kind
    existing_value: str
    new_value: str
    reason: str


# --- Vocabulary (lower case) -------------------------------------------------------------

_WEEKDAYS = {name: i for i, name in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
_MONTH_NAMES = "january february march april may june july august september october november december".split()
_MONTHS = {name: i + 1 for i, name in enumerate(_MONTH_NAMES)}
# Abbreviations and the months that are also verbs ("may", "march") count only capitalised.
_MONTH_ABBREVIATIONS = {name[:3]: i + 1 for i, name in enumerate(_MONTH_NAMES)} | {"sept": 9}
_WORD_NUMBERS = dict(
    zip(
        "zero one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty "
        "sixty ninety hundred".split(),
        (*range(13), 15, 20, 30, 40, 50, 60, 90, 100),
        strict=True,
    )
)
# Minutes per unit. A month is 30 days, so "90 days" equals "three months".
_MINUTES = {"second": 1 / 60, "minute": 1, "hour": 60, "day": 1440, "week": 10080, "month": 43200, "year": 525600}
_UNIT_ALIASES = {"second": "s sec secs", "minute": "min mins", "hour": "h hr hrs", "day": "", "week": "", "month": ""}
_DURATION_UNITS = {
    alias: minutes
    for unit, minutes in _MINUTES.items()
    for alias in (unit, unit + "s", *_UNIT_ALIASES.get(unit, "").split())
}
_FREQUENCY_WORDS = {"hourly": 60, "nightly": 1440, "daily": 1440, "weekly": 10080, "biweekly": 20160}
_FREQUENCY_WORDS |= {"fortnightly": 20160, "monthly": 43200, "quarterly": 129600, "yearly": 525600, "annually": 525600}
_SIZE_UNITS = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP"}
_CURRENCY_CODES = {"usd": "USD", "eur": "EUR", "gbp": "GBP"}
_CURRENCY_WORDS = _CURRENCY_CODES | {word: "USD" for word in ("dollar", "dollars")}
_CURRENCY_WORDS |= {word: "EUR" for word in ("euro", "euros")} | {word: "GBP" for word in ("pound", "pounds")}
_MULTIPLIERS = {"k": 10**3, "thousand": 10**3, "m": 10**6, "million": 10**6, "bn": 10**9, "billion": 10**9}
# Words that may stand between a number and what it counts: "one other engineer", "10 working days".
_NUMBER_ADJECTIVES = set("other more extra additional full business working calendar consecutive".split())
# A duration followed by one of these is an offset from an event, not a span of time.
_OFFSET_WORDS = set("in ahead before after prior earlier ago notice beforehand".split())
_DAY_PARTS = {"morning": 0, "afternoon": 12, "evening": 12, "night": 12}

_STOPWORDS = set(
    """a an the our we us you your they them their it its i he she his her him this that these those there here
    who whom whose which what where when how is are was were be been being am has have had do does did will would
    shall should can could must to of in on at by for from with about as into onto over under after before until
    till through via and or nor so then than too very just all every each any both per up out off own same such
    also only 's s get gets got""".split()
)
# Words that mark a change or the present, not a different subject: "staging *now runs* on db-3".
_FILLERS = set(
    """now currently presently nowadays today moved move changed change switched switch happen happens happened
    run runs running instead again anymore longer still yet already usually typically generally normally
    always""".split()
)
_NEGATIONS = set("not no never cannot nobody none nothing".split())
# An antonym stands for its counterpart plus a negation: "disabled" means "not enabled".
_ANTONYMS = {
    word: counterpart
    for word, _, counterpart in (
        pair.partition(":")
        for pair in """disabled:enabled disable:enable off:on optional:required forbidden:allowed
        prohibited:allowed banned:allowed disallowed:allowed closed:open private:public privately:publicly
        inactive:active unavailable:available ineligible:eligible unsupported:supported unpaid:paid
        excluded:included manual:automatic manually:automatically stopped:""".split()
    )
}
_SYNONYMS = {"permitted": "allowed", "mandatory": "required", "compulsory": "required"}
_HEDGES = set(
    """considering consider evaluating evaluate trialling trialing piloting exploring explore proposal propose
    proposed proposing might maybe perhaps possibly if whether suggest suggestion suggested idea tbd
    hypothetically""".split()
)
_HEDGE_PHRASES = ("plan to", "planning to", "thinking about", "thinking of", "not sure", "looking into")
_CLAUSE_BREAK = re.compile(r"[;:,.!?()]|but|except|unless|although|though|whereas|while", re.IGNORECASE)

_TOKEN = re.compile(
    r"""
    (?P<iso>\d{4}-\d{2}-\d{2})\b
    | (?P<clock>\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?![a-z]) | \d{1,2}:\d{2}\b)
    | (?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:[a-z]+)? | \d+(?:\.\d+)*(?:[a-z]+)?)
    | (?P<word>[#@]?[^\W\d_]\w*(?:[-'.]\w+)*)
    | (?P<symbol>[$€£%])
    | (?P<punct>[;:,.!?()])
    """,
    re.VERBOSE | re.IGNORECASE,
)
_NOUN = re.compile(r"[a-z][a-z-]*")


def _stem(word: str) -> str:
    """A light suffix stripper, enough to match "deployments"/"deploy" and "required"/"requires"."""
    word = word.lower().removesuffix("'s")
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith(("sses", "ches", "shes", "xes", "oes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ment", "ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "ls":
                word = word[:-1]  # "planning" -> "plan", but "install" stays
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


_STOP_STEMS = {_stem(word) for word in _STOPWORDS}
_FILLER_STEMS = {_stem(word) for word in _FILLERS}


def _content(word: str) -> bool:
    """Whether a lower-case word could name what a number counts ("engineers", not "of")."""
    return bool(_NOUN.fullmatch(word)) and _stem(word) not in _STOP_STEMS


# --- Tokens ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Token:
    """One token of a statement, whether it opens a clause, and whether a slot has taken it.

    ``low`` and ``capitalised`` are worked out once: read as properties, they were a third of
    the time of a memory import's contradiction checks (millions of reads)."""

    text: str
    kind: str
    clause_start: bool
    used: bool = False
    low: str = field(init=False)
    capitalised: bool = field(init=False)

    def __post_init__(self) -> None:
        self.low = self.text.lower()
        self.capitalised = self.kind == "word" and any(char.isupper() for char in self.text)


def _tokenise(text: str) -> list[_Token]:
    """The tokens of an NFKC-normalised statement."""
    text = normalise(text).replace("’", "'").replace("‘", "'")
    tokens: list[_Token] = []
    clause_start = True
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "word"
        tokens.append(_Token(match.group(0), kind, clause_start))
        clause_start = kind == "punct" and match.group(0) in ";:.!?("
    return tokens


def _number(text: str) -> float | None:
    """The value of "40,000", "10k", "4.2" or a number word, else None."""
    low = text.lower()
    if low in _WORD_NUMBERS:
        return float(_WORD_NUMBERS[low])
    match = re.fullmatch(r"(\d[\d,]*(?:\.\d+)?)(k|m|bn)?", low)
    if match is None:
        return None
    value = float(match.group(1).replace(",", ""))
    value = value * _MULTIPLIERS[match.group(2)] if match.group(2) else value
    # 309 digits read as infinity: no amount, and no hour (int() of it raises).
    return value if math.isfinite(value) else None


def _clock(text: str) -> int | None:
    """Minutes after midnight for "2am", "5:30pm", "09:30"."""
    match = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?", text.lower())
    if match is None:
        return None
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), (match.group(3) or "")[:1]
    if half and not 1 <= hour <= 12:
        return None
    if half == "p" and hour != 12:
        hour += 12
    elif half == "a" and hour == 12:
        hour = 0
    return hour * 60 + minute if hour < 24 and minute < 60 else None


def _day(text: str) -> int | None:
    match = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)?", text.lower())
    return int(match.group(1)) if match and 1 <= int(match.group(1)) <= 31 else None


def _month(token: _Token | None) -> int | None:
    if token is None or token.used or token.kind != "word":
        return None
    low = token.low.rstrip(".")
    if token.text[0].isupper():
        return _MONTHS.get(low) or _MONTH_ABBREVIATIONS.get(low)
    return _MONTHS.get(low) if low not in ("may", "march") else None


def _year(text: str) -> int | None:
    return int(text) if re.fullmatch(r"(?:199|20\d)\d", text) else None


# --- Slots -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Slot:
    """A typed value in a statement. Values with the same ``kind`` and ``key`` are comparable."""

    kind: Kind
    key: str
    value: tuple[object, ...]
    text: str


class _Scanner:
    """Walks a statement's tokens once, turning value-bearing spans into slots."""

    def __init__(self, tokens: list[_Token], capitalised_elsewhere: set[str]) -> None:
        self.tokens = tokens
        self.capitalised_elsewhere = capitalised_elsewhere
        self.slots: list[_Slot] = []
        # Each token's closest earlier content word in its clause, in one forward pass: looked
        # up for every bare number, scanning back from each was quadratic ("1 " * 10,000).
        self._previous: list[str] = []
        last = ""
        for token in tokens:
            self._previous.append(last)
            if token.kind == "punct":
                last = ""
            elif token.kind == "word" and _stem(token.low) not in _STOP_STEMS:
                last = _stem(token.low)
        self._previous.append(last)

    def at(self, index: int) -> _Token | None:
        return self.tokens[index] if 0 <= index < len(self.tokens) else None

    def low(self, index: int) -> str:
        """The lower-case text at ``index``, or "" past either end or when a slot took it."""
        token = self.at(index)
        return token.low if token is not None and not token.used else ""

    def kind(self, index: int) -> str:
        token = self.at(index)
        return token.kind if token is not None and not token.used else ""

    def take(self, start: int, end: int, kind: Kind, key: str, value: tuple[object, ...]) -> int:
        """Record ``tokens[start:end]`` as one slot; returns where scanning resumes."""
        for token in self.tokens[start:end]:
            token.used = True
        text = " ".join(token.text for token in self.tokens[start:end])
        text = re.sub(r"([$€£]) ", r"\1", text).replace(" %", "%")
        self.slots.append(_Slot(kind, key, value, text))
        return end

    def scan(self) -> list[_Slot]:
        index = 0
        while index < len(self.tokens):
            end = None if self.tokens[index].used else self.slot_at(index)
            index = end if end is not None else index + 1
        self.names()
        return self.slots

    def previous_content(self, index: int) -> str:
        """The closest earlier content word in the clause: what a bare number measures ("net 30")."""
        return self._previous[min(max(index, 0), len(self.tokens))]

    def slot_at(self, i: int) -> int | None:
        """A slot starting at token ``i``: returns the index after it, or None."""
        token, low = self.tokens[i], self.tokens[i].low
        if token.kind == "iso":
            parts = tuple(int(part) for part in low.split("-"))
            try:
                date(*parts)
            except ValueError:
                return None
            return self.take(i, i + 1, "date", "date", parts)
        if token.kind == "clock":
            minutes = _clock(low)
            return None if minutes is None else self.take(i, i + 1, "time", "time", (minutes,))
        if low in ("noon", "midday", "midnight"):
            return self.take(i, i + 1, "time", "time", (0 if low == "midnight" else 720,))
        if token.kind == "symbol" and token.text in _CURRENCY_SYMBOLS:
            return self.money(i, _CURRENCY_SYMBOLS[token.text])
        if low in _CURRENCY_CODES and self.kind(i + 1) == "number":
            return self.money(i, _CURRENCY_CODES[low])  # "EUR 2000"
        if re.fullmatch(r"q[1-4]", low):
            of_year = _year(self.low(i + 1))
            return self.take(i, i + 1 + (of_year is not None), "date", "quarter", (int(low[1]), of_year))
        if low.removesuffix("s") in _WEEKDAYS:
            return self.take(i, i + 1, "date", "weekday", (_WEEKDAYS[low.removesuffix("s")],))
        if low in _FREQUENCY_WORDS:
            return self.take(i, i + 1, "time", "period", (_FREQUENCY_WORDS[low],))
        if low in ("every", "per", "each") and self.low(i + 1) in _DURATION_UNITS:
            return self.take(i, i + 2, "time", "period", (_DURATION_UNITS[self.low(i + 1)],))
        if low == "every" and self.low(i + 2) in _DURATION_UNITS:
            count = (
                _number(self.low(i + 1)) if self.kind(i + 1) == "number" or self.low(i + 1) in _WORD_NUMBERS else None
            )
            if count is not None:
                return self.take(i, i + 3, "time", "period", (count * _DURATION_UNITS[self.low(i + 2)],))
        month = _month(token)
        if month is not None:
            return self.date_from_month(i, month)
        if token.kind == "number" or low in _WORD_NUMBERS:
            return self.number(i)
        if token.kind == "word" and re.fullmatch(r"v\d+(?:\.\d+)*", low):
            return self.take(i, i + 1, "number", "version:v", (low[1:],))
        return None

    def money(self, start: int, currency: str) -> int | None:
        """An amount after a currency sign or code, with an optional "k"/"million"."""
        value = _number(self.low(start + 1))
        if value is None:
            return None
        end = start + 2
        if self.low(end) in _MULTIPLIERS:
            value, end = value * _MULTIPLIERS[self.low(end)], end + 1
        return self.take(start, end, "number", f"money:{currency}", (value,))

    def date_from_month(self, i: int, month: int) -> int:
        """A month with the day and year around it: "15 March", "March 15th, 2024", "July"."""
        start, end, day, year = i, i + 1, None, None
        if self.kind(i - 1) == "number" and _day(self.low(i - 1)) is not None:
            start, day = i - 1, _day(self.low(i - 1))
        elif self.kind(i + 1) == "number" and _day(self.low(i + 1)) is not None:
            day, end = _day(self.low(i + 1)), i + 2
            if self.low(end) == "," and _year(self.low(end + 1)) is not None:
                end += 1
        if _year(self.low(end)) is not None:
            year, end = _year(self.low(end)), end + 1
        return self.take(start, end, "date", "date", (year, month, day))

    def number(self, i: int) -> int | None:
        """A slot for the number at ``i``, typed by what follows or precedes it."""
        token, low = self.tokens[i], self.tokens[i].low
        if low.endswith("x") and _number(low[:-1]) is not None:
            return self.take(i, i + 1, "number", "multiplier", (_number(low[:-1]),))
        merged = re.fullmatch(r"([\d.,]+)(kb|mb|gb|tb)", low)
        amount = _number(merged.group(1)) if merged else None
        if merged and amount is not None:
            return self.take(i, i + 1, "number", "size", (amount * _SIZE_UNITS[merged.group(2)],))
        if token.kind == "number" and low.count(".") >= 2:
            return self.take(i, i + 1, "number", f"version:{self.previous_content(i)}", (low,))
        ordinal = re.fullmatch(r"(\d{1,2})(?:st|nd|rd|th)", low)
        if ordinal is not None:
            return self.ordinal(i, int(ordinal.group(1)))
        value = _number(low)
        if value is None:
            return None
        month = _month(self.at(i + 1))
        if month is not None and _day(low) is not None:
            return self.date_from_month(i + 1, month)  # "1 July 2024"
        after = i + 1
        while self.low(after) in _NUMBER_ADJECTIVES:
            after += 1
        if self.low(after) in _MULTIPLIERS:
            value, after = value * _MULTIPLIERS[self.low(after)], after + 1
        unit = self.low(after)
        if unit in _CURRENCY_WORDS:
            return self.take(i, after + 1, "number", f"money:{_CURRENCY_WORDS[unit]}", (value,))
        if unit in ("%", "percent") or (unit == "per" and self.low(after + 1) == "cent"):
            return self.take(i, after + 1 + (unit == "per"), "number", "percent", (value,))
        if unit in _SIZE_UNITS:
            return self.take(i, after + 1, "number", "size", (value * _SIZE_UNITS[unit],))
        if unit in _DURATION_UNITS:
            # "2 weeks in advance" is an offset and "2 hours" a span: never compare the two.
            key = "offset" if self.low(after + 1) in _OFFSET_WORDS else "duration"
            return self.take(i, after + 1, "number", key, (round(value * _DURATION_UNITS[unit], 3),))
        if low in _WORD_NUMBERS:
            # A number word counts only when it counts something: "one" is often a pronoun.
            return self.take(i, after + 1, "number", f"count:{_stem(unit)}", (value,)) if _content(unit) else None
        hour_like = value <= 24 and "." not in low
        at_hour = self.low(i - 1) == "at" and hour_like
        if (at_hour and not unit.isalpha()) or (unit == "o'clock" and hour_like):
            return self.clock_hour(i, int(value))
        if at_hour and unit == "in" and self.low(i + 3) in _DAY_PARTS:
            return self.clock_hour(i, int(value))  # "at 9 in the morning"
        if _year(low) is not None and not (unit.endswith("s") and _content(unit)):
            return self.take(i, i + 1, "date", "date", (_year(low), None, None))
        previous = self.at(i - 1)
        if previous is not None and previous.capitalised and not previous.used and "," not in low:
            return self.take(i - 1, i + 1, "number", f"version:{previous.low}", (low,))  # "Node 18"
        if "." in low and not unit.isalpha():
            return self.take(i, i + 1, "number", f"version:{self.previous_content(i)}", (low,))
        if _content(unit):
            return self.take(i, after + 1, "number", f"count:{_stem(unit)}", (value,))
        return self.take(i, i + 1, "number", f"bare:{self.previous_content(i)}", (value,))

    def ordinal(self, i: int, day: int) -> int:
        """ "the 5th of each month" is a day of the month; "the 3rd floor" is an ordinal of a floor."""
        noun = self.low(i + 1)
        if noun != "of" and _content(noun):
            return self.take(i, i + 2, "number", f"ordinal:{_stem(noun)}", (float(day),))
        return self.take(i, i + 1, "date", "date", (None, None, day))

    def clock_hour(self, i: int, hour: int) -> int:
        """ "at 9", "9 o'clock", "9 in the morning": a whole hour."""
        end = i + 1
        if self.low(end) == "o'clock":
            end += 1
        elif self.low(end) == "in" and self.low(end + 2) in _DAY_PARTS:
            hour += _DAY_PARTS[self.low(end + 2)] if hour < 12 else 0
            end += 3
        return self.take(i, end, "time", "time", (hour * 60,))

    def names(self) -> None:
        """Capitalised words, identifiers and channels left over become name slots.

        Consecutive name words are one name ("GitHub Actions"). A capitalised word that
        opens a clause is a name only if it looks like one anyway (all capitals, inner
        capitals) or is capitalised mid-sentence in either statement: "Payroll
        questions…" is no name, but "Sentry is…" may be.
        """
        run: list[int] = []
        for index, token in enumerate([*self.tokens, _Token(".", "punct", False)]):
            if not token.used and token.kind == "word" and self.name_like(token):
                if run and token.clause_start:
                    self.take(run[0], run[-1] + 1, "name", "name", (" ".join(self.tokens[j].low for j in run),))
                    run = []
                run.append(index)
            elif run:
                self.take(run[0], run[-1] + 1, "name", "name", (" ".join(self.tokens[j].low for j in run),))
                run = []

    def name_like(self, token: _Token) -> bool:
        text = token.text
        if text.startswith(("#", "@")) or ("-" in text and re.search(r"\d", text)):
            return True  # channels and identifiers: #ops-alerts, db-2, eu-west-1
        if not token.capitalised or text == "I" or token.low in _WEEKDAYS or token.low in _MONTHS:
            return False
        if not token.clause_start:
            return True
        distinctive = (text.isupper() and len(text) > 1) or any(char.isupper() for char in text[1:])
        return distinctive or token.low in self.capitalised_elsewhere


# --- Reading a statement -----------------------------------------------------------------


@dataclass
class _Reading:
    """What the comparison needs from one statement."""

    tokens: list[_Token]
    slots: list[_Slot]
    words: set[str] = field(default_factory=set)
    negated: bool = False
    polarity: list[str] = field(default_factory=list)  # the main clause's marker and the words after it


def _capitalised_mid_sentence(tokens: list[_Token]) -> set[str]:
    return {token.low for token in tokens if token.capitalised and not token.clause_start}


@functools.lru_cache(maxsize=256)
def _names_mid_sentence(text: str) -> frozenset[str]:
    """``_capitalised_mid_sentence`` of a whole text, kept for the next check: an import
    compares each record with several neighbours, each a fresh tokenisation before."""
    return frozenset(_capitalised_mid_sentence(_tokenise(text)))


def _read(text: str, other: str) -> _Reading:
    """Slots, content words and main-clause polarity of ``text``, compared with ``other``.

    ``other`` matters for names only: a capitalised word that opens a sentence here is a
    name if either statement capitalises it mid-sentence.
    """
    tokens = _tokenise(text)
    elsewhere = _capitalised_mid_sentence(tokens) | _names_mid_sentence(other)
    reading = _Reading(tokens=tokens, slots=_Scanner(tokens, elsewhere).scan())
    main = _main_clause(tokens)
    flips = 0
    for position, token in enumerate(tokens):
        if token.used or token.kind != "word":
            continue
        low = token.low
        if low == "longer" and position and tokens[position - 1].low == "no":
            continue  # counted with its "no"
        marker = low in _NEGATIONS or low.endswith("n't") or low in _ANTONYMS
        if marker and position in main:
            flips += 1
            if not reading.polarity:
                reading.polarity = _marker_phrase(tokens, position, main)
        if low in _ANTONYMS:
            low = _ANTONYMS[low]
        elif marker:
            continue
        word = _stem(_SYNONYMS.get(low, low))
        if low and word not in _STOP_STEMS and word not in _FILLER_STEMS and low not in _HEDGES:
            reading.words.add(word)
    # "each month" is a period, but "of the month" only a word: let the unit word match.
    reading.words |= {
        _stem(slot.text.split()[-1]) for slot in reading.slots if slot.key == "period" and " " in slot.text
    }
    reading.negated = flips % 2 == 1
    return reading


def _main_clause(tokens: list[_Token]) -> set[int]:
    """Token positions of the first clause: the claim, before any exception or addition."""
    positions: set[int] = set()
    for position, token in enumerate(tokens):
        if _CLAUSE_BREAK.fullmatch(token.text):
            if positions:
                break
            continue
        positions.add(position)
    return positions


def _marker_phrase(tokens: list[_Token], position: int, main: set[int]) -> list[str]:
    """A polarity marker and the words up to the first content word: "not allowed", "cannot be refunded"."""
    words = [tokens[position].text]
    if tokens[position].low in _ANTONYMS:
        return words
    for later in range(position + 1, min(position + 4, len(tokens))):
        if later not in main:
            break
        words.append(tokens[later].text)
        if _stem(tokens[later].low) not in _STOP_STEMS | {"longer"}:
            break
    return words


def _hedged(text: str) -> bool:
    """A question or a statement that asserts nothing yet: "we're considering Fridays"."""
    low = normalise(text).lower().replace("’", "'")
    words = set(re.findall(r"[a-z']+", low))
    return "?" in low or bool(words & _HEDGES) or any(phrase in low for phrase in _HEDGE_PHRASES)


# --- Comparison --------------------------------------------------------------------------


def _identity(slot: _Slot) -> tuple[object, ...]:
    """What two slots must share to agree exactly; amounts are rounded to 9 significant digits."""
    value = tuple(float(f"{part:.9g}") if isinstance(part, float | int) else part for part in slot.value)
    return (slot.kind, slot.key, value)


def _unmatched(mine: list[_Slot], theirs: list[_Slot]) -> list[_Slot]:
    """My slots that agree with none of theirs.

    Dates agree where both are known ("2024" agrees with "1 July 2024"), so they are
    compared pairwise; everything else agrees only exactly, which a set can answer.
    """
    exact = {_identity(slot) for slot in theirs}
    # Each distinct date once, and each of mine decided once: "1990 1990 …" against
    # "1991 1991 …" compared every pair (20,000 characters each: 46 s in a capture).
    dates = list({(slot.key, slot.value): slot for slot in theirs if slot.key in ("date", "quarter")}.values())
    decided: dict[tuple[object, ...], bool] = {}

    def agrees_with_a_date(slot: _Slot) -> bool:
        found = decided.get((slot.key, slot.value))
        if found is None:
            found = any(
                other.key == slot.key
                and all(a is None or b is None or a == b for a, b in zip(slot.value, other.value, strict=True))
                for other in dates
            )
            decided[(slot.key, slot.value)] = found
        return found

    return [slot for slot in mine if _identity(slot) not in exact and not agrees_with_a_date(slot)]


def _conflicts(left: list[_Slot], right: list[_Slot]) -> list[tuple[_Slot, _Slot]] | None:
    """Pairs of disagreeing slots, or None when one kind/key disagrees in several values.

    A kind/key conflicts when both sides have values for it and none agree. Names are
    different: a sentence holds several, so each side having one the other lacks is enough.
    """
    conflicts: list[tuple[_Slot, _Slot]] = []
    for group in sorted({(slot.kind, slot.key) for slot in left} & {(slot.kind, slot.key) for slot in right}):
        mine = [slot for slot in left if (slot.kind, slot.key) == group]
        theirs = [slot for slot in right if (slot.kind, slot.key) == group]
        only_mine, only_theirs = _unmatched(mine, theirs), _unmatched(theirs, mine)
        disjoint = len(only_mine) == len(mine) and len(only_theirs) == len(theirs)
        if disjoint or (group[0] == "name" and only_mine and only_theirs):
            if len(only_mine) > 1 or len(only_theirs) > 1:
                return None
            conflicts.append((only_mine[0], only_theirs[0]))
    return conflicts


def _extra(reading: _Reading, other: _Reading, skip: _Slot | None) -> bool:
    """Whether ``reading`` says anything ``other`` does not, apart from the slot ``skip``."""
    slots = [slot for slot in _unmatched(reading.slots, other.slots) if slot is not skip]
    return bool(reading.words - other.words or slots)


def _shared(left: _Reading, right: _Reading) -> int:
    """How many content words and names the two statements have in common."""
    names = {slot.value for slot in left.slots if slot.kind == "name"}
    return len(left.words & right.words) + len(names & {slot.value for slot in right.slots if slot.kind == "name"})


def contradiction(existing: str, new: str) -> Contradiction | None:
    """The contradiction between an existing memory and a new one, or None.

    Pure and deterministic. Swapping the arguments gives the same verdict with the values
    swapped. Returns None for questions and hedged statements, for statements about
    different subjects, and whenever the texts differ in more than one value.
    """
    if _hedged(existing) or _hedged(new):
        return None
    old, fresh = _read(existing, new), _read(new, existing)
    conflicts = _conflicts(old.slots, fresh.slots)
    if conflicts is None or len(conflicts) > 1:
        return None
    if conflicts:
        was, now = conflicts[0]
        # A polarity flip as well as a new value is two differences: "not on Mondays" vs "on Fridays".
        if old.negated != fresh.negated or _shared(old, fresh) < 1:
            return None
        if _extra(old, fresh, was) and _extra(fresh, old, now):
            return None
        reason = f"the new memory says {now.text} where the existing one says {was.text}"
        return Contradiction(kind=was.kind, existing_value=was.text, new_value=now.text, reason=reason)
    if old.negated == fresh.negated or _shared(old, fresh) < 2:
        return None
    if _extra(old, fresh, None) and _extra(fresh, old, None):
        return None
    was_text, now_text = _polarity_text(old, fresh), _polarity_text(fresh, old)
    reason = f'the new memory says "{now_text}" where the existing one says "{was_text}"'
    return Contradiction(kind="polarity", existing_value=was_text, new_value=now_text, reason=reason)


def _polarity_text(reading: _Reading, other: _Reading) -> str:
    """How ``reading`` words the disputed predicate: its own marker phrase, or the affirmed word."""
    if reading.polarity:
        return " ".join(reading.polarity)
    denied = other.polarity[-1].lower() if other.polarity else ""
    target = _stem(_SYNONYMS.get(denied, _ANTONYMS.get(denied, denied)))
    for token in reading.tokens:
        if token.kind == "word" and _stem(_SYNONYMS.get(token.low, token.low)) == target:
            return token.text
    return " ".join(token.text for token in reading.tokens if token.kind != "punct")
