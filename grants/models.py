"""Who may do what: members, groups, service accounts, grants and the audit log."""

from __future__ import annotations

from typing import TypeVar

from django.conf import settings
from django.db import models
from django.db.models import Q

from grants.querysets import GrantQuerySet

# The grant path grammar, as a PostgreSQL regex: '' (the whole corpus), a prefix ending
# in '/', or an exact path. Segments are lower-case ASCII letters, digits, '-', '_', '.',
# and never start with '.'. The same rules as brain.text.paths, kept in SQL so a row that
# breaks them cannot exist.
GRANT_PATH_SQL_REGEX = r"^([a-z0-9_-][a-z0-9._-]*/)*([a-z0-9_-][a-z0-9._-]*)?$"
CATEGORY_SQL_REGEX = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_C = TypeVar("_C", bound=models.IntegerChoices)


def _by_label(choices: type[_C], name: str) -> _C:
    """The member of an ordered choice whose label is ``name``; ``ValueError`` otherwise."""
    for member in choices:
        if member.label == name:
            return member
    raise ValueError(name)


class Sensitivity(models.IntegerChoices):
    """Ordered tiers: ``ordinary`` < ``restricted`` < ``secret`` (comparable in SQL)."""

    ORDINARY = 0, "ordinary"
    RESTRICTED = 1, "restricted"
    SECRET = 2, "secret"

    @classmethod
    def from_name(cls, name: str) -> Sensitivity:
        return _by_label(cls, name)


class Permission(models.IntegerChoices):
    """Ordered permissions: ``read`` < ``suggest`` < ``approve``."""

    READ = 1, "read"
    SUGGEST = 2, "suggest"
    APPROVE = 3, "approve"

    @classmethod
    def from_name(cls, name: str) -> Permission:
        return _by_label(cls, name)


class Member(models.Model):
    """A person of the organisation, one per Django user.

    The role administers (members, grants, settings); it confers no content access.
    An inactive member gets nothing from any grant.
    """

    class Role(models.TextChoices):
        OWNER = "owner"
        ADMIN = "admin"
        MEMBER = "member"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="member")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    is_active = models.BooleanField(default=True)
    slack_user_id = models.CharField(max_length=32, blank=True, null=True, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when the person left (accounts.services.member_offboard): their personal layer is gone,
    # what they shared stays, shown as written by a former member. An offboarded member is inactive.
    offboarded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["user__username"]
        constraints = [
            models.CheckConstraint(condition=Q(role__in=["owner", "admin", "member"]), name="member_role"),
            models.CheckConstraint(
                condition=Q(offboarded_at__isnull=True) | Q(is_active=False), name="member_offboarded_inactive"
            ),
        ]

    def __str__(self) -> str:
        return self.username

    @property
    def username(self) -> str:
        return str(self.user.get_username())

    @property
    def display_name(self) -> str:
        """How the member is named beside what they wrote: a person who left is a former member."""
        return f"{self.username} (former member)" if self.offboarded_at else self.username

    @property
    def binds_as_owner(self) -> bool:
        """Whether the ``owner`` change policy still makes this member a page's only approver.

        Only while they are an active member: a page whose owner was suspended or has left
        falls back to its approve holders, or it could never be changed or handed on."""
        return self.is_active and bool(self.user.is_active)

    @property
    def is_administrator(self) -> bool:
        return self.is_active and self.role in (self.Role.OWNER, self.Role.ADMIN)


class Group(models.Model):
    """A named set of members; a grant to the group reaches each active member."""

    name = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=255, blank=True)
    members = models.ManyToManyField(Member, related_name="groups", blank=True, through="GroupMembership")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "member group"
        constraints = [models.CheckConstraint(condition=Q(name__regex=CATEGORY_SQL_REGEX), name="group_name_form")]

    def __str__(self) -> str:
        return self.name


class GroupMembership(models.Model):
    """One member in one group."""

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="memberships")
    member = models.ForeignKey(Member, on_delete=models.CASCADE, related_name="memberships")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["group", "member"], name="group_membership_unique")]

    def __str__(self) -> str:
        return f"{self.member} in {self.group}"


class ServiceAccount(models.Model):
    """A non-person principal (a mirror, a bot); reaches content only through its grants."""

    name = models.CharField(max_length=64, unique=True)
    description = models.CharField(max_length=255, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.CheckConstraint(condition=Q(name__regex=CATEGORY_SQL_REGEX), name="service_name_form")]

    def __str__(self) -> str:
        return self.name


class Grant(models.Model):
    """One subject + one scope + one permission.

    Exactly one subject (member, group or service account) and exactly one scope: a
    path form (``''`` = the whole corpus, a prefix ending in ``/``, or an exact path) or
    a category — never both. The grammar is enforced by CHECK constraints, so an
    unparsable grant cannot exist as a row. There are no deny grants.
    """

    member = models.ForeignKey(Member, null=True, blank=True, on_delete=models.CASCADE, related_name="grants")
    group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.CASCADE, related_name="grants")
    service_account = models.ForeignKey(
        ServiceAccount, null=True, blank=True, on_delete=models.CASCADE, related_name="grants"
    )
    path = models.CharField(max_length=255, null=True, blank=True)
    category = models.CharField(max_length=64, null=True, blank=True)
    permission = models.PositiveSmallIntegerField(choices=Permission.choices)
    created_by = models.ForeignKey(Member, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = GrantQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(member__isnull=False, group__isnull=True, service_account__isnull=True)
                    | Q(member__isnull=True, group__isnull=False, service_account__isnull=True)
                    | Q(member__isnull=True, group__isnull=True, service_account__isnull=False)
                ),
                name="grant_exactly_one_subject",
            ),
            models.CheckConstraint(
                condition=Q(path__isnull=False, category__isnull=True) | Q(path__isnull=True, category__isnull=False),
                name="grant_exactly_one_scope",
            ),
            models.CheckConstraint(
                condition=Q(path__isnull=True) | (Q(path__regex=GRANT_PATH_SQL_REGEX) & ~Q(path__contains="//")),
                name="grant_path_form",
            ),
            models.CheckConstraint(
                condition=Q(category__isnull=True) | Q(category__regex=CATEGORY_SQL_REGEX),
                name="grant_category_form",
            ),
            models.CheckConstraint(condition=Q(permission__in=[1, 2, 3]), name="grant_permission_known"),
            # A second identical grant adds no access, and revoking one of the two would look
            # like removing it while the other still grants it.
            models.UniqueConstraint(
                fields=["member", "group", "service_account", "path", "category", "permission"],
                nulls_distinct=False,
                name="grant_once",
                violation_error_message="This subject already holds this grant; nothing was issued.",
            ),
        ]
        indexes = [models.Index(fields=["path"]), models.Index(fields=["category"])]

    def __str__(self) -> str:
        return f"{self.subject_label} {self.get_permission_display()} on {self.scope_label}"

    @property
    def subject_label(self) -> str:
        if self.member_id:
            return f"member:{self.member}"
        if self.group_id:
            return f"group:{self.group}"
        return f"service:{self.service_account}"

    @property
    def scope_label(self) -> str:
        if self.category is not None:
            return f"category:{self.category}"
        return f"path:{self.path or '(everything)'}"

    @property
    def is_prefix(self) -> bool:
        return self.path is not None and (self.path == "" or self.path.endswith("/"))


class AuditEvent(models.Model):
    """One thing that happened, append-only (a trigger refuses UPDATE and DELETE).

    ``metadata`` holds identifiers and counts — never content, and never a refused value.
    The actor is recorded by id and label without a foreign key, so removing a user
    never rewrites history.
    """

    actor_kind = models.CharField(max_length=16)  # member | service | user (a login without a member row) | system
    actor_id = models.BigIntegerField(null=True, blank=True)
    actor_label = models.CharField(max_length=150)
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=32, blank=True)
    target = models.CharField(max_length=300, blank=True)
    request_id = models.CharField(max_length=128, null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["action", "created_at"]), models.Index(fields=["target_type", "target"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor_label} {self.action} {self.target}"
