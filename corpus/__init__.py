"""Pages, revisions, chunks, sources and figures: the governed corpus and its single write path."""
