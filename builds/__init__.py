"""Build branches of draft revisions, their credentials, review and promotion."""
