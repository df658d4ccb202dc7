# Brain — the two commands are `make run` and `make test`; the rest are for developers/CI.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-browser browser lint typecheck migrations-check check services-up services-down services-status backup restore bench bench-retrieval bench-search-scale bench-mcp bench-rest bench-export bench-memory bench-capsules bench-ingest bench-secrets bench-hostile bench-web bench-answers bench-load conformance

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=24"

# Reinstall only when the pinned requirements change.
$(STAMP): requirements.txt requirements-nodeps.txt constraints.txt pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt -c constraints.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m brain.launcher run

test: $(STAMP) browser
	$(PY) -m brain.launcher up
	$(PY) -m pytest

# Debian's chromium for the browser tests, installed with apt-get where missing (as root, or
# through sudo). Playwright drives it at /usr/bin/chromium; no browser is ever downloaded.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "installing Debian's chromium for the browser tests (apt-get)"; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; }
	@chromium --version

# Only the browser journeys (also part of `make test`).
test-browser: $(STAMP) browser
	$(PY) -m brain.launcher up
	$(PY) -m pytest tests/browser

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP)
	$(PY) -m mypy .

migrations-check: $(STAMP)
	$(PY) manage.py makemigrations --check --dry-run

check: lint migrations-check test

services-up: $(STAMP)
	$(PY) -m brain.launcher up

services-down: $(STAMP)
	$(PY) -m brain.launcher down

services-status: $(STAMP)
	$(PY) -m brain.launcher status

# The embedded brain (database, media, keys) into one 0600 archive in var/backups/, or FILE=path
# (docs/operations.md, "Backups and restore").
backup: $(STAMP)
	$(PY) -m brain.backup backup $(if $(FILE),--file "$(FILE)")

# The newest archive in var/backups/ (or FILE=path) into var/; FORCE=1 replaces a database that is not empty.
restore: $(STAMP)
	$(PY) -m brain.backup restore $(if $(FILE),--file "$(FILE)") $(if $(filter 1 yes true,$(FORCE)),--force)

bench: $(STAMP)
	$(PY) bench/embeddings.py

# Retrieval quality on the shipped PostgreSQL-manual set (a few minutes).
bench-retrieval: $(STAMP)
	$(PY) -m bench.retrieval

# Search latency at 10k and 100k chunks under 1–100 grants (about ten minutes).
bench-search-scale: $(STAMP)
	$(PY) -m bench.search_scale

# The ZIP export at 1k and 10k pages and the git mirror's first against an incremental push.
bench-export: $(STAMP)
	$(PY) -m bench.export

bench-rest: $(STAMP)
	$(PY) -m bench.rest_throughput

# MCP read_page throughput through gunicorn against a plain Django view (about a minute).
bench-mcp: $(STAMP)
	$(PY) -m bench.mcp_throughput

# Faults under way (minutes): workers SIGKILLed mid-job, then Postgres and Redis stopped under
# load in a private stack; each prints its invariants (lost = 0, duplicated = 0).
bench-faults: $(STAMP)
	$(PY) -m bench.faults
	$(PY) -m bench.faults_outages

# Memory recall latency and quality at 10k and 50k memories, the model-free contradiction
# check's precision/recall, and weekly insights' runtime at 5k and 50k (a few minutes).
bench-memory: $(STAMP)
	$(PY) -m bench.memory_insights
	$(PY) -m bench.memory_recall

# Cached prompt-capsule reads at 1k and 100k memories (a minute).
bench-capsules: $(STAMP)
	$(PY) -m bench.capsules

# Document ingest throughput on a mixed generated batch (under a minute).
bench-ingest: $(STAMP)
	$(PY) -m bench.ingest

# Server time of the web pages at 10k pages beside a plain page (several minutes: it builds the corpus).
bench-web: $(STAMP)
	$(PY) -m bench.web

# Recall and false positives of the secret detector on the labelled corpus (seconds).
bench-secrets: $(STAMP)
	$(PY) -m bench.secrets

# Worker-seconds of the worst inputs found beside ordinary twins of the same size (a minute).
bench-hostile: $(STAMP)
	$(PY) -m bench.hostile

# The extractive answerer on the PostgreSQL-manual set (a few minutes: the corpus is embedded).
bench-answers: $(STAMP)
	$(PY) -m bench.answers

# Load at 50 clients for 60 s on a private copy of `make run`'s processes: throughput, p50/p95/p99,
# 429s and Retry-After, 5xx, people's reads against one client, lost writes (about 3 minutes).
bench-load: $(STAMP)
	$(PY) -m bench.load

# The official MCP conformance suite (npm, with its own Node 22) against a running server.
CONFORMANCE_STAMP := conformance/node_modules/.installed
$(CONFORMANCE_STAMP): conformance/package.json conformance/package-lock.json
	cd conformance && npm ci --no-audit --no-fund
	touch $(CONFORMANCE_STAMP)

conformance: $(STAMP) $(CONFORMANCE_STAMP)
	$(PY) conformance/run.py
