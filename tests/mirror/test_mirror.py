"""The one-way git mirror, pushed to real repositories: a local bare one and smart HTTP on loopback.

Every check clones what was pushed and compares it with the export ZIP of the mirror's
service account: the two exits of the corpus give the same tree.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from brain.celery import app as celery_app
from builds.services import build_move_page, build_open, build_promote, build_submit, build_write_page
from corpus.export import corpus_files, zip_stream
from grants.models import AuditEvent
from grants.principals import SYSTEM
from grants.services import grant_issue, member_create, service_account_create
from integrations.models import IntegrationSecret
from mirror.models import Mirror
from mirror.services import mirror_adopt_remote, mirror_run, mirror_save
from tests.base import BrainTestCase, capture, page_markdown, publish
from tests.mirror.git_http import git_http_server

GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir(), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}  # fmt: skip


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env={**GIT_ENV, **(env or {})}, capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def tree_of_clone(url: str, branch: str = "main", env: dict[str, str] | None = None) -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as scratch:
        git("clone", "--quiet", "--branch", branch, url, f"{scratch}/clone", env=env)
        root = Path(scratch) / "clone"
        return {
            str(path.relative_to(root)): path.read_bytes()
            for path in sorted(root.rglob("*"))
            if path.is_file() and ".git" not in path.relative_to(root).parts
        }


def tree_of_export(principal: object) -> dict[str, bytes]:
    data = b"".join(zip_stream(corpus_files(principal)))  # type: ignore[arg-type]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def commits(url: str, branch: str = "main") -> list[str]:
    with tempfile.TemporaryDirectory() as scratch:
        git("clone", "--quiet", "--bare", url, f"{scratch}/c.git")
        return git("log", "--format=%H", branch, cwd=Path(scratch) / "c.git").split()


class MirrorTestCase(BrainTestCase):
    def setUp(self) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="brain-mirror-test-"))
        self.addCleanup(shutil.rmtree, self.scratch, True)
        settings_override = override_settings(BRAIN_MIRROR_CACHE=self.scratch / "cache")
        settings_override.enable()
        self.addCleanup(settings_override.disable)
        self.remote = self.scratch / "remote.git"
        git("init", "--bare", "--quiet", "--initial-branch=main", str(self.remote))
        self.service = service_account_create(actor=SYSTEM, name="docs-mirror")
        grant_issue(actor=SYSTEM, service_account=self.service, path="topics/", permission="read")
        grant_issue(actor=SYSTEM, service_account=self.service, path="captures/notes/", permission="read")
        capture("notes/kickoff", title="Kickoff", text="We agreed on Thursdays.")
        capture("secret/board", title="Board minutes", text="Hidden.")
        publish("topics/onboarding.md", title="Onboarding", sources=["notes/kickoff", "secret/board"])
        publish("hr/salaries.md", title="Salaries")  # outside the service account's grants
        self.victor = member_create(actor=SYSTEM, username="victor")
        grant_issue(actor=SYSTEM, member=self.victor, path="topics/", permission="approve")
        grant_issue(actor=SYSTEM, member=self.alice, path="topics/", permission="suggest")

    @staticmethod
    def monitor_health() -> dict[str, Any]:
        """/healthz as a monitor holding the health token reads it (with the mirrors' states)."""
        with override_settings(BRAIN_HEALTH_TOKEN="m" * 32):
            body: dict[str, Any] = Client().get("/healthz", HTTP_AUTHORIZATION="Bearer " + "m" * 32).json()
        return body

    def make_mirror(self, url: str | None = None, credential: str = "") -> Mirror:
        mirror = Mirror(name="docs", remote_url=url or f"file://{self.remote}", branch="main",
                        service_account=self.service)  # fmt: skip
        return mirror_save(actor=SYSTEM, mirror=mirror, credential=credential)

    def promote(self, title: str, note: str, **pages: str) -> None:
        build = build_open(actor=self.alice, title=title)
        for path, body in pages.items():
            build_write_page(build=build, path=path, markdown=page_markdown(title=path, body=body))
        build_submit(actor=self.alice, build=build)
        build_promote(actor=self.victor, build=build, note=note)

    def assert_mirror_is_the_export(self, url: str | None = None, env: dict[str, str] | None = None) -> None:
        assert tree_of_clone(url or f"file://{self.remote}", env=env) == tree_of_export(self.service)


class LocalBareRepositoryTests(MirrorTestCase):
    def test_first_push_is_the_export_and_an_unchanged_corpus_makes_no_commit(self) -> None:
        mirror = self.make_mirror()
        outcome = mirror_run(mirror_id=mirror.pk)
        assert outcome.state == "ok"
        assert outcome.commit
        tree = tree_of_clone(f"file://{self.remote}")
        assert "topics/onboarding.md" in tree
        assert "captures/notes/kickoff.md" in tree
        assert "hr/salaries.md" not in tree
        assert not any("secret/board" in name for name in tree)
        assert b"secret/board" not in tree["topics/onboarding.md"]  # a hidden capture is not even named
        self.assert_mirror_is_the_export()
        assert git("log", "-1", "--format=%s", cwd=self.remote).startswith("Mirror the corpus: 4 files")
        again = mirror_run(mirror_id=mirror.pk)
        assert again.state == "ok"
        assert again.commit == ""
        assert len(commits(f"file://{self.remote}")) == 1

    def test_a_deactivated_service_account_pauses_its_mirror_instead_of_emptying_it(self) -> None:
        """Its account reading nothing, the next run pushed a tree of README.md and figures.yml."""
        from accounts.services import service_account_change

        mirror = self.make_mirror()
        first = mirror_run(mirror_id=mirror.pk).commit
        service_account_change(actor=SYSTEM, account=self.service, description="", is_active=False)
        outcome = mirror_run(mirror_id=mirror.pk)
        assert outcome.commit == ""
        assert "paused" in outcome.detail
        assert "deactivated" in outcome.detail
        assert commits(f"file://{self.remote}") == [first]
        service_account_change(actor=SYSTEM, account=self.service, description="", is_active=True)
        mirror_run(mirror_id=mirror.pk)
        mirror.refresh_from_db()
        assert mirror.last_error == ""
        self.assert_mirror_is_the_export()

    def test_a_promotion_makes_exactly_one_commit_naming_build_approver_and_note(self) -> None:
        mirror = self.make_mirror()
        mirror_run(mirror_id=mirror.pk)
        celery_app.conf.task_always_eager = True  # the real task, run in this process
        self.addCleanup(setattr, celery_app.conf, "task_always_eager", False)
        with self.captureOnCommitCallbacks(execute=True):
            self.promote("Onboarding refresh", "Checked with HR", **{"topics/onboarding.md": "# New\n\nFresh.\n"})
        history = commits(f"file://{self.remote}")
        assert len(history) == 2
        message = git("log", "-1", "--format=%an%n%B", cwd=self.remote)
        build = Mirror.objects.get(pk=mirror.pk)
        assert message.startswith("victor\nOnboarding refresh (approved by victor)")
        assert "Note: Checked with HR" in message
        assert "Brain-Build: " in message
        assert build.state == "ok"
        assert build.pushed_sha == history[0]
        self.assert_mirror_is_the_export()
        assert AuditEvent.objects.filter(action="mirror.push").count() == 2

    def test_a_build_on_hidden_pages_is_not_named_and_changes_nothing(self) -> None:
        mirror = self.make_mirror()
        mirror_run(mirror_id=mirror.pk)
        grant_issue(actor=SYSTEM, member=self.alice, path="hr/", permission="suggest")
        grant_issue(actor=SYSTEM, member=self.victor, path="hr/", permission="approve")
        self.promote("Pay rise for Dana", "secret raise", **{"hr/salaries.md": "# Salaries\n\nDana: more.\n"})
        assert mirror_run(mirror_id=mirror.pk).commit == ""
        self.promote("Onboarding", "ok", **{"topics/onboarding.md": "# Onboarding\n\nv2.\n"})
        mirror_run(mirror_id=mirror.pk)
        log = git("log", "--format=%B", cwd=self.remote)
        assert "Dana" not in log
        assert "Pay rise" not in log
        assert "secret raise" not in log

    def test_incremental_pushes_keep_the_tree_identical_to_the_export(self) -> None:
        mirror = self.make_mirror()
        mirror_run(mirror_id=mirror.pk)
        # A page citing one that does not exist yet: it appears only once the other is live.
        self.promote("Pricing", "", **{"topics/pricing/price-list.md": "# Prices\n\nTeam plan.\n"})
        publish("topics/faq.md", title="FAQ", related=["topics/later.md", "topics/onboarding.md"])
        mirror_run(mirror_id=mirror.pk)
        self.assert_mirror_is_the_export()
        assert b"topics/later.md" not in tree_of_clone(f"file://{self.remote}")["topics/faq.md"]
        publish("topics/later.md", title="Later")
        mirror_run(mirror_id=mirror.pk)
        assert b"topics/later.md" in tree_of_clone(f"file://{self.remote}")["topics/faq.md"]
        self.assert_mirror_is_the_export()
        # A move, a capture that becomes readable, and a page that stops being readable.
        build = build_open(actor=self.alice, title="Move")
        build_move_page(build=build, path="topics/later.md", new_path="topics/now.md")
        build_submit(actor=self.alice, build=build)
        build_promote(actor=self.victor, build=build)
        grant_issue(actor=SYSTEM, service_account=self.service, path="captures/secret/", permission="read")
        grant_issue(actor=SYSTEM, service_account=self.service, path="hr/", permission="read")
        mirror_run(mirror_id=mirror.pk)
        tree = tree_of_clone(f"file://{self.remote}")
        assert "topics/now.md" in tree
        assert "topics/later.md" not in tree
        assert "hr/salaries.md" in tree
        assert b"secret/board" in tree["topics/onboarding.md"]
        self.assert_mirror_is_the_export()
        # The cache is only a cache: without it the next push still builds on the branch.
        shutil.rmtree(self.scratch / "cache")
        publish("topics/after-cache.md", title="After the cache")
        assert mirror_run(mirror_id=mirror.pk).commit
        self.assert_mirror_is_the_export()
        history = commits(f"file://{self.remote}")
        assert len(history) == len(set(history)) == 5

    def test_a_remote_that_moved_is_reported_not_overwritten_until_adopted(self) -> None:
        mirror = self.make_mirror()
        mirror_run(mirror_id=mirror.pk)
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch) / "w"
            git("clone", "--quiet", f"file://{self.remote}", str(work))
            (work / "topics/onboarding.md").write_text("edited in the mirror\n")
            git("-c", "user.name=Eve", "-c", "user.email=eve@example.com", "commit", "-qam", "edit", cwd=work)
            git("push", "--quiet", "origin", "main", cwd=work)
        theirs = git("rev-parse", "main", cwd=self.remote).strip()
        publish("topics/new.md", title="New")
        outcome = mirror_run(mirror_id=mirror.pk)
        assert outcome.state == "moved"
        assert git("rev-parse", "main", cwd=self.remote).strip() == theirs  # untouched
        assert "mirrors" not in Client().get("/healthz").json()  # not to anyone: to a monitor with the token
        health = self.monitor_health()
        assert health["mirrors"] == {"docs": "moved"}
        assert "mirrors.docs: moved" in health["attention"]
        assert mirror_run(mirror_id=mirror.pk).state == "moved"  # still, and audited once
        assert AuditEvent.objects.filter(action="mirror.moved").count() == 1
        mirror_adopt_remote(actor=SYSTEM, mirror=Mirror.objects.get(pk=mirror.pk))
        outcome = mirror_run(mirror_id=mirror.pk)
        assert outcome.state == "ok"
        assert outcome.commit
        assert git("rev-parse", f"{outcome.commit}^", cwd=self.remote).strip() == theirs  # on top, not forced
        self.assert_mirror_is_the_export()
        assert self.monitor_health()["mirrors"] == {"docs": "ok"}

    def test_a_push_whose_record_was_lost_is_recognised_not_called_moved(self) -> None:
        mirror = self.make_mirror()
        mirror_run(mirror_id=mirror.pk)
        first = Mirror.objects.get(pk=mirror.pk).pushed_sha
        publish("topics/new.md", title="New")
        second = mirror_run(mirror_id=mirror.pk).commit
        Mirror.objects.filter(pk=mirror.pk).update(pushed_sha=first)  # as if that transaction rolled back
        outcome = mirror_run(mirror_id=mirror.pk)
        assert outcome.state == "ok"
        assert outcome.commit == ""
        assert Mirror.objects.get(pk=mirror.pk).pushed_sha == second
        self.assert_mirror_is_the_export()
        # Even the very first push: its commit has no parent, the record said "never pushed".
        Mirror.objects.filter(pk=mirror.pk).update(pushed_sha="", state="new")
        git("update-ref", "refs/heads/main", first, cwd=self.remote)  # the remote as after that first push
        assert mirror_run(mirror_id=mirror.pk).state == "ok"
        assert git("rev-parse", "main", cwd=self.remote).strip() != first  # carried on: a new commit on it

    def test_a_branch_that_already_has_history_is_not_taken_over(self) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            work = Path(scratch) / "w"
            git("init", "--quiet", "--initial-branch=main", str(work))
            (work / "README.md").write_text("someone else's\n")
            git("add", ".", cwd=work)
            git("-c", "user.name=Eve", "-c", "user.email=eve@example.com", "commit", "-qm", "theirs", cwd=work)
            git("push", "--quiet", f"file://{self.remote}", "main", cwd=work)
        mirror = self.make_mirror()
        assert mirror_run(mirror_id=mirror.pk).state == "moved"
        assert len(commits(f"file://{self.remote}")) == 1


class ConfigurationTests(MirrorTestCase):
    def test_changing_the_service_account_rewrites_the_tree_on_the_same_branch(self) -> None:
        """The new account's tree is one more commit on the brain's own branch, not "moved"."""
        mirror = self.make_mirror()
        first = mirror_run(mirror_id=mirror.pk).commit
        publish("topics/new.md", title="New")
        second = mirror_run(mirror_id=mirror.pk).commit
        other = service_account_create(actor=SYSTEM, name="wider-mirror")
        grant_issue(actor=SYSTEM, service_account=other, path="", permission="read")
        mirror = Mirror.objects.get(pk=mirror.pk)
        mirror.service_account = other
        mirror_save(actor=SYSTEM, mirror=mirror)
        outcome = mirror_run(mirror_id=mirror.pk)
        assert outcome.state == "ok", outcome.detail
        assert commits(f"file://{self.remote}") == [outcome.commit, second, first]
        self.service = other
        self.assert_mirror_is_the_export()
        assert "hr/salaries.md" in "".join(tree_of_clone(f"file://{self.remote}"))
        # A new branch, by contrast, starts over: nothing is known about it.
        mirror = Mirror.objects.get(pk=mirror.pk)
        mirror.branch = "elsewhere"
        mirror_save(actor=SYSTEM, mirror=mirror)
        restarted = Mirror.objects.get(pk=mirror.pk)
        assert (restarted.state, restarted.pushed_sha, restarted.files.count()) == ("new", "", 0)
        assert mirror_run(mirror_id=mirror.pk).state == "ok"
        assert commits(f"file://{self.remote}", "elsewhere") == [Mirror.objects.get(pk=mirror.pk).pushed_sha]

    def test_a_run_that_fails_unexpectedly_is_recorded_not_lost(self) -> None:
        mirror = self.make_mirror()
        with mock.patch("mirror.services.corpus_plan", side_effect=RuntimeError("boom")):
            outcome = mirror_run(mirror_id=mirror.pk)
        assert outcome.state == "failing"
        stored = Mirror.objects.get(pk=mirror.pk)
        assert stored.state == "failing"
        assert "RuntimeError" in stored.last_error
        assert "boom" not in stored.last_error  # the details are in the log, not on an admin page
        assert mirror_run(mirror_id=mirror.pk).state == "ok"

    def test_the_sweep_queues_each_mirror_apart_and_goes_on_past_one_it_cannot_queue(self) -> None:
        from mirror.tasks import mirror_push_task, mirror_sweep_task

        first = self.make_mirror()
        second = mirror_save(actor=SYSTEM, mirror=Mirror(name="docs-two", remote_url=f"file://{self.remote}",
                                                         branch="other", service_account=self.service))  # fmt: skip
        with mock.patch.object(mirror_push_task, "delay", side_effect=[RuntimeError("broker"), None]) as delay:
            mirror_sweep_task.apply()
        assert sorted(call.args[0] for call in delay.call_args_list) == sorted([first.pk, second.pk])

    def test_a_second_run_while_one_holds_the_mirror_is_queued_after_it(self) -> None:
        from mirror.services import _claim_run, _release_run

        mirror = self.make_mirror()
        lease = _claim_run(mirror.pk)
        assert lease is not None
        busy = mirror_run(mirror_id=mirror.pk)
        assert busy.detail.startswith("busy")
        assert git("for-each-ref", cwd=self.remote) == ""  # nothing ran: the remote has no branch
        # An administrator's save with a copy read before the claim keeps the claim.
        stale = Mirror.objects.get(pk=mirror.pk)
        stale.lease_token = None
        stale.known_hosts = "changed"
        mirror_save(actor=SYSTEM, mirror=stale)
        assert Mirror.objects.get(pk=mirror.pk).lease_token == lease.token
        with mock.patch("mirror.services.enqueue_on_commit") as queued:
            _release_run(lease)
        queued.assert_called_once_with("mirror.push", mirror.pk)  # the run asked for meanwhile
        before_the_push = Mirror.objects.get(pk=mirror.pk)  # an admin's form, opened now
        assert mirror_run(mirror_id=mirror.pk).state == "ok"
        pushed = Mirror.objects.get(pk=mirror.pk).pushed_sha
        before_the_push.known_hosts = "changed again"
        mirror_save(actor=SYSTEM, mirror=before_the_push)  # saved after the push: the result stays
        assert Mirror.objects.get(pk=mirror.pk).pushed_sha == pushed != ""
        assert Mirror.objects.get(pk=mirror.pk).state == "ok"
        # A claim whose worker died (expired) is taken over.
        dead = _claim_run(mirror.pk)
        assert dead is not None
        Mirror.objects.filter(pk=mirror.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
        assert not mirror_run(mirror_id=mirror.pk).detail.startswith("busy")

    def test_a_failed_run_after_recognising_a_lost_push_recognises_it_again(self) -> None:
        mirror = self.make_mirror()
        mirror_run(mirror_id=mirror.pk)
        first = Mirror.objects.get(pk=mirror.pk).pushed_sha
        publish("topics/new.md", title="New")
        second = mirror_run(mirror_id=mirror.pk).commit
        Mirror.objects.filter(pk=mirror.pk).update(pushed_sha=first)  # the record of the push was lost
        with mock.patch("mirror.services.corpus_plan", side_effect=RuntimeError("boom")):
            assert mirror_run(mirror_id=mirror.pk).state == "failing"
        assert Mirror.objects.get(pk=mirror.pk).pushed_sha == first  # not the new head with the old manifest
        assert mirror_run(mirror_id=mirror.pk).state == "ok"
        assert Mirror.objects.get(pk=mirror.pk).pushed_sha == second
        self.assert_mirror_is_the_export()

    def test_a_credential_that_does_not_decrypt_is_said_not_sent_as_none(self) -> None:
        key = "1:" + base64.b64encode(b"a" * 32).decode()
        other_key = "1:" + base64.b64encode(b"b" * 32).decode()
        with override_settings(BRAIN_SECRETS_KEYS=key):
            mirror = self.make_mirror("https://127.0.0.1:9/brain.git", credential="ghp_sometoken000000000000000")
        with override_settings(BRAIN_SECRETS_KEYS=other_key):
            outcome = mirror_run(mirror_id=mirror.pk)
        assert outcome.state == "failing"
        assert "does not decrypt" in outcome.detail

    def test_remote_urls_and_branches_are_rejected_not_repaired(self) -> None:
        from django.core.exceptions import ValidationError

        bad = {
            "ext::sh -c touch% /tmp/pwned": "remote_url", "https://user:token@github.com/o/r.git": "remote_url",
            "http://github.com/o/r.git": "remote_url", "-uhttps://x": "remote_url", "file://relative/x": "remote_url",
            "git@github.com:org/repo.git": "known_hosts", "https://git.example.com:99999/o/r.git": "remote_url",
            "https://git.example.com:0/o/r.git": "remote_url", "https://git.example.com:x/o/r.git": "remote_url",
            "ssh://git:token@github.com/o/r.git": "remote_url", "https://token@github.com/o/r.git": "remote_url",
            "https://github.com/o/r.git?access_token=ghp_x": "remote_url",
            "https://github.com/o/r.git#ghp_x": "remote_url",
            # A login name on ssh is no credential: accepted, then asks for the host's key.
            "ssh://git@github.com/org/repo.git": "known_hosts",
        }  # fmt: skip
        for url, field in bad.items():
            mirror = Mirror(name="m", remote_url=url, branch="main", service_account=self.service)
            with pytest.raises(ValidationError) as refused:
                mirror_save(actor=SYSTEM, mirror=mirror)
            assert field in refused.value.message_dict, url
        for branch in ("-f", "a..b", "main.lock", "a b", "refs/heads/x@{1}"):
            mirror = Mirror(name="m", remote_url=f"file://{self.remote}", branch=branch, service_account=self.service)
            with pytest.raises(ValidationError) as refused:
                mirror_save(actor=SYSTEM, mirror=mirror)
            assert "branch" in refused.value.message_dict, branch
        assert not Mirror.objects.exists()

    def test_the_admin_configures_a_mirror_with_a_write_only_credential(self) -> None:
        admin = member_create(actor=SYSTEM, username="root", role="owner", password="pw-root-12345")
        admin.user.is_staff = True
        admin.user.save()
        client = Client()
        client.force_login(admin.user)
        assert client.get("/admin/mirror/mirror/add/").status_code == 200
        response = client.post("/admin/mirror/mirror/add/", {
            "name": "docs", "remote_url": "https://git.example.com/org/brain.git", "branch": "main",
            "service_account": self.service.pk, "credential": "ghp_examplepushtoken1234567890", "known_hosts": "",
            "enabled": "on",
        })  # fmt: skip
        assert response.status_code == 302, response.content[:2000]
        mirror = Mirror.objects.get(name="docs")
        secret = IntegrationSecret.objects.get(name=mirror.secret_name)
        assert b"ghp_example" not in bytes(secret.ciphertext)
        page = client.get(f"/admin/mirror/mirror/{mirror.pk}/change/").content.decode()
        assert "ghp_example" not in page
        bad = client.post("/admin/mirror/mirror/add/", {"name": "x", "remote_url": "ext::sh", "branch": "main",
                                                          "service_account": self.service.pk})  # fmt: skip
        assert bad.status_code == 200
        assert "must be https://" in bad.content.decode()


class SmartHttpTests(MirrorTestCase):
    TOKEN = "ghp_loopbacktoken0123456789abcdef"

    def test_push_over_http_with_a_token_and_clone_equals_the_export(self) -> None:
        root = self.scratch / "served"
        root.mkdir()
        git("init", "--bare", "--quiet", "--initial-branch=main", str(root / "brain.git"))
        git("config", "http.receivepack", "true", cwd=root / "brain.git")
        with git_http_server(root, self.TOKEN) as (base, seen):
            url = f"{base}/brain.git"
            mirror = self.make_mirror(url, credential=self.TOKEN)
            outcome = mirror_run(mirror_id=mirror.pk)
            assert outcome.state == "ok", outcome.detail
            assert outcome.commit
            header = "Authorization: Basic " + base64.b64encode(f"x:{self.TOKEN}".encode()).decode()
            env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader", "GIT_CONFIG_VALUE_0": header}
            self.assert_mirror_is_the_export(url, env=env)
            self.promote("More", "", **{"topics/more.md": "# More\n\nText.\n"})
            assert mirror_run(mirror_id=mirror.pk).commit
            self.assert_mirror_is_the_export(url, env=env)
            assert all(value.startswith("Basic ") for value in seen)
            # A wrong token: failing, said plainly, and the token never in what is shown.
            wrong = "ghp_wrongtoken000000000000000000"
            mirror_save(actor=SYSTEM, mirror=Mirror.objects.get(pk=mirror.pk), credential=wrong)
            publish("topics/yet-more.md", title="Yet more")
            failed = mirror_run(mirror_id=mirror.pk)
            assert failed.state == "failing"
            stored = Mirror.objects.get(pk=mirror.pk)
            assert stored.last_error
            assert wrong not in stored.last_error
            assert self.TOKEN not in stored.last_error
