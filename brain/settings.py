"""Brain settings: one module, every value from the environment (see .env.example).

A missing or malformed variable stops the process at start with a message naming it.
When ``DATABASE_URL`` / ``REDIS_URL`` are unset, the embedded servers are started (or
reused) by ``brain.launcher``.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import dj_database_url

from brain import launcher
from brain.env import (
    ConfigurationError,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_int_map,
    env_secret,
    env_str,
    env_url,
)
from oauth.config import provider_settings

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = launcher.var_dir()

DEBUG = env_bool("BRAIN_DEBUG", False)

# Embedded mode: no external database configured, so this is one machine's brain.
EMBEDDED = env_str("DATABASE_URL") is None or env_bool(launcher.EMBEDDED_MARKER, False)

_secret_key = env_secret("BRAIN_SECRET_KEY")
if _secret_key is None:
    if not EMBEDDED:
        raise ConfigurationError("BRAIN_SECRET_KEY is required when DATABASE_URL is set")
    # One machine, no key configured: a random key generated once and kept under var/
    # (mode 0600), so sessions survive restarts. There is no key written in the code.
    _key_file = VAR_DIR / "secret-key"
    if not _key_file.exists():
        import secrets as _secrets

        _key_file.parent.mkdir(parents=True, exist_ok=True)
        _key_file.touch(mode=0o600)
        _key_file.write_text(_secrets.token_urlsafe(50))
    _secret_key = _key_file.read_text().strip()
elif len(_secret_key) < 32:
    raise ConfigurationError("BRAIN_SECRET_KEY must be at least 32 characters")
SECRET_KEY = _secret_key

BRAIN_PORT = env_int("BRAIN_PORT", 8000, minimum=1, maximum=65535)
BRAIN_BASE_URL = (env_url("BRAIN_BASE_URL", schemes=("http", "https")) or f"http://127.0.0.1:{BRAIN_PORT}").rstrip("/")
_base = urlsplit(BRAIN_BASE_URL)
if _base.path not in ("", "/") or _base.query or _base.fragment:
    raise ConfigurationError("BRAIN_BASE_URL must be an origin (scheme://host[:port]) with no path")

_extra_hosts = [h.strip() for h in (env_str("BRAIN_ALLOWED_HOSTS") or "").split(",") if h.strip()]
ALLOWED_HOSTS = sorted({_base.hostname or "localhost", "127.0.0.1", "localhost", *_extra_hosts})
CSRF_TRUSTED_ORIGINS = [BRAIN_BASE_URL]
_hsts_seconds = env_int("BRAIN_HSTS_SECONDS", 31_536_000, minimum=0)  # read (and checked) even over http
if _base.scheme == "https":
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Browsers that have seen the brain over https never try it over http again (the first
    # plain request is where a network attacker strips TLS); 0 turns the header off.
    SECURE_HSTS_SECONDS = _hsts_seconds

INSTALLED_APPS = [
    "brain.admin_site.BrainAdminConfig",  # django.contrib.admin, its lists guarded (brain/admin_site.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "oauth2_provider",
    "axes",
    "brain",
    "grants",
    "corpus",
    "builds",
    "mcp_api",
    "answers",
    "memory",
    "oauth",
    "ingest",
    "integrations",
    # The top: REST v1 runs every app's operations; accounts orchestrates people coming and going.
    "api",
    "accounts",
    "mirror",
    "home",
]

MIDDLEWARE = [
    # First: every response, including Django's own 400 for a disallowed host, gets an id.
    "brain.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Early, so a 400/413 answered by the middleware below carries it too.
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "brain.middleware.ContentSecurityPolicyMiddleware",
    # Control characters in the path, query or form fields and oversized bodies stop here (400/413).
    "brain.inputs.HostileInputMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Keeps the register of signed-in sessions fresh (a write at most every five minutes).
    "accounts.sessions.SessionActivityMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # Refusals that escape a web view become their status and message (brain.domain.problem_for).
    "brain.middleware.DomainErrorMiddleware",
    # Last, as django-axes asks: turns a lockout raised during sign-in into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "brain.urls"

# Mail (people told their password was set by an administrator; invitations later): SMTP
# when BRAIN_EMAIL_HOST is set, else the console (the message lands in the web log).
EMAIL_HOST = env_str("BRAIN_EMAIL_HOST") or "localhost"
EMAIL_PORT = env_int("BRAIN_EMAIL_PORT", 587, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("BRAIN_EMAIL_USER") or ""
EMAIL_HOST_PASSWORD = env_secret("BRAIN_EMAIL_PASSWORD") or ""
EMAIL_USE_TLS = env_bool("BRAIN_EMAIL_USE_TLS", True)
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if env_str("BRAIN_EMAIL_HOST")
    else "django.core.mail.backends.console.EmailBackend"
)
DEFAULT_FROM_EMAIL = env_str("BRAIN_EMAIL_FROM") or "brain@localhost"

# The largest body Django reads into memory: the memory import's 5 MB of JSON lines. Every
# other route has a tighter limit, enforced on the declared length before a byte is read
# (``brain.inputs.body_limit``); uploads stream to temporary files.
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
WSGI_APPLICATION = "brain.wsgi.application"
ASGI_APPLICATION = "brain.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --------------------------------------------------------------------------- database

_database_url = env_url("DATABASE_URL", schemes=("postgres", "postgresql", "pgsql"))
_redis_url = env_url("REDIS_URL", schemes=("redis", "rediss"))
if _database_url is None or _redis_url is None:
    launcher.configure_environment()
    _database_url = os.environ["DATABASE_URL"]
    _redis_url = os.environ["REDIS_URL"]

DATABASES: dict[str, dict[str, Any]] = {
    "default": dict(
        dj_database_url.parse(
            _database_url,
            conn_max_age=env_int("BRAIN_DB_CONN_MAX_AGE", 60, minimum=0),
            conn_health_checks=True,
        )
    )
}
DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
# Server-side parameter binding, so the few hot reads can run as prepared statements
# (brain.rows.fetch_one): the access predicate's query plans in ~0.7 ms and executes in
# ~0.1 ms. Nothing is prepared automatically: a generic plan for hybrid search chose badly
# (10k chunks, everything visible: p95 13 -> 70 ms). Turn off with BRAIN_DB_PREPARED=false
# behind a transaction-mode pooler (PgBouncer < 1.21).
BRAIN_DB_PREPARED = env_bool("BRAIN_DB_PREPARED", True)
if BRAIN_DB_PREPARED:
    # A threshold no query reaches: psycopg prepares only what asks for it (prepare=True);
    # None would disable even that.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"server_side_binding": True, "prepare_threshold": 2**31})
# QuerySet.iterator() outside a transaction (the memory export streams so) opens a server-side
# cursor WITH HOLD that outlives its transaction; behind a transaction-mode pooler the next
# fetch may reach another server connection, where the cursor does not exist. Turn them off
# there with BRAIN_DB_SERVER_SIDE_CURSORS=false (iterator() then reads the rows in one go).
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = not env_bool("BRAIN_DB_SERVER_SIDE_CURSORS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --------------------------------------------------------------------------- redis, cache, celery

REDIS_URL = _redis_url
CACHES = {
    "default": {
        # Django's Redis cache, for which Redis being down is a miss (brain/cache.py).
        "BACKEND": "brain.cache.ResilientRedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "brain",
        "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
    }
}
# After Redis failed, the cache and the rate limits do without it this long before asking
# again (brain/redis_outage.py): an outage costs one connect timeout per interval, not per call.
BRAIN_REDIS_RETRY_SECONDS = env_int("BRAIN_REDIS_RETRY_SECONDS", 5, minimum=0, maximum=300)
CELERY_BROKER_URL = REDIS_URL
# A broker that accepts connections but never answers must not hold a web thread: kombu sets
# no socket timeout by default (a publish "waits forever"), and a job queued on commit hung
# its request for good; two of them stopped a web process, /healthz included. Two seconds a
# socket operation, one retry (brain/jobs.py then leaves the job to its sweep).
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_timeout": 2, "socket_connect_timeout": 2}
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("BRAIN_TASK_SOFT_TIME_LIMIT", 300, minimum=1)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 30
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The one sweep a minute: re-enqueue durable build jobs whose worker died (their lease expired).
CELERY_BEAT_SCHEDULE: dict[str, dict[str, Any]] = {
    "builds-sweep": {"task": "builds.jobs_sweep", "schedule": 60.0},
    # Memories captured while the embedder was down get their vectors here.
    "memory-backfill": {"task": "memory.backfill_embeddings", "schedule": 300.0},
    # Last week's insights for the members who opted in (idempotent; hourly so a late start catches up).
    "memory-insights": {"task": "memory.insights", "schedule": 3600.0},
    # Document chunks likewise (and, after a model change, both get the new model's vectors).
    "ingest-backfill": {"task": "ingest.backfill_embeddings", "schedule": 300.0},
    # And page chunks written while the embedder was down (a model change goes through build_reembed).
    "corpus-backfill": {"task": "corpus.backfill_embeddings", "schedule": 300.0},
    # Extractions queued or leased by a worker that died get re-enqueued.
    "ingest-sweep": {"task": "ingest.sweep", "schedule": 60.0},
    "answers-sweep": {"task": "answers.sweep", "schedule": 60.0},
    # Memory verdict jobs (memory.settle) whose worker died or whose message was lost.
    "memory-verdicts-sweep": {"task": "memory.verdicts_sweep", "schedule": 60.0},
    # Background vault and Notion imports whose worker died or whose message was lost.
    "memory-vault-imports-sweep": {"task": "memory.vault_imports_sweep", "schedule": 60.0},
    "slack-sweep": {"task": "integrations.slack_sweep", "schedule": 60.0},
    # Expired OAuth tokens and authorization codes (django-oauth-toolkit's cleartokens).
    "oauth-clear-expired": {"task": "oauth.clear_expired", "schedule": 24 * 60 * 60.0},
    # Expired browser sessions (Django's clearsessions) and their Security-page rows.
    "accounts-clear-sessions": {"task": "accounts.clear_sessions", "schedule": 24 * 60 * 60.0},
    # The lexical arm's inverse document frequencies (a no-op when no chunk changed).
    "lexeme-statistics": {"task": "corpus.lexeme_statistics", "schedule": 300.0},
    # Git mirrors: pushed after each promotion; the sweep catches everything else (grant
    # changes, tags, a promotion whose message was lost) and notices a remote that moved.
    "mirror-sweep": {"task": "mirror.sweep", "schedule": float(env_int("BRAIN_MIRROR_SWEEP_SECONDS", 300, minimum=30))},
    # Calendar subscriptions due for a refresh (each at most every BRAIN_CALENDAR_REFRESH_SECONDS).
    "memory-calendars": {"task": "memory.calendars_refresh", "schedule": 900.0},
}

# --------------------------------------------------------------------------- auth, sessions

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Sign-in throttling (django-axes, attempts kept in PostgreSQL): after BRAIN_LOGIN_FAILURE_LIMIT
# failed sign-ins for one username from one client address, that pair is refused for
# BRAIN_LOGIN_COOLOFF_MINUTES — the admin's sign-in included. Keyed by the pair, so nobody can
# lock a colleague out from elsewhere. Behind reverse proxies, BRAIN_TRUSTED_PROXY_COUNT says how
# many X-Forwarded-For entries to trust (0: the socket's peer address is the client).
# MemberBackend is Django's ModelBackend reading the member with the user. (Listing ModelBackend
# too would check every failed password twice; sessions from before it sign in once more.)
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "grants.backends.MemberBackend"]
AXES_FAILURE_LIMIT = env_int("BRAIN_LOGIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = dt.timedelta(minutes=env_int("BRAIN_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "brain.views.sign_in_paused"
AXES_DISABLE_ACCESS_LOG = True  # successful sign-ins are not kept; failures are (AccessAttempt)
AXES_VERBOSE = False
BRAIN_TRUSTED_PROXY_COUNT = env_int("BRAIN_TRUSTED_PROXY_COUNT", 0, minimum=0, maximum=10)
AXES_CLIENT_IP_CALLABLE = "brain.client_ip.client_network"  # an IPv6 /64 counts as one address
# A failed attempt keeps its username redacted if it holds a secret, and its form data without
# the username or the CSRF token (axes masks the password itself).
AXES_USERNAME_CALLABLE = "brain.sign_in_forms.attempted_username"
AXES_SENSITIVE_PARAMETERS = ["username", "csrfmiddlewaretoken"]
# /healthz tells anyone up or down; its details (version, mirrors) go to signed-in
# administrators and to a monitor presenting this token as a bearer. Long, or none at all.
BRAIN_HEALTH_TOKEN = env_secret("BRAIN_HEALTH_TOKEN", "") or ""
if BRAIN_HEALTH_TOKEN and len(BRAIN_HEALTH_TOKEN) < 32:
    raise ConfigurationError("BRAIN_HEALTH_TOKEN must be at least 32 characters (or unset)")
LOGIN_URL = "/login/"
# An invitation link works once and expires after this many hours.
BRAIN_INVITATION_HOURS = env_int("BRAIN_INVITATION_HOURS", 72, minimum=1, maximum=24 * 30)

# Optional single sign-on through OpenID Connect (mozilla-django-oidc). Off unless a client id
# is set; then every endpoint must be given (no discovery at start-up: the web process never
# waits on the identity provider to boot). Local passwords keep working beside it. SSO signs in
# existing active members only, matched by verified email (see docs/operations.md).
OIDC_RP_CLIENT_ID = env_str("BRAIN_OIDC_CLIENT_ID") or ""
BRAIN_OIDC_ENABLED = bool(OIDC_RP_CLIENT_ID)
BRAIN_OIDC_LABEL = env_str("BRAIN_OIDC_LABEL") or "Sign in with single sign-on"
# The endpoints: https; http only for an identity provider on this machine or a private network's test setup.
_OIDC_SCHEMES = ("https", "http")
if BRAIN_OIDC_ENABLED:
    OIDC_RP_CLIENT_SECRET = env_secret("BRAIN_OIDC_CLIENT_SECRET") or ""
    OIDC_OP_AUTHORIZATION_ENDPOINT = env_url("BRAIN_OIDC_AUTHORIZATION_ENDPOINT", schemes=_OIDC_SCHEMES) or ""
    OIDC_OP_TOKEN_ENDPOINT = env_url("BRAIN_OIDC_TOKEN_ENDPOINT", schemes=_OIDC_SCHEMES) or ""
    OIDC_OP_USER_ENDPOINT = env_url("BRAIN_OIDC_USERINFO_ENDPOINT", schemes=_OIDC_SCHEMES) or ""
    OIDC_OP_JWKS_ENDPOINT = env_url("BRAIN_OIDC_JWKS_ENDPOINT", schemes=_OIDC_SCHEMES) or ""
    # Compared exactly with the ID token's "iss"; not checked as a URL, since some providers
    # (Google) have issued tokens whose "iss" is a bare host name.
    OIDC_OP_ISSUER = env_str("BRAIN_OIDC_ISSUER") or ""
    _missing = [
        name
        for name, value in (
            ("BRAIN_OIDC_CLIENT_SECRET", OIDC_RP_CLIENT_SECRET),
            ("BRAIN_OIDC_AUTHORIZATION_ENDPOINT", OIDC_OP_AUTHORIZATION_ENDPOINT),
            ("BRAIN_OIDC_TOKEN_ENDPOINT", OIDC_OP_TOKEN_ENDPOINT),
            ("BRAIN_OIDC_USERINFO_ENDPOINT", OIDC_OP_USER_ENDPOINT),
            ("BRAIN_OIDC_JWKS_ENDPOINT", OIDC_OP_JWKS_ENDPOINT),
            ("BRAIN_OIDC_ISSUER", OIDC_OP_ISSUER),
        )
        if not value
    ]
    if _missing:
        raise ConfigurationError(f"BRAIN_OIDC_CLIENT_ID is set, so these are required too: {', '.join(_missing)}")
    AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "accounts.oidc.MemberOIDCBackend"]
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_TIMEOUT = 10  # seconds for each call to the provider; the library's default waits forever
OIDC_RP_SCOPES = "openid email"
OIDC_USE_NONCE = True
OIDC_USE_PKCE = True
OIDC_CREATE_USER = False  # an identity provider account is not a member: invite people first
LOGIN_REDIRECT_URL_FAILURE = "/login/?sso=failed"
OIDC_AUTHENTICATION_CALLBACK_URL = "accounts:oidc-callback"
LOGIN_REDIRECT_URL = "/"  # home: what needs you
LOGOUT_REDIRECT_URL = "/login/"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# OAuth 2.1 for agents (django-oauth-toolkit): this deployment is its own issuer at
# BRAIN_BASE_URL; tokens are for the person MCP endpoint only. Redirect URI schemes:
# https, http (loopback redirects of desktop clients) and the custom schemes of
# desktop apps (e.g. cursor), configurable.
BRAIN_OAUTH_REDIRECT_SCHEMES = [
    scheme.strip()
    for scheme in (env_str("BRAIN_OAUTH_REDIRECT_SCHEMES") or "https,http,cursor,vscode").split(",")
    if scheme.strip()
]
OAUTH2_PROVIDER = provider_settings(BRAIN_BASE_URL, BRAIN_OAUTH_REDIRECT_SCHEMES)

# --------------------------------------------------------------------------- i18n, static, storage

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = Path(env_str("BRAIN_MEDIA_ROOT") or str(VAR_DIR / "media"))
# The git mirrors' local repositories: a cache of what was pushed, rebuilt from the remote
# when missing (the mirror's state is in PostgreSQL).
BRAIN_MIRROR_CACHE = Path(env_str("BRAIN_MIRROR_CACHE") or str(VAR_DIR / "mirror-cache"))
# How long one mirror run may spend in git: under the task's soft time limit, so a remote that
# does not answer ends as a recorded failure rather than a task cut off with nothing recorded.
BRAIN_MIRROR_RUN_SECONDS = env_int("BRAIN_MIRROR_RUN_SECONDS", max(CELERY_TASK_SOFT_TIME_LIMIT - 30, 10), minimum=5)

_s3_bucket = env_str("BRAIN_S3_BUCKET")
if _s3_bucket:
    _default_storage: dict[str, Any] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": _s3_bucket,
            "endpoint_url": env_url("BRAIN_S3_ENDPOINT_URL", schemes=("http", "https")),
            "region_name": env_str("BRAIN_S3_REGION"),
            "access_key": env_secret("BRAIN_S3_ACCESS_KEY_ID"),
            "secret_key": env_secret("BRAIN_S3_SECRET_ACCESS_KEY"),
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": False,
        },
    }
else:
    _default_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": MEDIA_ROOT}}
STORAGES = {
    "default": _default_storage,
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --------------------------------------------------------------------------- embeddings, LLM

BRAIN_EMBEDDINGS: dict[str, Any] = {
    "PROVIDER": env_choice("BRAIN_EMBEDDINGS_PROVIDER", ("local", "openai"), "local"),
    "URL": env_url("BRAIN_EMBEDDINGS_URL", schemes=("http", "https")),
    "API_KEY": env_secret("BRAIN_EMBEDDINGS_API_KEY"),
    "MODEL": env_str("BRAIN_EMBEDDINGS_MODEL"),
    "BATCH_SIZE": env_int("BRAIN_EMBEDDINGS_BATCH_SIZE", 32, minimum=1, maximum=512),
    "THREADS": env_int("BRAIN_EMBEDDINGS_THREADS", 2, minimum=1, maximum=64),
    "TIMEOUT": env_int("BRAIN_EMBEDDINGS_TIMEOUT", 30, minimum=1),
}
if BRAIN_EMBEDDINGS["PROVIDER"] == "openai" and not (BRAIN_EMBEDDINGS["URL"] and BRAIN_EMBEDDINGS["MODEL"]):
    raise ConfigurationError(
        "BRAIN_EMBEDDINGS_URL and BRAIN_EMBEDDINGS_MODEL are required when BRAIN_EMBEDDINGS_PROVIDER=openai"
    )

# Hybrid search (corpus.search): the fusion method and its weights are a measured choice;
# see docs/search.md for the evaluation behind the defaults.
BRAIN_SEARCH: dict[str, Any] = {
    # Min-max score fusion, one vote per page and arm, the any-term lexical arm at 0.3 times
    # the share of the query its best match covers, times 4 / the query's content words (at
    # most 4): at or above every arm and BM25 on all four judged sets (make bench-retrieval,
    # docs/search.md "Fusion").
    "FUSION": env_choice("BRAIN_SEARCH_FUSION", ("rrf", "weighted_rrf", "score", "zscore"), "score"),
    "FUSION_LEVEL": env_choice("BRAIN_SEARCH_FUSION_LEVEL", ("page", "chunk"), "page"),
    "LEXICAL": env_choice("BRAIN_SEARCH_LEXICAL", ("any", "and"), "any"),
    "ADAPTIVE": env_bool("BRAIN_SEARCH_ADAPTIVE", False),
    "COVERAGE_POWER": env_float("BRAIN_SEARCH_COVERAGE_POWER", 1.0, minimum=0, maximum=10),
    # A semantic candidate's score plus these times its page's similarity as a whole (the
    # mean of its chunk vectors) and its second-best chunk's (corpus.page_support): 0.3 / 0.3
    # lifted the default's mean nDCG@10 on the four sets from 0.769 to 0.785.
    "PAGE_CENTROID_WEIGHT": env_float("BRAIN_SEARCH_PAGE_CENTROID_WEIGHT", 0.3, minimum=0, maximum=10),
    "PAGE_SECOND_WEIGHT": env_float("BRAIN_SEARCH_PAGE_SECOND_WEIGHT", 0.3, minimum=0, maximum=10),
    "RRF_K": env_int("BRAIN_SEARCH_RRF_K", 60, minimum=1),
    "SEMANTIC_WEIGHT": env_float("BRAIN_SEARCH_SEMANTIC_WEIGHT", 1.0, minimum=0, maximum=100),
    "LEXICAL_WEIGHT": env_float("BRAIN_SEARCH_LEXICAL_WEIGHT", 0.3, minimum=0, maximum=100),
    # The lexical weight times LEXICAL_LENGTH / (the query's content words), at most
    # LEXICAL_LENGTH_MAX: less for long questions, more for a keyword or two (0: off).
    "LEXICAL_LENGTH": env_int("BRAIN_SEARCH_LEXICAL_LENGTH", 4, minimum=0, maximum=50),
    "LEXICAL_LENGTH_MAX": env_float("BRAIN_SEARCH_LEXICAL_LENGTH_MAX", 4.0, minimum=0, maximum=100),
    "CANDIDATES": env_int("BRAIN_SEARCH_CANDIDATES", 40, minimum=10, maximum=1000),
    "PER_PAGE": env_int("BRAIN_SEARCH_PER_PAGE", 2, minimum=1, maximum=20),
    "EF_SEARCH": env_int("BRAIN_SEARCH_EF_SEARCH", 100, minimum=10, maximum=1000),
    "QUERY_CACHE_SIZE": env_int("BRAIN_SEARCH_QUERY_CACHE_SIZE", 512, minimum=0),
    # When the caller sees at most this many pages, and at most this share of the corpus,
    # the semantic arm scans their chunks exactly instead of walking the HNSW graph past
    # hidden neighbours (see docs/search.md, "Scale").
    "EXACT_PAGES": env_int("BRAIN_SEARCH_EXACT_PAGES", 1000, minimum=0),
    "EXACT_FRACTION": env_float("BRAIN_SEARCH_EXACT_FRACTION", 0.1, minimum=0, maximum=1),
    # work_mem (MB) of the search transaction: the caller's visible-revision set must fit
    # in a hash (about 50 bytes a page), or PostgreSQL probes it linearly per candidate.
    "WORK_MEM_MB": env_int("BRAIN_SEARCH_WORK_MEM_MB", 32, minimum=4, maximum=4096),
    # The web search page's relevance floor: a result found by meaning alone needs at least
    # this cosine similarity (a nonsense query still has nearest neighbours; see
    # corpus/search_results.py). Measured with all-MiniLM-L6-v2 against 400 pgdocs pages: the
    # best match of 8 nonsense and off-topic queries peaked at 0.21, of 40 real pgdocs
    # questions it was at least 0.30; the floor sits between.
    "WEB_MIN_SIMILARITY": env_float("BRAIN_SEARCH_WEB_MIN_SIMILARITY", 0.25, minimum=-1, maximum=1),
}

BRAIN_BUILD_DRIVER: dict[str, int] = {
    # Files drafted per step (one transaction, one embedder call) and the step's lease.
    "BATCH_SIZE": env_int("BRAIN_BUILD_BATCH_SIZE", 25, minimum=1, maximum=1000),
    "LEASE_SECONDS": env_int("BRAIN_BUILD_LEASE_SECONDS", 300, minimum=5),
    "MAX_ZIP_BYTES": env_int("BRAIN_IMPORT_MAX_ZIP_BYTES", 50 * 1024 * 1024, minimum=1024),
    "MAX_FILE_BYTES": env_int("BRAIN_IMPORT_MAX_FILE_BYTES", 1024 * 1024, minimum=1024),
    # Pages one uploaded archive may hold: each is validated while the upload waits.
    "MAX_FILES": env_int("BRAIN_IMPORT_MAX_FILES", 2000, minimum=1),
}

BRAIN_BUILDS: dict[str, Any] = {
    # Build credentials live this long (checked on every request) unless revoked sooner.
    "CREDENTIAL_LIFETIME_SECONDS": env_int("BRAIN_BUILD_CREDENTIAL_LIFETIME", 7200, minimum=60),
    # A requester approving their own build is refused unless this is set.
    "ALLOW_SELF_APPROVAL": env_bool("BRAIN_BUILDS_ALLOW_SELF_APPROVAL", False),
}

# Memory: where a capture lands when neither the call nor the member says; up to how many
# visible memories recall scans exactly, and the HNSW beam width beyond (memory/recall.py).
BRAIN_MEMORY_DEFAULT_WORKSPACE = env_choice("BRAIN_MEMORY_DEFAULT_WORKSPACE", ("personal", "company"), "personal")
BRAIN_MEMORY_EF_SEARCH = env_int("BRAIN_MEMORY_EF_SEARCH", 400, minimum=10, maximum=1000)
BRAIN_MEMORY_EXACT_LIMIT = env_int("BRAIN_MEMORY_EXACT_LIMIT", 50_000, minimum=0)
# With a model configured (LLM_*), near-duplicate and contradicting captures are judged by
# it after commit (memory.verdicts); 0 keeps them flagged only. Memory text (masked) goes
# to the model.
BRAIN_MEMORY_MODEL_VERDICTS = env_bool("BRAIN_MEMORY_MODEL_VERDICTS", True)
# A vault or Notion import of more notes than this runs in a worker (memory/vault_jobs.py),
# its progress on a page of its own; smaller ones answer in the request (~65 ms a note here).
BRAIN_IMPORT_BACKGROUND_NOTES = env_int("BRAIN_IMPORT_BACKGROUND_NOTES", 200, minimum=0)
# How many of them run at once, across every worker: each holds a worker for minutes, and the
# others must stay free for answers, extractions and verdicts.
BRAIN_IMPORT_CONCURRENCY = env_int("BRAIN_IMPORT_CONCURRENCY", 1, minimum=1, maximum=64)
# Slack's Web API, for direct messages (weekly insights); another URL only for a test's fake server.
BRAIN_SLACK_API_URL = env_url("BRAIN_SLACK_API_URL", schemes=("http", "https")) or "https://slack.com/api/"
# Where a slash command's answer may be posted (its response_url must start so): Slack's hooks;
# another URL only for a test's fake server. Anything else is refused (a signed request must
# not make Brain post a member's answer wherever it says).
BRAIN_SLACK_RESPONSE_URL_PREFIX = (
    env_url("BRAIN_SLACK_RESPONSE_URL_PREFIX", schemes=("http", "https")) or "https://hooks.slack.com/"
)
# Mail capture (memory/inbound_mail.py): members forward mail to memory+<token>@<domain>; the
# receiver (`manage.py brain_inbound_mail`, the Procfile's `mail`) listens on loopback unless
# told otherwise — in production it sits behind the organisation's MX (docs/operations.md).
BRAIN_INBOUND_DOMAIN = (env_str("BRAIN_INBOUND_DOMAIN") or _base.hostname or "localhost").lower()
if "@" in BRAIN_INBOUND_DOMAIN or any(ch.isspace() for ch in BRAIN_INBOUND_DOMAIN):
    raise ConfigurationError("BRAIN_INBOUND_DOMAIN must be a domain name")
BRAIN_INBOUND_SMTP_HOST = env_str("BRAIN_INBOUND_SMTP_HOST") or "127.0.0.1"
BRAIN_INBOUND_SMTP_PORT = env_int("BRAIN_INBOUND_SMTP_PORT", 2525, minimum=1, maximum=65535)
BRAIN_INBOUND_MAX_BYTES = env_int("BRAIN_INBOUND_MAX_BYTES", 10 * 1024 * 1024, minimum=1024)
# Calendar subscriptions (memory/calendars.py): how often each is fetched, and whether its URL
# may point at private, loopback or link-local addresses (off: a member's URL must not reach
# inside the network the brain runs in).
BRAIN_CALENDAR_REFRESH_SECONDS = env_int("BRAIN_CALENDAR_REFRESH_SECONDS", 3600, minimum=300)
BRAIN_CALENDAR_ALLOW_PRIVATE = env_bool("BRAIN_CALENDAR_ALLOW_PRIVATE", False)

# Days after a page's as_of that its owner is asked (on the home page) to re-verify it, by
# page type; "default" for the rest. BRAIN_REVERIFY_DAYS=policy:90,topic:180,default:365.
BRAIN_REVERIFY_DAYS: dict[str, int] = env_int_map(
    "BRAIN_REVERIFY_DAYS", {"default": 180, "policy": 90, "runbook": 90}, minimum=1
)

# Document ingest: where the bytes are processed (written onto every extraction) and the
# limits that refuse a file before it exhausts memory.
BRAIN_PROCESSING_REGION = env_str("BRAIN_PROCESSING_REGION") or "local"
BRAIN_INGEST_LIMITS: dict[str, int] = {
    "MAX_BYTES": env_int("BRAIN_INGEST_MAX_BYTES", 25 * 1024 * 1024, minimum=1),
    "MAX_PAGES": env_int("BRAIN_INGEST_MAX_PAGES", 2000, minimum=1),
    "MAX_CHARS": env_int("BRAIN_INGEST_MAX_CHARS", 5_000_000, minimum=1),
    "MAX_EXPANDED_BYTES": env_int("BRAIN_INGEST_MAX_EXPANDED_BYTES", 200 * 1024 * 1024, minimum=1),
    "MAX_RATIO": env_int("BRAIN_INGEST_MAX_RATIO", 100, minimum=1),
    # CPU seconds one document may take to convert (0: no budget beyond Celery's time limit).
    "CPU_SECONDS": env_int("BRAIN_INGEST_CPU_SECONDS", 60, minimum=0),
}

# A page's size: every section is a chunk embedded when the page is written (in the request
# that writes it), so a page of 5 MB of one-line sections held a worker for hours.
BRAIN_PAGE_MAX_CHARS = env_int("BRAIN_PAGE_MAX_CHARS", 1_000_000, minimum=1000)
BRAIN_PAGE_MAX_HEADINGS = env_int("BRAIN_PAGE_MAX_HEADINGS", 2000, minimum=10)

# MCP calls per principal per one-minute window, by class.
BRAIN_MCP_RATE_LIMITS: dict[str, int] = {
    "read": env_int("BRAIN_MCP_RATE_READ", 600, minimum=1),
    "search": env_int("BRAIN_MCP_RATE_SEARCH", 120, minimum=1),
    # Writes that compute an embedding (remember, update, append) — from any surface.
    "write": env_int("BRAIN_RATE_WRITE", 120, minimum=1),
    # Records embedded by bulk imports (a 500-line memory import counts 500).
    "import": env_int("BRAIN_RATE_IMPORT_RECORDS", 1000, minimum=1),
    # Document uploads and page-archive imports.
    "upload": env_int("BRAIN_RATE_UPLOAD", 20, minimum=1),
    "ask": env_int("BRAIN_MCP_RATE_ASK", 10, minimum=1),
    # OAuth client registrations per client address (RFC 7591 is open to MCP clients).
    "register": env_int("BRAIN_OAUTH_REGISTER_RATE", 20, minimum=1),
    # Token and revocation requests per client address: checking a confidential client's secret is a
    # deliberately slow password hash (~0.4 s of CPU here), which anyone may ask for.
    "token": env_int("BRAIN_OAUTH_TOKEN_RATE", 60, minimum=1),
    # Sign-in attempts (web and admin) per client address, whatever the username: each one
    # runs the password hash; django-axes pauses one username at a time.
    "signin": env_int("BRAIN_LOGIN_RATE", 60, minimum=1),
}

LLM: dict[str, Any] = {
    "BASE_URL": env_url("LLM_BASE_URL", schemes=("http", "https")),
    "API_KEY": env_secret("LLM_API_KEY"),
    "MODEL": env_str("LLM_MODEL"),
    "TIMEOUT": env_int("LLM_TIMEOUT", 60, minimum=1),
    # Budgets per question: model calls (investigation steps) and completion tokens in all.
    "MAX_STEPS": env_int("LLM_MAX_STEPS", 4, minimum=1, maximum=20),
    "MAX_TOKENS": env_int("LLM_MAX_TOKENS", 4000, minimum=100),
}
if bool(LLM["BASE_URL"]) != bool(LLM["MODEL"]):
    raise ConfigurationError("LLM_BASE_URL and LLM_MODEL must be set together")

BRAIN_DEMO_PASSWORD = env_secret("BRAIN_DEMO_PASSWORD")

# Keys for integration secrets at rest (integrations.secrets): "1:<base64 32 bytes>,2:…".
# One machine: generated once into var/ (0600). Otherwise required to store a secret.
BRAIN_SECRETS_KEYS = env_secret("BRAIN_SECRETS_KEYS")
if not BRAIN_SECRETS_KEYS and EMBEDDED:
    _secrets_key_file = VAR_DIR / "secrets-keys"
    if not _secrets_key_file.exists():
        import base64 as _base64
        import secrets as _secrets

        _secrets_key_file.touch(mode=0o600)
        _secrets_key_file.write_text("1:" + _base64.b64encode(_secrets.token_bytes(32)).decode())
    BRAIN_SECRETS_KEYS = _secrets_key_file.read_text().strip()

# --------------------------------------------------------------------------- logging

LOG_LEVEL = env_choice("BRAIN_LOG_LEVEL", ("DEBUG", "INFO", "WARNING", "ERROR"), "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "brain.logging.RequestIdFilter"},
        "redact_secrets": {"()": "brain.logging.SecretRedactingFilter"},
    },
    "formatters": {"json": {"()": "brain.logging.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "filters": ["request_id", "redact_secrets"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        # Our own 4xx/5xx responses are logged by brain.middleware with the request id.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        "django.security.DisallowedHost": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        # runserver's request lines (development) go through the same filters as everything else.
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # django-axes logs every failed sign-in at INFO; lockouts come at WARNING.
        "axes": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Brain REST API",
    "DESCRIPTION": (
        "The governed corpus, sources, memories, builds and questions of this brain, under the caller's own "
        'grants. Errors are {"error": {"code", "message", "request_id"}}. See docs/api.md.'
    ),
    "VERSION": "1",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The document describes the API, never data: anyone may read it.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",  # served from our origin, never a CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "PREPROCESSING_HOOKS": ["api.schema.only_v1"],
    "COMPONENT_SPLIT_REQUEST": True,
}

REST_FRAMEWORK = {
    "EXCEPTION_HANDLER": "brain.errors.drf_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "api.schema.ToolSchema",
    "DEFAULT_PARSER_CLASSES": ["brain.rest_parsers.StrictJSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.negotiation.FormatNamed",
}
