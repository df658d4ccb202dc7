"""A hand-written evaluation set: memories, and questions asking for them in other words.

Used by the paraphrase test (recall@3) and by ``bench/memory_recall.py``. The questions
avoid the memory's distinctive words where English allows, so the dense arm has to carry
the match. ``DUPLICATE_PAIRS`` label pairs of texts as paraphrases (True) or merely
related (False) for the duplicate check's precision and recall.
"""

from __future__ import annotations

PAIRS: list[tuple[str, str]] = [
    ("We ship production releases every Thursday afternoon.", "What day of the week do we deploy to prod?"),
    (
        "The staging database is rebuilt from a snapshot each night at 2am.",
        "When does the test environment's data get reset?",
    ),
    ("Alice prefers short status updates in Slack over long emails.", "How does Alice like to be kept informed?"),
    ("Our Tokyo office opens at 9 in the morning local time.", "What time do the Japan team start work?"),
    (
        "Discounts above twelve percent need sign-off from the commercial lead.",
        "Who must approve a large price reduction?",
    ),
    ("The on-call engineer rotates every Monday at noon.", "When does the pager duty hand over?"),
    ("Customer data must stay in the EU region for GDPR reasons.", "Where are we allowed to store client information?"),
    (
        "Bob is allergic to peanuts; order nut-free food for team lunches.",
        "Any dietary restrictions to consider when catering for the team?",
    ),
    ("The marketing budget for Q3 is 40,000 euros.", "How much money can advertising spend this summer quarter?"),
    ("We chose PostgreSQL over MongoDB because we need transactions.", "Why did we pick a relational database?"),
    (
        "The API rate limit is 600 requests per minute per user.",
        "How many calls can a client make before being throttled?",
    ),
    ("Invoices are sent on the first business day of each month.", "When do customers get billed?"),
    ("Dana leads the Falcon project and reports to the CTO.", "Who is in charge of Falcon?"),
    (
        "Passwords must be rotated every ninety days for admin accounts.",
        "How often do administrators have to change their login secret?",
    ),
    ("The company offsite is planned for the second week of October in Lisbon.", "Where and when is the team retreat?"),
    (
        "Support tickets marked urgent must get a first reply within one hour.",
        "What is the response time target for critical customer issues?",
    ),
    ("Our logo's primary colour is the blue with hex code 2F5BD3.", "Which colour is the brand mark?"),
    (
        "New hires get a laptop and a buddy on their first day.",
        "What does onboarding provide to a newcomer at the start?",
    ),
    ("The nightly backup is kept for thirty days, then deleted.", "How long do we retain the archives of our data?"),
    ("Expense reports over 500 euros need a manager's approval.", "Who has to okay a costly reimbursement claim?"),
    (
        "The mobile app is written in Kotlin for Android and Swift for iOS.",
        "Which programming languages do the phone apps use?",
    ),
    ("We stopped using Jenkins and moved CI to GitHub Actions last spring.", "What runs our build pipelines nowadays?"),
    (
        "The Northwind contract renews automatically every three years.",
        "How long is the agreement with Northwind before it rolls over?",
    ),
    (
        "Meeting rooms on the third floor can be booked through the calendar.",
        "How do I reserve a space for a meeting upstairs?",
    ),
    ("Our largest customer by revenue is Contoso, about a fifth of sales.", "Which client brings in the most money?"),
    ("Feature flags are managed in LaunchDarkly and cleaned up quarterly.", "What tool toggles features on and off?"),
    ("The coffee machine on floor two is descaled every Friday.", "When is the espresso maker maintained?"),
    (
        "Security incidents must be reported to the CISO within 24 hours.",
        "How quickly do we escalate a breach, and to whom?",
    ),
    (
        "We write design documents before starting any project longer than two weeks.",
        "When is a written proposal required before building something?",
    ),
    (
        "The VPN uses WireGuard and requires two-factor authentication.",
        "How do remote staff connect securely to the internal network?",
    ),
    (
        "Holiday requests should be filed at least two weeks in advance.",
        "How much notice do I need to give before taking vacation?",
    ),
    ("Our SLA promises 99.9 percent monthly uptime for the API.", "What availability do we guarantee customers?"),
    ("Charlie is the person to ask about payroll questions.", "Who handles salary matters?"),
    ("The data warehouse refreshes its dashboards every six hours.", "How current are the analytics reports?"),
    (
        "Code reviews need approval from at least one other engineer.",
        "What does a pull request need before it can be merged?",
    ),
    ("Printer paper and office supplies are ordered every other Wednesday.", "When do we restock stationery?"),
]

DUPLICATE_PAIRS: list[tuple[str, str, bool]] = [
    ("The API rate limit is 600 requests per minute.", "The API rate limit is 600 requests a minute.", True),
    ("We ship releases on Thursdays.", "We ship our releases every Thursday.", True),
    (
        "The staging database is rebuilt every night at 2am.",
        "Every night at 2am the staging database gets rebuilt.",
        True,
    ),
    ("Alice prefers short status updates in Slack.", "Alice likes brief status updates on Slack.", True),
    ("Our office in Tokyo opens at 9.", "The Tokyo office opens at nine.", True),
    (
        "Invoices are sent on the first business day of each month.",
        "Each month's first business day is when invoices go out.",
        True,
    ),
    ("Dana leads the Falcon project.", "The Falcon project is led by Dana.", True),
    ("The nightly backup is kept for thirty days.", "Nightly backups are retained for 30 days.", True),
    (
        "Code reviews need approval from one other engineer.",
        "A code review needs one other engineer to approve it.",
        True,
    ),
    ("The VPN requires two-factor authentication.", "Two-factor authentication is required for the VPN.", True),
    ("Holiday requests should be filed two weeks in advance.", "File holiday requests at least two weeks ahead.", True),
    ("Charlie answers payroll questions.", "Payroll questions go to Charlie.", True),
    ("We ship releases on Thursdays.", "We ship releases on Fridays.", False),
    ("The API rate limit is 600 requests per minute.", "The API timeout is 30 seconds.", False),
    ("Alice prefers short status updates in Slack.", "Bob prefers long status reports by email.", False),
    ("Our office in Tokyo opens at 9.", "Our office in Berlin closes at 6.", False),
    ("Dana leads the Falcon project.", "Dana joined the company in 2021.", False),
    ("The nightly backup is kept for thirty days.", "The nightly backup runs at 3am.", False),
    ("Invoices are sent on the first business day of each month.", "Refunds take five business days.", False),
    (
        "Code reviews need approval from one other engineer.",
        "Deployments need approval from the release manager.",
        False,
    ),
    ("The VPN requires two-factor authentication.", "The Wi-Fi password changes monthly.", False),
    ("Holiday requests should be filed two weeks in advance.", "Sick leave must be reported by 10am.", False),
    ("Charlie answers payroll questions.", "Charlie organises the summer party.", False),
    ("The staging database is rebuilt every night at 2am.", "The production database is backed up hourly.", False),
]
