"""``python -m brain_cli`` — the same as the ``brain`` command."""

from brain_cli.main import main

main()
