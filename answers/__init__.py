"""Questions answered from the corpus with grounded citations; Slack commands."""
