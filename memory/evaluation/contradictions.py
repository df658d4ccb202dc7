"""A hand-written evaluation set for the deterministic contradiction check.

Each pair is ``(existing, new, label)``: ``label`` is True when the new memory contradicts
the existing one. The pairs are the kinds of things a team writes down (engineering,
sales, HR, ops, product), in three blocks:

- the first 207 pairs were written in full, labels included, *before* the detector in
  ``memory.contradictions`` existed (the detector was then built against them);
- 75 more were written after the detector, and scored once before it was changed again
  (precision 0.97, recall 0.83 on that block at the time);
- a further 55 were written after that, and scored once (precision 1.0, recall 0.88).

Labels were never edited afterwards to suit the detector. Cases may be added, but a
label changes only if it was wrong about the English. The held-out scores are the
honest estimate; the first block flatters the detector.

What counts as a contradiction: both statements are about the same attribute of the same
thing, and they cannot both be true when the new one is written. The new one gives a
different value (weekday, date, time, number, version, person, tool, place), or denies
what the existing one affirms (``we use X`` / ``we no longer use X``; ``required`` /
``optional``). A change over time ("staging now runs on db-3") counts: the old memory has
stopped being true.

What does not count, and is deliberately over-represented among the negatives, which
share words and shapes with their existing statement so that surface matching is not
enough: the same value in other words or units (``14 days`` / ``two weeks``); added
detail; a different attribute of the same thing (the API rate limit / the API timeout); a
different thing of the same kind (the Q3 budget / the Q4 budget, the Pro plan / the Team
plan); numbers that measure different things; compatible tiers and exceptions
(``discounts over 12 % need the commercial lead`` / ``over 30 % need the CFO``);
questions; proposals and evaluations ("we're considering Fridays"); and unrelated
statements that happen to share a weekday.

``evaluate()`` scores ``memory.contradictions.contradiction`` on the set, for tests and
for the benchmark.
"""

from __future__ import annotations

from memory.contradictions import contradiction

PAIRS: list[tuple[str, str, bool]] = [
    # --- Contradictions -----------------------------------------------------------------
    # Weekdays.
    ("We ship on Thursdays.", "We ship on Fridays.", True),
    (
        "Production releases go out every Thursday afternoon.",
        "Production releases now go out every Tuesday afternoon.",
        True,
    ),
    (
        "The weekly sales pipeline review is on Monday mornings.",
        "The weekly sales pipeline review happens on Wednesday mornings.",
        True,
    ),
    ("The on-call rotation hands over every Monday at noon.", "On-call now hands over on Fridays at noon.", True),
    ("Payroll runs on the last Friday of the month.", "Payroll runs on the last Thursday of each month.", True),
    ("Sprint planning is on Tuesday.", "Sprint planning moved to Wednesday.", True),
    ("The all-hands meeting is every other Friday.", "All-hands is every other Thursday now.", True),
    ("Deployments to production happen on Thursdays.", "We deploy to production on Fridays now.", True),
    ("Lunch is catered on Wednesdays.", "Catered lunch is on Tuesdays.", True),
    (
        "The board meeting is on the first Monday of the month.",
        "The board meeting is on the first Tuesday of the month.",
        True,
    ),
    # Months, dates, quarters.
    ("The company offsite is in October.", "The company offsite will be in September this year.", True),
    ("The fiscal year starts in April.", "Our fiscal year starts in January.", True),
    ("Performance reviews are due by 15 March.", "Performance reviews are due by 31 March.", True),
    ("The contract with Acme renews on 2024-06-01.", "The Acme contract renews on 2024-07-01.", True),
    ("The contract with Acme renews on 2024-06-01.", "The Acme contract renews on 1 July 2024.", True),
    ("The v3 launch date is May 12.", "The v3 launch date has moved to June 2.", True),
    ("Open enrolment for benefits closes on November 30.", "Benefits open enrolment closes on December 15.", True),
    ("The SOC 2 audit is scheduled for Q3.", "The SOC 2 audit is scheduled for Q4.", True),
    ("The release freeze starts on December 15.", "The release freeze starts on December 18.", True),
    # Clock times.
    (
        "The staging database is rebuilt every night at 2am.",
        "The staging database is rebuilt every night at 4am.",
        True,
    ),
    ("Daily standup is at 9:30.", "Daily standup is at 10:00.", True),
    ("The support desk opens at 8am CET.", "The support desk opens at 9am CET.", True),
    ("Backups run at 01:00 UTC.", "Backups run at 03:00 UTC.", True),
    ("The Tokyo office opens at 9 in the morning.", "The Tokyo office opens at 10 in the morning.", True),
    ("Sick leave must be reported by 10am.", "Sick leave must be reported by 9am.", True),
    ("The office closes at 6pm.", "The office closes at 5:30pm.", True),
    # Numbers, prices, percentages, durations.
    ("The API rate limit is 600 requests per minute.", "The API rate limit is 1000 requests per minute.", True),
    ("The marketing budget for Q3 is 40,000 euros.", "The marketing budget for Q3 is 55,000 euros.", True),
    (
        "Discounts above 12% need sign-off from the commercial lead.",
        "Discounts above 20% need sign-off from the commercial lead.",
        True,
    ),
    ("The Pro plan costs $49 per seat per month.", "The Pro plan costs $59 per seat per month.", True),
    ("The nightly backup is kept for 30 days.", "Nightly backups are retained for 90 days.", True),
    ("Admin passwords must be rotated every 90 days.", "Admin passwords must be rotated every 60 days.", True),
    (
        "Urgent tickets must get a first reply within one hour.",
        "Urgent tickets must get a first reply within four hours.",
        True,
    ),
    ("New hires have a 6 month probation period.", "The probation period for new hires is 3 months.", True),
    ("Employees get 25 days of paid holiday.", "Employees get 28 days of paid holiday per year.", True),
    ("The free trial lasts 14 days.", "The free trial lasts 30 days.", True),
    ("Our churn target for this year is 5%.", "Our churn target for this year is 3%.", True),
    ("The VAT rate on our invoices is 19%.", "We charge 21% VAT on our invoices.", True),
    ("The max upload size is 25 MB.", "Max upload size is 100 MB.", True),
    ("The Kubernetes cluster has 12 nodes.", "The Kubernetes cluster now has 16 nodes.", True),
    (
        "Code reviews need approval from one other engineer.",
        "Code reviews need approval from two other engineers.",
        True,
    ),
    ("The referral bonus is €2,000.", "The referral bonus is €1,500.", True),
    ("Test coverage must stay above 80 percent.", "Test coverage must stay above 70 percent.", True),
    ("The API timeout is 30 seconds.", "The API timeout is 60 seconds.", True),
    ("The standard payment terms are net 30.", "Standard payment terms are net 45.", True),
    ("The team has 8 engineers.", "The team has 11 engineers.", True),
    ("The office Wi-Fi password changes every 3 months.", "The office Wi-Fi password changes every month.", True),
    (
        "Expense claims over 500 dollars need a manager's approval.",
        "Expense claims over 250 dollars need a manager's approval.",
        True,
    ),
    (
        "Our sales commission is 8% of first-year revenue.",
        "Sales reps earn a 10% commission on first-year revenue.",
        True,
    ),
    ("The on-call engineer gets a stipend of $300 per week.", "The weekly on-call stipend is $250.", True),
    ("The data retention period for logs is 12 months.", "Logs are retained for 6 months.", True),
    # Versions.
    ("We run PostgreSQL 15 in production.", "Production runs PostgreSQL 16.", True),
    ("The minimum supported Python version is 3.10.", "The minimum supported Python version is 3.11.", True),
    ("The mobile app's current release is v2.4.1.", "The current mobile app release is v2.5.0.", True),
    ("Our Node services run on Node 18.", "Our Node services run on Node 20.", True),
    ("The iOS app requires iOS 15 or later.", "The iOS app requires iOS 16 or later.", True),
    # Names: people, tools, places, hosts, channels.
    ("The staging database is db-2.", "Staging now runs on db-3.", True),
    ("Dana leads the Falcon project.", "Priya leads the Falcon project.", True),
    ("Payroll questions go to Charlie.", "Payroll questions go to Maria.", True),
    ("We use Jira for issue tracking.", "We use Linear for issue tracking.", True),
    ("The company offsite is in Lisbon.", "The company offsite is in Porto.", True),
    ("Our CI runs on GitHub Actions.", "Our CI runs on CircleCI.", True),
    ("Customer data is hosted in AWS eu-west-1.", "Customer data is hosted in AWS eu-central-1.", True),
    ("The EMEA sales team reports to Jonas.", "The EMEA sales team reports to Sofia.", True),
    ("Incident alerts are sent to #ops-alerts.", "Incident alerts are sent to #incidents.", True),
    ("Our primary cloud provider is AWS.", "Our primary cloud provider is GCP.", True),
    ("The design system is built in Figma.", "The design system is built in Sketch.", True),
    ("The release manager for Q2 is Tom.", "The release manager for Q2 is Aisha.", True),
    ("Error tracking goes through Sentry.", "Error tracking goes through Rollbar.", True),
    ("Our payment processor is Stripe.", "Our payment processor is Adyen.", True),
    ("The main office is in Amsterdam.", "The main office is in Rotterdam.", True),
    ("Jenkins builds the Android app.", "The Android app is built by Bitrise.", True),
    # Polarity: negation and antonyms.
    ("We use Kubernetes for all backend services.", "We no longer use Kubernetes for backend services.", True),
    ("Remote work is allowed on Fridays.", "Remote work is not allowed on Fridays.", True),
    (
        "Pair programming is required for database migrations.",
        "Pair programming is optional for database migrations.",
        True,
    ),
    (
        "Two-factor authentication is enabled for all admin accounts.",
        "Two-factor authentication is disabled for admin accounts.",
        True,
    ),
    ("Feature flags are on by default in staging.", "Feature flags are off by default in staging.", True),
    ("We always squash commits when merging.", "We never squash commits when merging.", True),
    (
        "Contractors have access to the production database.",
        "Contractors do not have access to the production database.",
        True,
    ),
    ("The VPN requires two-factor authentication.", "The VPN doesn't require two-factor authentication.", True),
    ("Annual plans can be refunded within 30 days.", "Annual plans cannot be refunded.", True),
    ("Dogs are allowed in the office.", "Dogs are not allowed in the office anymore.", True),
    ("We offer a free tier.", "We don't offer a free tier anymore.", True),
    ("Deploys on Fridays are permitted.", "Deploys on Fridays are forbidden.", True),
    ("The legacy billing service is still in use.", "The legacy billing service is no longer in use.", True),
    ("Overtime is paid at 1.5x.", "Overtime is not paid.", True),
    (
        "Public holidays count towards the holiday allowance.",
        "Public holidays do not count towards the holiday allowance.",
        True,
    ),
    ("Dark mode is enabled for all users.", "Dark mode is disabled for all users.", True),
    ("The beta program is open to all customers.", "The beta program is closed to new customers.", True),
    ("Signing the NDA is mandatory for interns.", "Signing the NDA is optional for interns.", True),
    ("The staging environment is publicly accessible.", "The staging environment is not publicly accessible.", True),
    ("We accept payment by credit card.", "We no longer accept payment by credit card.", True),
    ("The old dashboard is deprecated.", "The old dashboard is not deprecated yet; keep using it.", True),
    (
        "Slack is the official channel for incident communication.",
        "Slack is not the official channel for incident communication; use the status page.",
        True,
    ),
    ("Interns are eligible for the annual bonus.", "Interns are not eligible for the annual bonus.", True),
    ("Auto-scaling is turned on for the worker pool.", "Auto-scaling is turned off for the worker pool.", True),
    ("The product roadmap is reviewed quarterly.", "The product roadmap is reviewed monthly.", True),
    ("Hiring for the platform team is frozen.", "We are hiring for the platform team again.", True),
    # --- Not contradictions -------------------------------------------------------------
    # Compatible elaboration and the same value in other words or units.
    ("We ship on Thursdays.", "We ship on Thursdays, usually after the 2pm release meeting.", False),
    ("The budget is 10k.", "The budget is 10k, approved in March.", False),
    ("The staging database is db-2.", "The staging database db-2 is rebuilt every night.", False),
    ("Dana leads the Falcon project.", "Dana leads the Falcon project and reports to the CTO.", False),
    (
        "The API rate limit is 600 requests per minute.",
        "The API rate limit is 600 requests per minute; enterprise customers can ask for more.",
        False,
    ),
    ("We use Jira for issue tracking.", "We use Jira for issue tracking and Confluence for documentation.", False),
    ("Employees get 25 days of paid holiday.", "Employees get 25 days of paid holiday, plus public holidays.", False),
    ("The free trial lasts 14 days.", "The free trial lasts two weeks.", False),
    ("Backups run at 01:00 UTC.", "Backups run at 1am UTC.", False),
    ("The marketing budget for Q3 is 40,000 euros.", "The Q3 marketing budget is €40k.", False),
    ("Daily standup is at 9:30.", "Daily standup is at half past nine and lasts 15 minutes.", False),
    ("The nightly backup is kept for 30 days.", "Nightly backups are retained for thirty days.", False),
    ("Customer data is hosted in AWS eu-west-1.", "Customer data is hosted in AWS eu-west-1 (Ireland).", False),
    (
        "Performance reviews are due by 15 March.",
        "Performance reviews are due by March 15th; managers should start collecting feedback in February.",
        False,
    ),
    ("The API timeout is 30 seconds.", "Requests time out after 30 s.", False),
    ("Test coverage must stay above 80 percent.", "Keep test coverage over 80%.", False),
    ("The referral bonus is €2,000.", "Referral bonus: EUR 2000, paid after the hire's probation.", False),
    ("The Pro plan costs $49 per seat per month.", "Pro is 49 USD per seat monthly, billed annually at $588.", False),
    ("The team has 8 engineers.", "The team has 8 engineers, 2 of whom are part-time.", False),
    (
        "Code reviews need approval from one other engineer.",
        "Code reviews need approval from one other engineer; changes to billing need two.",
        False,
    ),
    (
        "The standard payment terms are net 30.",
        "Standard payment terms are net 30; enterprise contracts can negotiate net 60.",
        False,
    ),
    ("Admin passwords must be rotated every 90 days.", "Rotate admin passwords every three months.", False),
    ("Daily standup is at 9:30.", "Daily standup is at 9:30 except on Mondays, when it's at 10:00.", False),
    ("The Kubernetes cluster has 12 nodes.", "The Kubernetes cluster has 12 nodes across 3 availability zones.", False),
    ("The company offsite is in October.", "The company offsite is in October; registration closes in August.", False),
    ("The v3 launch date is May 12.", "The v3 launch is May 12, with a press embargo until 9am PT.", False),
    ("We run PostgreSQL 15 in production.", "We run PostgreSQL 15 in production and PostgreSQL 16 in staging.", False),
    (
        "The minimum supported Python version is 3.10.",
        "The minimum supported Python version is 3.10; we test up to 3.13.",
        False,
    ),
    ("Sprint planning is on Tuesday.", "Sprint planning is on Tuesday and the retro is on Friday.", False),
    ("The fiscal year starts in April.", "The fiscal year starts in April, so Q1 runs April to June.", False),
    ("Lunch is catered on Wednesdays.", "Catered lunch on Wednesdays is from Deliveroo.", False),
    ("The main office is in Amsterdam.", "The main office in Amsterdam is on the third floor.", False),
    ("The EMEA sales team reports to Jonas.", "Jonas manages the EMEA sales team.", False),
    ("Error tracking goes through Sentry.", "Sentry is where we track errors; alerts from it go to PagerDuty.", False),
    (
        "Our payment processor is Stripe.",
        "Stripe is our payment processor for cards; SEPA debits go through GoCardless.",
        False,
    ),
    ("Sick leave must be reported by 10am.", "Sick leave must be reported by 10am to your manager and HR.", False),
    ("We moved from Heroku to AWS in 2022.", "We moved from Heroku to AWS in 2022 to cut hosting costs.", False),
    ("Version 2.4 of the app dropped support for Android 9.", "Version 2.4 of the app added offline mode.", False),
    # Numbers that measure different things; a different attribute of the same thing.
    ("The platform team has 3 engineers.", "Platform deploys take 3 minutes.", False),
    ("The platform team has 3 engineers.", "Platform deploys take 12 minutes.", False),
    ("The API rate limit is 600 requests per minute.", "The API timeout is 30 seconds.", False),
    ("The free trial lasts 14 days.", "The free trial includes 5 seats.", False),
    ("The Pro plan costs $49 per seat per month.", "The Pro plan includes 100 GB of storage per seat.", False),
    ("The Kubernetes cluster has 12 nodes.", "The Kubernetes cluster runs 140 pods on average.", False),
    ("Employees get 25 days of paid holiday.", "Employees get 10 days of paid sick leave.", False),
    ("The nightly backup is kept for 30 days.", "The nightly backup takes about 45 minutes.", False),
    (
        "Expense claims over 500 dollars need a manager's approval.",
        "Expense claims are reimbursed within 10 working days.",
        False,
    ),
    ("The team has 8 engineers.", "The team has 2 designers.", False),
    ("Our churn target for this year is 5%.", "Our growth target for this year is 40%.", False),
    ("The support desk opens at 8am CET.", "The support desk closes at 6pm CET.", False),
    ("Admin passwords must be rotated every 90 days.", "Admin passwords must be at least 16 characters long.", False),
    ("The max upload size is 25 MB.", "The max attachment size for email is 10 MB.", False),
    ("The VAT rate on our invoices is 19%.", "The reduced VAT rate of 7% applies to books.", False),
    (
        "The office is open from 8am to 6pm.",
        "The office is open from 8am to 6pm, and the front desk is staffed until 5pm.",
        False,
    ),
    ("The 2023 revenue was 4.2 million euros.", "The 2024 revenue target is 6 million euros.", False),
    # A different thing of the same kind, sharing most words.
    ("The Pro plan costs $49 per seat per month.", "The Team plan costs $19 per seat per month.", False),
    (
        "Discounts above 12% need sign-off from the commercial lead.",
        "Discounts above 30% need sign-off from the CFO.",
        False,
    ),
    (
        "Urgent tickets must get a first reply within one hour.",
        "Normal tickets must get a first reply within one business day.",
        False,
    ),
    (
        "Support tickets are answered within 24 hours on weekdays.",
        "Support tickets are answered within 48 hours on weekends.",
        False,
    ),
    ("The staging database is db-2.", "The production database is db-1.", False),
    ("Dana leads the Falcon project.", "Priya leads the Osprey project.", False),
    ("Payroll questions go to Charlie.", "Benefits questions go to Maria.", False),
    ("We use Jira for issue tracking.", "We use Notion for meeting notes.", False),
    ("Our CI runs on GitHub Actions.", "Our CD runs on Argo CD.", False),
    ("The EMEA sales team reports to Jonas.", "The APAC sales team reports to Sofia.", False),
    ("We run PostgreSQL 15 in production.", "We run Redis 7 in production.", False),
    ("Our Node services run on Node 18.", "Our Python services run on Python 3.12.", False),
    ("The release manager for Q2 is Tom.", "The release manager for Q3 is Aisha.", False),
    ("The marketing budget for Q3 is 40,000 euros.", "The marketing budget for Q4 is 55,000 euros.", False),
    ("The contract with Acme renews on 2024-06-01.", "The contract with Globex renews on 2024-09-01.", False),
    ("The Tokyo office opens at 9 in the morning.", "The London office opens at 8 in the morning.", False),
    ("The iOS app requires iOS 15 or later.", "The Android app requires Android 10 or later.", False),
    ("Customer data is hosted in AWS eu-west-1.", "Our analytics warehouse is hosted in AWS us-east-1.", False),
    ("Incident alerts are sent to #ops-alerts.", "Deploy notifications are sent to #deploys.", False),
    (
        "The on-call rotation hands over every Monday at noon.",
        "The security team's on-call rotation hands over every Wednesday at noon.",
        False,
    ),
    (
        "The weekly sales pipeline review is on Monday mornings.",
        "The weekly marketing sync is on Wednesday mornings.",
        False,
    ),
    ("Pair programming is required for database migrations.", "Pair programming is optional for frontend work.", False),
    ("Feature flags are on by default in staging.", "Feature flags are off by default in production.", False),
    ("Interns are eligible for the annual bonus.", "Interns are not eligible for stock options.", False),
    ("We accept payment by credit card.", "We do not accept payment by cheque.", False),
    ("We always squash commits when merging.", "We never force-push to main.", False),
    # Unrelated statements that share a weekday or a month.
    ("We ship on Thursdays.", "The cleaners come on Thursdays.", False),
    ("Sprint planning is on Tuesday.", "The design review is on Tuesday.", False),
    ("Payroll runs on the last Friday of the month.", "Invoices are sent on the first Monday of the month.", False),
    ("Lunch is catered on Wednesdays.", "Office yoga is on Wednesdays.", False),
    ("The company offsite is in October.", "Open enrolment for benefits starts in October.", False),
    # Negation on both sides, or negation inside an exception.
    ("We no longer use Jenkins.", "We no longer use Jenkins; everything moved to GitHub Actions.", False),
    (
        "Remote work is allowed on Fridays.",
        "Remote work is allowed on Fridays, but not during the release freeze.",
        False,
    ),
    ("Dogs are not allowed in the office.", "Dogs are not allowed in the office, except guide dogs.", False),
    (
        "Contractors do not have access to the production database.",
        "Contractors don't have production database access; they use the anonymised replica.",
        False,
    ),
    (
        "Two-factor authentication is enabled for all admin accounts.",
        "Two-factor authentication is enabled for all admin accounts and is required for the VPN.",
        False,
    ),
    ("Deploys on Fridays are not allowed.", "Don't deploy on Fridays.", False),
    (
        "The legacy billing service is no longer in use.",
        "The legacy billing service is no longer in use and will be deleted in June.",
        False,
    ),
    (
        "The VPN requires two-factor authentication.",
        "The VPN requires two-factor authentication, not SMS codes.",
        False,
    ),
    (
        "Auto-scaling is turned on for the worker pool.",
        "Auto-scaling is turned on for the worker pool but never scales below 2 nodes.",
        False,
    ),
    ("We never store card numbers.", "We never store card numbers; Stripe holds them.", False),
    ("Overtime is not paid.", "Overtime is not paid, but it can be taken as time off in lieu.", False),
    ("The old dashboard is deprecated.", "The old dashboard is deprecated and hidden from new users.", False),
    ("Customers can cancel at any time.", "Customers can cancel at any time from the billing page.", False),
    (
        "The staging environment is not publicly accessible.",
        "The staging environment is only reachable over the VPN.",
        False,
    ),
    (
        "Two-factor authentication is required for admin accounts.",
        "Admin accounts can't log in without two-factor authentication.",
        False,
    ),
    ("The beta program is closed to new customers.", "New customers can't join the beta program.", False),
    # Questions, proposals and evaluations.
    ("Remote work is allowed on Fridays.", "Is remote work allowed on Fridays?", False),
    ("We use Kubernetes for all backend services.", "Do we still use Kubernetes for backend services?", False),
    ("We ship on Thursdays.", "Should we ship on Fridays instead of Thursdays?", False),
    ("The staging database is db-2.", "Is the staging database still db-2 or did it move to db-3?", False),
    ("We ship on Thursdays.", "We're considering moving releases to Fridays next quarter.", False),
    ("Our primary cloud provider is AWS.", "We are evaluating GCP as a secondary cloud provider.", False),
    ("We use Jira for issue tracking.", "Some teams are trialling Linear alongside Jira.", False),
    # --- Written after the detector, added without running it first (a held-out check) -----
    (
        "Quarterly business reviews with enterprise customers are run by the account manager.",
        "Quarterly business reviews with enterprise customers are run by the customer success manager.",
        True,
    ),
    ("our standup is 9:15 every weekday", "standup is now at 9:45 on weekdays", True),
    ("The Berlin office is closed on Mondays.", "The Berlin office is open on Mondays.", True),
    ("Holiday requests need two weeks' notice.", "Holiday requests need four weeks' notice.", True),
    ("The SLA for P1 incidents is a 15 minute response.", "The SLA for P1 incidents is a 30 minute response.", True),
    (
        "Our Slack workspace is the source of truth for on-call schedules.",
        "PagerDuty is the source of truth for on-call schedules.",
        True,
    ),
    (
        "The company pays for a gym membership up to €50 a month.",
        "The company pays for a gym membership up to €40 a month.",
        True,
    ),
    ("Annual price increases are capped at 5%.", "Annual price increases are capped at 7%.", True),
    ("The design team uses Figma and FigJam.", "The design team no longer uses Figma.", True),
    (
        "Database migrations run automatically on deploy.",
        "Database migrations do not run automatically on deploy; run them by hand.",
        True,
    ),
    (
        "The minimum order for wholesale customers is 200 units.",
        "The minimum order for wholesale customers is 500 units.",
        True,
    ),
    ("Expense reports are due by the 5th of each month.", "Expense reports are due by the 10th of each month.", True),
    ("We host the docs site on Netlify.", "We host the docs site on Vercel.", True),
    ("The London office lease ends in 2026.", "The London office lease ends in 2027.", True),
    ("Parental leave is 16 weeks at full pay.", "Parental leave is 20 weeks at full pay.", True),
    (
        "Customer refunds are processed by finance within 5 business days.",
        "Customer refunds are processed by finance within 10 business days.",
        True,
    ),
    ("Sales can offer a 30-day money-back guarantee.", "Sales can no longer offer a money-back guarantee.", True),
    ("The release branch is cut on Wednesday evening.", "The release branch is cut on Tuesday evening.", True),
    ("Staging deploys are automatic.", "Staging deploys are manual.", True),
    ("We use Terraform for all infrastructure changes.", "We use Pulumi for all infrastructure changes.", True),
    ("Guest Wi-Fi is available in all meeting rooms.", "Guest Wi-Fi is not available in the meeting rooms.", True),
    ("Marketing emails go out at 10am Eastern.", "Marketing emails go out at 2pm Eastern.", True),
    (
        "The hiring manager makes the final offer decision.",
        "The recruiting committee makes the final offer decision.",
        True,
    ),
    ("Our biggest customer is Northwind.", "Our biggest customer is Contoso.", True),
    ("Invoices are issued in euros.", "Invoices are issued in US dollars.", True),
    ("The cache TTL for product pages is 300 seconds.", "The cache TTL for product pages is 60 seconds.", True),
    ("Interviews are conducted over Zoom.", "Interviews are conducted over Google Meet.", True),
    ("Code freeze for the holidays starts December 20.", "Code freeze for the holidays starts December 16.", True),
    ("Laptops are replaced every 3 years.", "Laptops are replaced every 4 years.", True),
    (
        "Customer success managers handle renewals.",
        "Account executives handle renewals, not customer success managers.",
        True,
    ),
    ("Weekend on-call is paid extra.", "Weekend on-call is not paid extra.", True),
    ("The team retro is every second Friday.", "The team retro is every second Thursday.", True),
    (
        "Our SOC 2 report covers the period ending June 30.",
        "Our SOC 2 report covers the period ending September 30.",
        True,
    ),
    ("The mobile team's sprint length is two weeks.", "The mobile team's sprint length is three weeks.", True),
    ("Production access requires manager approval.", "Production access does not require manager approval.", True),
    ("We ship on Thursdays.", "Hotfixes can ship on any day.", False),
    ("The standup is at 9:15.", "The standup is at 9:15 sharp; latecomers read the notes.", False),
    ("The Berlin office is closed on Mondays.", "The Berlin office is closed on public holidays.", False),
    ("Holiday requests need two weeks' notice.", "Sick days need no notice.", False),
    ("The SLA for P1 incidents is a 15 minute response.", "The SLA for P2 incidents is a 4 hour response.", False),
    (
        "The company pays for a gym membership up to €50 a month.",
        "The company pays for a phone plan up to €30 a month.",
        False,
    ),
    (
        "Annual price increases are capped at 5%.",
        "Annual price increases are capped at 5% for customers on multi-year contracts.",
        False,
    ),
    ("The design team uses Figma.", "The design team uses Figma for mockups and Miro for workshops.", False),
    (
        "Database migrations run automatically on deploy.",
        "Database migrations run automatically on deploy, but destructive ones need a manual approval.",
        False,
    ),
    (
        "The minimum order for wholesale customers is 200 units.",
        "Wholesale customers get a 10% discount on orders over 1,000 units.",
        False,
    ),
    ("We host the docs site on Netlify.", "We host the marketing site on Webflow.", False),
    ("The London office lease ends in 2026.", "The Paris office lease ends in 2025.", False),
    (
        "Parental leave is 16 weeks at full pay.",
        "Parental leave is 16 weeks at full pay, followed by up to 10 weeks at half pay.",
        False,
    ),
    (
        "Customer refunds are processed by finance within 5 business days.",
        "Customer refunds over $1,000 need approval from the finance lead.",
        False,
    ),
    ("The release branch is cut on Wednesday evening.", "Release notes are published on Friday morning.", False),
    (
        "We use Terraform for all infrastructure changes.",
        "We use Terraform for all infrastructure changes; DNS records are managed in Cloudflare.",
        False,
    ),
    ("Guest Wi-Fi is available in all meeting rooms.", "Guest Wi-Fi is not available in the server room.", False),
    ("Marketing emails go out at 10am Eastern.", "Product update emails go out at 4pm Eastern.", False),
    ("Our biggest customer is Northwind.", "Our newest customer is Contoso.", False),
    ("The cache TTL for product pages is 300 seconds.", "The cache TTL for product pages is five minutes.", False),
    ("Interviews are conducted over Zoom.", "Interviews are conducted over Zoom, with cameras on.", False),
    ("Laptops are replaced every 3 years.", "Monitors are replaced every 5 years.", False),
    ("Weekend on-call is paid extra.", "Weekday on-call is not paid extra.", False),
    (
        "The team retro is every second Friday.",
        "The team retro is every second Friday at 3pm in the big meeting room.",
        False,
    ),
    ("Production access requires manager approval.", "Staging access does not require approval.", False),
    ("The mobile team's sprint length is two weeks.", "The web team's sprint length is one week.", False),
    (
        "Code freeze for the holidays starts December 20.",
        "Code freeze for the holidays starts December 20 and ends January 3.",
        False,
    ),
    (
        "Quarterly business reviews are run by the account manager.",
        "Quarterly business reviews are scheduled by the account manager's assistant.",
        False,
    ),
    ("Only admins can delete projects.", "Only admins can delete projects; members can archive them.", False),
    ("Our uptime target is 99.9%.", "Our uptime target is 99.9%, measured monthly.", False),
    ("Our uptime target is 99.9%.", "Last month's uptime was 99.7%.", False),
    ("The office closes at 6pm.", "The office closes at 6pm, or 4pm on Fridays.", False),
    (
        "We reimburse home office equipment up to $500.",
        "We reimburse home office equipment up to $500 once every two years.",
        False,
    ),
    (
        "Board decks are due a week before the meeting.",
        "Board decks are due a week before the meeting and must be reviewed by the CFO.",
        False,
    ),
    ("We do not sponsor visas.", "We do not sponsor visas for contractor roles.", False),
    ("Meeting rooms can be booked for up to 2 hours.", "Meeting rooms can be booked up to 2 weeks in advance.", False),
    ("The QA team tests on iOS 17 and Android 14.", "The QA team tests on iOS 17.", False),
    ("Priya is the tech lead for payments.", "Priya is the tech lead for payments and mentors two juniors.", False),
    (
        "Support is available 24/7 for enterprise customers.",
        "Support is available during business hours for standard customers.",
        False,
    ),
    (
        "Renewal notices go out 60 days before the contract ends.",
        "Renewal notices go out 60 days before the contract ends, with a reminder at 30 days.",
        False,
    ),
    # --- A second held-out batch, written after the first one was scored -------------------
    ("Standups are async on Fridays.", "Standups are synchronous on Fridays.", True),
    ("all customer calls are recorded in Gong", "customer calls are recorded in Chorus now", True),
    ("The intern stipend is £1,800 per month.", "The intern stipend is £2,000 per month.", True),
    ("FYI: prod DB password rotation happens every 30 days.", "prod DB password rotation happens every 45 days.", True),
    ("The Android app supports Android 8 and above.", "The Android app supports Android 10 and above.", True),
    ("Maximum team size for the hackathon is 4 people.", "Maximum team size for the hackathon is 5 people.", True),
    ("The Q4 sales kickoff is in Barcelona.", "The Q4 sales kickoff is in Madrid.", True),
    (
        "Engineering interviews include a take-home exercise.",
        "Engineering interviews no longer include a take-home exercise.",
        True,
    ),
    ("Our default branch is main.", "Our default branch is master.", True),
    ("The search service is written in Go.", "The search service is written in Rust.", True),
    ("We bill customers monthly.", "We bill customers annually.", True),
    ("Kiosk mode is enabled on the lobby iPads.", "Kiosk mode is disabled on the lobby iPads.", True),
    (
        "Tips for delivery drivers are included in the price.",
        "Tips for delivery drivers are not included in the price.",
        True,
    ),
    (
        "The warehouse ships orders placed before 3pm the same day.",
        "The warehouse ships orders placed before 1pm the same day.",
        True,
    ),
    ("The team lunch budget is 25 euros per person.", "The team lunch budget is 30 euros per person.", True),
    ("Log level in production is WARN.", "Log level in production is INFO.", True),
    ("The onboarding buddy program lasts 4 weeks.", "The onboarding buddy program lasts 6 weeks.", True),
    (
        "The quarterly OKR review happens in the first week of the quarter.",
        "The quarterly OKR review happens in the last week of the quarter.",
        True,
    ),
    (
        "Customer PII may be stored in the analytics warehouse.",
        "Customer PII must never be stored in the analytics warehouse.",
        True,
    ),
    ("The Singapore office is led by Wei.", "The Singapore office is led by Arjun.", True),
    (
        "Retainer clients are invoiced on the 1st of the month.",
        "Retainer clients are invoiced on the 15th of the month.",
        True,
    ),
    ("The API returns 50 results per page by default.", "The API returns 100 results per page by default.", True),
    (
        "Feature requests are triaged by the PM on duty.",
        "Feature requests are not triaged by the PM on duty; support triages them.",
        True,
    ),
    ("Security patches are applied within 48 hours.", "Security patches are applied within 7 days.", True),
    ("The booth at the trade show is number 214.", "The booth at the trade show is number 118.", True),
    ("Standups are async on Fridays.", "Standups are async on Fridays and in person on Tuesdays.", False),
    ("All customer calls are recorded in Gong.", "Gong recordings are deleted after 12 months.", False),
    ("The intern stipend is £1,800 per month.", "The intern housing allowance is £600 per month.", False),
    ("Prod DB password rotation happens every 30 days.", "Staging DB password rotation happens every 90 days.", False),
    ("The Android app supports Android 8 and above.", "The iOS app supports iOS 14 and above.", False),
    ("Maximum team size for the hackathon is 4 people.", "The hackathon runs for 48 hours.", False),
    ("The Q4 sales kickoff is in Barcelona.", "The Q1 sales kickoff is in Madrid.", False),
    (
        "Engineering interviews include a take-home exercise.",
        "Design interviews do not include a take-home exercise.",
        False,
    ),
    ("The search service is written in Go.", "The billing service is written in Rust.", False),
    ("We bill customers monthly.", "We bill customers monthly, on the first business day.", False),
    (
        "Kiosk mode is enabled on the lobby iPads.",
        "Kiosk mode is enabled on the lobby iPads and the meeting room displays.",
        False,
    ),
    ("Tips for delivery drivers are included in the price.", "Service fees are not included in the price.", False),
    ("The warehouse ships orders placed before 3pm the same day.", "The warehouse is closed on Sundays.", False),
    ("The team lunch budget is 25 euros per person.", "The offsite dinner budget is 60 euros per person.", False),
    ("Log level in production is WARN.", "Log level in staging is DEBUG.", False),
    (
        "The onboarding buddy program lasts 4 weeks.",
        "The onboarding buddy program lasts four weeks, with a check-in after week 2.",
        False,
    ),
    (
        "Customer PII must never be stored in the analytics warehouse.",
        "Customer PII must never be stored in the analytics warehouse or in logs.",
        False,
    ),
    ("The Singapore office is led by Wei.", "The Singapore office is led by Wei, with Arjun running sales.", False),
    ("Retainer clients are invoiced on the 1st of the month.", "Project clients are invoiced on completion.", False),
    ("The API returns 50 results per page by default.", "The API returns at most 500 results per page.", False),
    (
        "Feature requests are triaged by the PM on duty.",
        "Bug reports are triaged by the support engineer on duty.",
        False,
    ),
    ("Security patches are applied within 48 hours.", "Security patches are applied within two days.", False),
    ("The booth at the trade show is number 214.", "The trade show runs from 3 to 5 October.", False),
    ("Contractors are paid net 15.", "Contractors are paid net 15, by bank transfer only.", False),
    (
        "Expense receipts must be uploaded within 30 days.",
        "Expense receipts must be uploaded within 30 days; late receipts are not reimbursed.",
        False,
    ),
    ("The VPN is required when working from a café.", "The VPN is not required in the office.", False),
    ("Marketing owns the website copy.", "Marketing owns the website copy; engineering owns the templates.", False),
    ("We don't sell to individuals.", "We only sell to businesses.", False),
    (
        "Release candidates are tagged with an -rc suffix.",
        "Release candidates are tagged with an -rc suffix and deployed to staging for 2 days.",
        False,
    ),
    (
        "The all-hands is on the last Thursday of the month at 4pm.",
        "The all-hands is on the last Thursday of the month; it's recorded for other time zones.",
        False,
    ),
]


def evaluate() -> dict[str, float]:
    """Score the detector on ``PAIRS``.

    Returns ``pairs``, ``positives`` (pairs labelled a contradiction), ``flagged`` (pairs
    the detector flags), ``true_positives``, ``precision`` (true positives / flagged; 1.0
    when nothing is flagged) and ``recall`` (true positives / positives).
    """
    flagged = true_positives = 0
    for existing, new, label in PAIRS:
        if contradiction(existing, new) is not None:
            flagged += 1
            true_positives += label
    positives = sum(label for _, _, label in PAIRS)
    return {
        "pairs": float(len(PAIRS)),
        "positives": float(positives),
        "flagged": float(flagged),
        "true_positives": float(true_positives),
        "precision": true_positives / flagged if flagged else 1.0,
        "recall": true_positives / positives if positives else 0.0,
    }
