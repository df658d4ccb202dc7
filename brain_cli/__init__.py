"""``brain``: the command line for a Brain deployment's REST API v1 (see docs/api.md)."""
