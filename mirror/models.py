"""A one-way git mirror of the corpus, and the manifest of what it last pushed."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from brain.leases import LeasedJob
from brain.text.paths import PathError, validate_category
from grants.models import CATEGORY_SQL_REGEX, ServiceAccount
from mirror.git import check_branch, remote_transport

NAME_RULE = "lower-case letters, digits, '-' and '_', starting with a letter or digit, at most 64"


class Mirror(LeasedJob):
    """Where the corpus is mirrored, as whom, and what the remote looked like last time.

    The repository is an output: the brain only ever fast-forwards the branch with commits
    it wrote. ``pushed_sha`` is the commit it last pushed ('' before the first push); a
    remote branch anywhere else is ``moved`` and is left alone until an administrator
    adopts it. The credential (token or deploy key) is an encrypted integration secret
    named ``secret_name``, never a field here.
    """

    class State(models.TextChoices):
        NEW = "new", "not pushed yet"
        OK = "ok", "up to date"
        MOVED = "moved", "remote moved: someone else wrote to the branch"
        FAILING = "failing", "failing"

    name = models.CharField(max_length=64, unique=True, help_text=f"{NAME_RULE.capitalize()}.")
    remote_url = models.CharField(
        max_length=500,
        help_text="https://github.com/org/repo.git, git@github.com:org/repo.git, ssh://… or file:///srv/repo.git",
    )
    branch = models.CharField(max_length=200, default="main")
    service_account = models.ForeignKey(
        ServiceAccount,
        on_delete=models.PROTECT,
        related_name="mirrors",
        help_text="The mirror holds exactly what this service account's grants let it read.",
    )
    known_hosts = models.TextField(
        blank=True, help_text="For SSH remotes: the host's public keys (e.g. the output of ssh-keyscan github.com)."
    )
    enabled = models.BooleanField(default=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.NEW)
    pushed_sha = models.CharField(max_length=40, blank=True)
    pushed_at = models.DateTimeField(null=True, blank=True)
    remote_sha_seen = models.CharField(max_length=40, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    # The newest promotion already named in a mirror commit.
    promotion_mark = models.BigIntegerField(default=0)
    # The run in progress is the row's lease (``LeasedJob``: its token, when its worker is
    # presumed dead, how many runs started); ``run_again``: another run was asked for
    # meanwhile (the holder queues it when it gives the lease back).
    run_again = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(name__regex=CATEGORY_SQL_REGEX), name="mirror_name_form"),
            models.CheckConstraint(condition=Q(state__in=["new", "ok", "moved", "failing"]), name="mirror_state_known"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def secret_name(self) -> str:
        return f"mirror_{self.pk}_credential"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.name:
            # Said here, by name: the database's check would only say its constraint is violated.
            try:
                validate_category(self.name)  # the grammar of group and account names, and the CHECK's
            except PathError:
                errors["name"] = f"{self.name[:64]!r} is not a mirror name: use {NAME_RULE}"
        try:
            transport = remote_transport(self.remote_url)
        except ValueError as exc:
            errors["remote_url"] = str(exc)
            transport = ""
        try:
            check_branch(self.branch)
        except ValueError as exc:
            errors["branch"] = str(exc)
        if transport == "ssh" and not self.known_hosts.strip():
            errors["known_hosts"] = "an SSH remote needs its host keys, so a changed host is refused, not trusted"
        if errors:
            raise ValidationError(errors)


class MirrorFile(models.Model):
    """One file of the tree the mirror last pushed: which row it came from and its blob id.

    ``stamp`` is the row's stamp when it was read (``corpus.export.Entry``); ``references``
    are the pages and captures it cites, whose readability decides what it shows.
    """

    mirror = models.ForeignKey(Mirror, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=600)
    kind = models.CharField(max_length=8)
    subject = models.CharField(max_length=600, blank=True)
    stamp = models.CharField(max_length=64, blank=True)
    blob = models.CharField(max_length=40)
    references = ArrayField(models.CharField(max_length=600), default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["mirror", "name"], name="mirror_file_unique")]
        # "Which files cite a page that appeared or vanished" is an array overlap.
        indexes = [GinIndex(fields=["references"], name="mirror_file_references")]

    def __str__(self) -> str:
        return f"{self.mirror_id}:{self.name}"
