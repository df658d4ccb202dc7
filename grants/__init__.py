"""Members, groups, service accounts, grants and the access predicate; the audit log."""
