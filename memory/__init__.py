"""Private personal memories and the shared team layer; prompt capsules."""
