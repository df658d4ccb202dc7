"""The deterministic contradiction check: its labelled set, its precision, and named cases.

Pure text logic: no database, no model. (The suite's session fixture still starts Postgres.)
"""

from __future__ import annotations

import dataclasses

import pytest

from memory.contradictions import Contradiction, contradiction
from memory.evaluation.contradictions import PAIRS, evaluate


def test_the_set_is_large_and_mostly_hard_negatives() -> None:
    assert len(PAIRS) >= 130
    negatives = [pair for pair in PAIRS if not pair[2]]
    assert len(negatives) >= 0.45 * len(PAIRS)
    assert any(label for *_, label in PAIRS)
    assert len({(existing, new) for existing, new, _ in PAIRS}) == len(PAIRS), "no pair twice"


def test_precision_on_the_set_is_at_least_0_9() -> None:
    scores = evaluate()
    print(
        f"\ncontradictions: {scores['pairs']:.0f} pairs, {scores['positives']:.0f} positive, "
        f"{scores['flagged']:.0f} flagged, precision {scores['precision']:.3f}, recall {scores['recall']:.3f}"
    )
    assert scores["pairs"] == len(PAIRS)
    assert scores["flagged"] > 0
    assert scores["precision"] >= 0.9
    # Recall is secondary, but a detector that stops finding things should fail loudly.
    assert scores["recall"] >= 0.75


def test_swapping_the_arguments_gives_the_same_verdict_with_the_values_swapped() -> None:
    for existing, new, _ in PAIRS:
        forward, backward = contradiction(existing, new), contradiction(new, existing)
        assert (forward is None) == (backward is None), (existing, new)
        if forward is not None and backward is not None and forward.kind != "polarity":
            assert (forward.existing_value, forward.new_value) == (backward.new_value, backward.existing_value)


def test_thursdays_and_fridays_contradict() -> None:
    found = contradiction("We ship on Thursdays.", "We ship on Fridays.")
    assert found == Contradiction(
        kind="date",
        existing_value="Thursdays",
        new_value="Fridays",
        reason="the new memory says Fridays where the existing one says Thursdays",
    )


@pytest.mark.parametrize(
    ("existing", "new", "kind", "old_value", "new_value"),
    [
        ("The staging database is db-2.", "Staging now runs on db-3.", "name", "db-2", "db-3"),
        ("Backups run at 01:00 UTC.", "Backups run at 03:00 UTC.", "time", "01:00", "03:00"),
        (
            "The Pro plan costs $49 per seat per month.",
            "The Pro plan costs $59 per seat per month.",
            "number",
            "$49",
            "$59",
        ),
        (
            "We run PostgreSQL 15 in production.",
            "Production runs PostgreSQL 16.",
            "number",
            "PostgreSQL 15",
            "PostgreSQL 16",
        ),
        (
            "The contract with Acme renews on 2024-06-01.",
            "The Acme contract renews on 1 July 2024.",
            "date",
            "2024-06-01",
            "1 July 2024",
        ),
    ],
)
def test_a_changed_value_is_reported_with_its_kind(
    existing: str, new: str, kind: str, old_value: str, new_value: str
) -> None:
    found = contradiction(existing, new)
    assert found is not None
    assert (found.kind, found.existing_value, found.new_value) == (kind, old_value, new_value)


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("We use Kubernetes for all backend services.", "We no longer use Kubernetes for backend services."),
        ("Remote work is allowed on Fridays.", "Remote work is not allowed on Fridays."),
        ("The VPN requires two-factor authentication.", "The VPN doesn't require two-factor authentication."),
        (
            "Two-factor authentication is enabled for all admin accounts.",
            "Two-factor authentication is disabled for admin accounts.",
        ),
        (
            "Pair programming is required for database migrations.",
            "Pair programming is optional for database migrations.",
        ),
    ],
)
def test_negation_and_antonyms_contradict(existing: str, new: str) -> None:
    found = contradiction(existing, new)
    assert found is not None
    assert found.kind == "polarity"


def test_the_reason_for_a_negation_quotes_both_wordings() -> None:
    found = contradiction("Remote work is allowed on Fridays.", "Remote work is not allowed on Fridays.")
    assert found is not None
    assert (found.existing_value, found.new_value) == ("allowed", "not allowed")
    assert found.reason == 'the new memory says "not allowed" where the existing one says "allowed"'


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("The budget is 10k.", "The budget is 10k, approved in March."),
        ("We ship on Thursdays.", "We ship on Thursdays, usually after the 2pm release meeting."),
        ("We run PostgreSQL 15 in production.", "We run PostgreSQL 15 in production and PostgreSQL 16 in staging."),
        ("The free trial lasts 14 days.", "The free trial lasts two weeks."),
        ("The marketing budget for Q3 is 40,000 euros.", "The Q3 marketing budget is €40k."),
        ("Remote work is allowed on Fridays.", "Remote work is allowed on Fridays, but not during the release freeze."),
    ],
)
def test_a_compatible_elaboration_is_not_a_contradiction(existing: str, new: str) -> None:
    assert contradiction(existing, new) is None


@pytest.mark.parametrize(
    ("existing", "new"),
    [
        ("The platform team has 3 engineers.", "Platform deploys take 12 minutes."),
        ("The API rate limit is 600 requests per minute.", "The API timeout is 30 seconds."),
        ("The team has 8 engineers.", "The team has 2 designers."),
        ("Our churn target for this year is 5%.", "Our growth target for this year is 40%."),
        ("The marketing budget for Q3 is 40,000 euros.", "The marketing budget for Q4 is 55,000 euros."),
        ("The staging database is db-2.", "The production database is db-1."),
    ],
)
def test_numbers_and_names_of_different_subjects_are_not_a_contradiction(existing: str, new: str) -> None:
    assert contradiction(existing, new) is None


@pytest.mark.parametrize(
    "new",
    [
        "Should we ship on Fridays instead of Thursdays?",
        "We're considering moving releases to Fridays next quarter.",
        "The cleaners come on Fridays.",
    ],
)
def test_questions_proposals_and_unrelated_statements_are_not_a_contradiction(new: str) -> None:
    assert contradiction("We ship on Thursdays.", new) is None


@pytest.mark.parametrize("text", ["", "   ", "?", "2024-13-45 Q5 $ € 1,2,3 9.9.9.9", "no no never not", "x" * 5000])
def test_odd_input_gives_no_verdict_and_no_error(text: str) -> None:
    assert contradiction(text, text) is None
    assert contradiction(text, "We ship on Thursdays.") is None


def test_the_verdict_is_a_frozen_value() -> None:
    found = contradiction("We ship on Thursdays.", "We ship on Fridays.")
    assert found is not None
    assert found == contradiction("We ship on Thursdays.", "We ship on Fridays.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.kind = "name"  # type: ignore[misc]


@pytest.mark.parametrize("number", ["1" * 400, "1" * 400 + "k", "1" * 20, "25", "9.5"])
def test_a_number_no_clock_has_is_never_an_hour_and_never_a_crash(number: str) -> None:
    """309 digits read as infinity, and int() of it raised (a 500 on every capture beside a
    memory holding one); 25 or 10^19 o'clock is no time to compare."""
    pairs = [
        (f"The team standup is at {number} o'clock.", "The team standup is at 9 o'clock."),
        (f"Budget is {number} EUR.", "Budget is 9 EUR."),
        (f"We hired {number} people.", "We hired 9."),
    ]
    for existing, new in pairs:
        for first, second in ((existing, new), (new, existing)):
            found = contradiction(first, second)
            assert found is None or found.kind != "time", (first, second, found)
