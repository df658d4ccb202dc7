"""Services queue jobs by task name; a web process must resolve every name it queues.

Celery imports the apps' ``tasks`` modules only when a worker starts. In this pytest
process the test modules have imported them long ago, so the check runs in a fresh
interpreter that has only set Django up, as gunicorn does — where a name that does not
resolve means the job is never queued (the request succeeds; the work waits for a sweep).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUEUED_BY_NAME = re.compile(r"""enqueue_on_commit\(\s*["']([\w.]+)["']""")


def names_queued_in_the_code() -> list[str]:
    found = {
        name
        for path in ROOT.glob("*/**/*.py")
        if path.parts[len(ROOT.parts)] not in {".venv", "tests", "var", "node_modules"}
        for name in QUEUED_BY_NAME.findall(path.read_text(encoding="utf-8"))
    }
    return sorted(found)


def test_every_name_a_service_queues_resolves_in_a_fresh_web_process() -> None:
    names = names_queued_in_the_code()
    assert "ingest.extract" in names  # the scan finds the call sites
    assert "answers.run" in names
    script = (
        "import sys, django; django.setup()\n"
        "assert 'ingest.tasks' not in sys.modules and 'answers.tasks' not in sys.modules, 'already imported'\n"
        "from brain.jobs import task_named\n"
        f"print(' '.join(task_named(name).name for name in {names!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "brain.settings_test"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == names
