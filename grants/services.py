"""The only writes to members, groups, service accounts and grants.

Each service runs in a transaction, checks that the actor may administer (owner or
admin role, or ``SYSTEM``), validates, writes, and appends an audit event. Roles
administer; they never confer content access.
"""

from __future__ import annotations

import logging
from typing import Any

from axes.utils import reset as axes_reset
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from brain.logins import login_named
from brain.text.paths import PathError, validate_category, validate_scope_path
from brain.text.secrets import refuse
from grants.audit import audit_record
from grants.models import Grant, Group, GroupMembership, Member, Permission, ServiceAccount
from grants.principals import Principal, SystemPrincipal, actor_fields

logger = logging.getLogger(__name__)


def require_administrator(actor: Principal | None) -> None:
    """Raise ``PermissionDenied`` unless ``actor`` is SYSTEM or an active owner/admin."""
    if isinstance(actor, SystemPrincipal):
        return
    if isinstance(actor, Member) and actor.is_administrator and actor.user.is_active:
        return
    raise PermissionDenied("only an owner or admin may administer members and grants")


def email_in_use(email: str, *, besides: Any = None) -> bool:
    """Whether a user other than ``besides`` holds ``email`` (case-insensitively).

    A member who has left (offboarded) no longer holds it: single sign-on matches active
    members only, and a person who comes back is added again with their own address.
    """
    users = get_user_model().objects.filter(email__iexact=email.strip()).exclude(member__offboarded_at__isnull=False)
    if besides is not None:
        users = users.exclude(pk=besides.pk)
    return bool(users.exists())


def _serialise_claims(*names: str) -> None:
    """Hold a transaction lock on each name (case-folded) until the caller commits.

    Usernames and addresses are unique case-insensitively, which no index of Django's user
    table says; two requests adding "Carol" and "carol" at once would both pass a check that
    reads before either writes. The second now waits, then sees the first's row. Group and
    service-account names are claimed the same way (``group:<name>``), so a second add of one
    name is refused as taken rather than failing on the unique index.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        for name in sorted({name.casefold() for name in names if name}):
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('member-claim:' || %s))", [name])


def member_create(
    *,
    actor: Principal,
    username: str,
    email: str = "",
    role: str = Member.Role.MEMBER,
    password: str | None = None,
    slack_user_id: str | None = None,
) -> Member:
    """Create a user and their member row. Raises ``ValidationError`` on a taken name or bad role."""
    require_administrator(actor)
    if role not in Member.Role.values:
        raise ValidationError({"role": f"role must be one of {', '.join(Member.Role.values)}"})
    refusals = member_create_refusals(actor, role=role)
    if refusals:
        raise ValidationError(refusals)
    User = get_user_model()
    # As Django stores it (NFKC, in the user's clean()): checked before that, "Ａlice" passed
    # the taken-name check and was then stored as "Alice", beside "alice".
    username = User.normalize_username(username)
    refuse(username, field="username")  # shown in every list, audit row and log line
    refuse(email, field="email")
    slack_user_id = (slack_user_id or "").strip() or None
    with transaction.atomic():
        _serialise_claims(f"user:{username}", f"email:{email.strip()}" if email else "")
        # Case-insensitively: "Bob" beside "bob" is one person to everyone reading a name, and
        # two members sharing an address both lose single sign-on (it matches by email).
        if username_taken(username):
            raise ValidationError({"username": f"a user named {username!r} already exists"})
        if email and email_in_use(email):
            raise ValidationError({"email": "another member already uses this email address"})
        user = User(username=username, email=email)
        user.full_clean(exclude=["password"])
        if password:
            # Validated where a person types it (the admin's form, the invitation page, the
            # brain_member command); the demo seed's configured password is its operator's.
            user.set_password(password)
        else:
            user.set_unusable_password()
        member = Member(user=user, role=role, slack_user_id=slack_user_id)
        member.full_clean(exclude=["user"], validate_unique=False)
        if slack_user_id and Member.objects.filter(slack_user_id=slack_user_id).exists():
            raise ValidationError({"slack_user_id": "another member is already linked to this Slack user id"})
        # Staff status lets owners/admins into the Django admin; it is not content access.
        user.is_staff = role in (Member.Role.OWNER, Member.Role.ADMIN)  # type: ignore[attr-defined]
        user.save()
        member.user = user
        member.save()
        audit_record(
            actor=actor, action="member.create", target_type="member", target=username, metadata={"role": role}
        )
    return member


def member_ensure(*, actor: Principal, user: Any, role: str = Member.Role.MEMBER) -> Member:
    """The member row of an existing user, created if missing (e.g. a superuser made by createsuperuser)."""
    require_administrator(actor)
    with transaction.atomic():
        member, created = Member.objects.get_or_create(user=user, defaults={"role": role})
        if created:
            audit_record(actor=actor, action="member.create", target_type="member", target=member.username)
    return member


ONLY_OWNERS_MAKE_OWNERS = "only an owner can make someone an owner or take the role away"


def may_touch_ownership(actor: Principal) -> bool:
    """Owners (and the system) give and take the owner role; an admin raising someone above
    their own role — a confederate who then raises them — would make the role meaningless."""
    return isinstance(actor, SystemPrincipal) or (isinstance(actor, Member) and actor.role == Member.Role.OWNER)


def lock_active_owners() -> list[int]:
    """Lock the active owners' rows, lowest id first, and return their ids.

    Every change that may take the last owner away locks the owners first, in one order, and
    only then its own member: two owners demoting each other at once took the two rows in
    opposite orders, and PostgreSQL ended one of them as a deadlock (a server error).
    """
    owners = Member.objects.select_for_update().filter(role=Member.Role.OWNER, is_active=True, user__is_active=True)
    return list(owners.order_by("pk").values_list("pk", flat=True))


def refuse_losing_the_last_owner(member: Member) -> None:
    """Raise ``ValidationError`` when ``member`` is the last active owner.

    Call it inside the caller's transaction: the owners' rows are locked, so two administrators
    demoting or suspending the last two owners at once cannot both pass.
    """
    if member.role != Member.Role.OWNER:
        return
    if not [pk for pk in lock_active_owners() if pk != member.pk]:
        raise ValidationError(f"{member.username} is the last active owner; make someone else owner first")


def member_create_refusals(actor: Principal, *, role: str) -> dict[str, str]:
    """Why ``actor`` may not add a member with ``role`` (field → reason); empty when nothing stops it."""
    return {"role": ONLY_OWNERS_MAKE_OWNERS} if role == Member.Role.OWNER and not may_touch_ownership(actor) else {}


def member_change_refusals(actor: Principal, member: Member, *, role: str, is_active: bool) -> dict[str, str]:
    """Why ``actor`` may not give ``member`` this role and active flag (field → reason); empty
    when nothing stops it. Forms ask first to show the reasons beside the fields;
    ``member_update`` asks again under its locks."""
    refusals: dict[str, str] = {}
    role_changes = role != member.role
    deactivates = member.is_active and not is_active
    if not (role_changes or deactivates):
        return refusals
    field = "role" if role_changes else "is_active"
    if isinstance(actor, Member) and actor.pk == member.pk:
        refusals[field] = "you cannot change your own role or deactivate yourself; ask another administrator"
        return refusals
    if role_changes and Member.Role.OWNER in (member.role, role) and not may_touch_ownership(actor):
        refusals["role"] = ONLY_OWNERS_MAKE_OWNERS
        return refusals
    if deactivates and member.role == Member.Role.OWNER and not may_touch_ownership(actor):
        refusals["is_active"] = "only an owner can deactivate an owner"
        return refusals
    if member.role == Member.Role.OWNER and (deactivates or role != Member.Role.OWNER):
        try:
            refuse_losing_the_last_owner(member)
        except ValidationError as error:
            refusals[field] = " ".join(error.messages)
    return refusals


def member_update(*, actor: Principal, member: Member, role: str, is_active: bool, slack_user_id: str | None) -> Member:
    """Change a member's role, active flag or Slack id.

    Refused (``ValidationError`` naming the field, nothing written) when it would change the
    actor's own role or deactivate them, give or take the owner role without being an owner,
    or leave no active owner (``member_change_refusals``).
    """
    require_administrator(actor)
    if role not in Member.Role.values:
        raise ValidationError({"role": f"role must be one of {', '.join(Member.Role.values)}"})
    with transaction.atomic():
        lock_active_owners()  # before the member's own row: one lock order with every owner change
        locked = Member.objects.select_for_update().select_related("user").get(pk=member.pk)
        refusals = member_change_refusals(actor, locked, role=role, is_active=is_active)
        if refusals:
            raise ValidationError(refusals)
        changes = {
            key: value
            for key, value in (("role", role), ("is_active", is_active), ("slack_user_id", slack_user_id or None))
            if getattr(locked, key) != value
        }
        # A role or active flag given or taken is said with both values (who was made an owner,
        # not only that a role changed); a Slack id is the person's, named only as changed.
        shown = {key: {"from": getattr(locked, key), "to": value} for key, value in changes.items()
                 if key in ("role", "is_active")}  # fmt: skip
        for key, value in changes.items():
            setattr(locked, key, value)
        if changes:
            locked.save(update_fields=list(changes))
            locked.user.is_staff = locked.role in (Member.Role.OWNER, Member.Role.ADMIN)
            locked.user.save(update_fields=["is_staff"])
            audit_record(
                actor=actor,
                action="member.update",
                target_type="member",
                target=locked.username,
                metadata={"fields": sorted(changes), **shown},
            )
    return locked


def username_taken(username: str) -> bool:
    """Whether a login holds ``username`` as people read it: case-insensitively, and with
    Unicode's case folding, where PostgreSQL's does not fold (``straße`` is ``STRASSE``, a
    final ``ς`` is ``σ``): such a pair is one name to everyone reading it."""
    return login_named(username) is not None


def group_name_taken(name: str) -> bool:
    """Whether a group holds ``name``, asked under the name's claim: inside a transaction (an
    admin form's validation runs in its save's), a second add of the name waits for the
    first to commit and then sees it, so it is told "already exists" beside the field."""
    _serialise_claims(f"group:{name}")
    return bool(Group.objects.filter(name=name).exists())


def service_account_name_taken(name: str) -> bool:
    """As ``group_name_taken``, for a service account's name."""
    _serialise_claims(f"service-account:{name}")
    return bool(ServiceAccount.objects.filter(name=name).exists())


def group_create(*, actor: Principal, name: str, description: str = "") -> Group:
    require_administrator(actor)
    try:
        validate_category(name)
    except PathError:
        raise ValidationError({"name": "group name must be 1-64 of a-z, 0-9, '-', '_'"}) from None
    with transaction.atomic():
        if group_name_taken(name):
            raise ValidationError({"name": f"a group named {name!r} already exists"})
        group = Group.objects.create(name=name, description=description)
        audit_record(actor=actor, action="group.create", target_type="group", target=name)
    return group


def group_update(*, actor: Principal, group: Group, description: str) -> Group:
    """Change a group's description (its name is its identity and does not change)."""
    require_administrator(actor)
    with transaction.atomic():
        locked = Group.objects.select_for_update().get(pk=group.pk)
        if locked.description != description:
            locked.description = description
            locked.save(update_fields=["description"])
            audit_record(actor=actor, action="group.update", target_type="group", target=locked.name)
    return locked


def group_add_member(*, actor: Principal, group: Group, member: Member) -> None:
    """Add ``member`` to ``group`` (idempotent)."""
    require_administrator(actor)
    with transaction.atomic():
        _, created = GroupMembership.objects.get_or_create(group=group, member=member)
        if created:
            audit_record(
                actor=actor, action="group.add_member", target_type="group", target=group.name,
                metadata={"member": member.username},
            )  # fmt: skip


def group_remove_member(*, actor: Principal, group: Group, member: Member) -> None:
    require_administrator(actor)
    with transaction.atomic():
        deleted, _ = GroupMembership.objects.filter(group=group, member=member).delete()
        if deleted:
            audit_record(
                actor=actor, action="group.remove_member", target_type="group", target=group.name,
                metadata={"member": member.username},
            )  # fmt: skip


def service_account_create(*, actor: Principal, name: str, description: str = "") -> ServiceAccount:
    require_administrator(actor)
    try:
        validate_category(name)
    except PathError:
        raise ValidationError({"name": "service account name must be 1-64 of a-z, 0-9, '-', '_'"}) from None
    with transaction.atomic():
        if service_account_name_taken(name):
            raise ValidationError({"name": f"a service account named {name!r} already exists"})
        account = ServiceAccount.objects.create(name=name, description=description)
        audit_record(actor=actor, action="service_account.create", target_type="service_account", target=name)
    return account


def service_account_update(
    *, actor: Principal, account: ServiceAccount, description: str, is_active: bool
) -> ServiceAccount:
    """Change a service account's description or deactivate it (it then reaches nothing)."""
    require_administrator(actor)
    with transaction.atomic():
        locked = ServiceAccount.objects.select_for_update().get(pk=account.pk)
        changes = {k: v for k, v in (("description", description), ("is_active", is_active)) if getattr(locked, k) != v}
        for key, value in changes.items():
            setattr(locked, key, value)
        if changes:
            locked.save(update_fields=list(changes))
            audit_record(
                actor=actor,
                action="service_account.update",
                target_type="service_account",
                target=locked.name,
                metadata={"fields": sorted(changes)},
            )
    return locked


def grant_issue(
    *,
    actor: Principal,
    permission: str | int,
    member: Member | None = None,
    group: Group | None = None,
    service_account: ServiceAccount | None = None,
    path: str | None = None,
    category: str | None = None,
) -> Grant:
    """Issue one grant. Exactly one subject and exactly one scope, or ``ValidationError``.

    The path scope is validated by the same canonical-path rules as pages (rejected, not
    repaired); the database CHECK constraints are the last line behind this.
    """
    require_administrator(actor)
    level = grant_check(
        member=member, group=group, service_account=service_account, path=path, category=category, permission=permission
    )
    duplicate = _identical_grant(member, group, service_account, path, category, level)
    if duplicate is not None:
        raise ValidationError({"scope": _already_held(duplicate)})
    with transaction.atomic():
        try:
            with transaction.atomic():  # a savepoint: a refused row leaves this block usable
                grant = Grant.objects.create(
                    member=member,
                    group=group,
                    service_account=service_account,
                    path=path,
                    category=category,
                    permission=level,
                    created_by=actor if isinstance(actor, Member) else None,
                )
        except IntegrityError:
            # The same grant issued at the same moment by another request, or (behind
            # grant_check) a grammar the CHECK constraints refuse.
            duplicate = _identical_grant(member, group, service_account, path, category, level)
            if duplicate is not None:
                raise ValidationError({"scope": _already_held(duplicate)}) from None
            raise ValidationError({"scope": "the grant breaks the grant grammar"}) from None
        audit_record(
            actor=actor,
            action="grant.issue",
            target_type="grant",
            target=str(grant.pk),
            metadata={"subject": grant.subject_label, "scope": grant.scope_label, "permission": level.label},
        )
    return grant


def grant_check(
    *,
    member: Member | None,
    group: Group | None,
    service_account: ServiceAccount | None,
    path: str | None,
    category: str | None,
    permission: str | int | None,
) -> Permission:
    """Validate a grant's parts; return its permission or raise ``ValidationError`` naming each problem."""
    errors: dict[str, str] = {}
    if sum(subject is not None for subject in (member, group, service_account)) != 1:
        errors["subject"] = "a grant names exactly one subject: a member, a group or a service account"
    if (path is None) == (category is None):
        errors["scope"] = "a grant has exactly one scope: a path (exact or prefix ending in '/') or a category"
    elif path is not None:
        try:
            validate_scope_path(path)
        except PathError as exc:
            errors["path"] = f"{exc.message} (rule: {exc.rule})"
        else:
            problem = _names_nothing(path)
            if problem is not None:
                errors["path"] = problem
    elif category is not None:
        try:
            validate_category(category)
        except PathError as exc:
            errors["category"] = exc.message
    level = Permission.READ
    try:
        if isinstance(permission, str):
            level = Permission.from_name(permission)
        elif permission is not None:
            level = Permission(permission)
        else:
            raise ValueError("permission is required")
    except ValueError:
        errors["permission"] = "permission must be one of read, suggest, approve"
    if errors:
        raise ValidationError(errors)
    return level


def _names_nothing(path: str) -> str | None:
    """Why an exact grant path can never match anything, or None. Grants reach pages (their
    paths end in ``.md``) and captures (under ``captures/``): ``topics`` is neither, and a
    grant on it was accepted, matched nothing and looked like a folder grant in every list."""
    if path == "" or path.endswith("/") or path.endswith(".md") or path.startswith(CAPTURES):
        return None
    return (
        f"{path!r} names no page (a page's path ends in .md) and no capture (under {CAPTURES}): "
        f"for everything in the folder, end it with '/' ({path}/)"
    )


CAPTURES = "captures/"  # where captures' paths live (``corpus.sources``: captures/<key>)


def _identical_grant(
    member: Member | None,
    group: Group | None,
    service_account: ServiceAccount | None,
    path: str | None,
    category: str | None,
    level: Permission,
) -> Grant | None:
    """The grant with exactly these parts, if one was issued (at most one: ``grant_once``)."""
    return Grant.objects.filter(
        member=member, group=group, service_account=service_account, path=path, category=category, permission=level
    ).first()


def grant_held_already(
    *,
    member: Member | None,
    group: Group | None,
    service_account: ServiceAccount | None,
    path: str | None,
    category: str | None,
    permission: Permission,
) -> str | None:
    """Why issuing exactly this grant would be refused as a duplicate, or None (for forms)."""
    duplicate = _identical_grant(member, group, service_account, path, category, permission)
    return _already_held(duplicate) if duplicate is not None else None


def _already_held(grant: Grant) -> str:
    return f"{grant.subject_label} already holds this grant (grant {grant.pk}); nothing was issued"


def grant_revoke(*, actor: Principal, grant: Grant) -> None:
    """Delete a grant; it stops counting on the next request (grants are never cached)."""
    require_administrator(actor)
    with transaction.atomic():
        metadata = {
            "subject": grant.subject_label,
            "scope": grant.scope_label,
            "permission": grant.get_permission_display(),
        }
        grant_id = grant.pk
        Grant.objects.filter(pk=grant_id).delete()
        audit_record(actor=actor, action="grant.revoke", target_type="grant", target=str(grant_id), metadata=metadata)


def password_set_by_administrator(*, actor: Principal, user: Any) -> None:
    """Record that an administrator set ``user``'s password, and tell the person by email.

    Called by the admin after Django's own password form saved the change. The audit event
    names the actor and the account, never the password; the email says when, by whom and
    what to do if it was unexpected.
    """
    username = str(user.get_username())
    audit_record(actor=actor, action="member.password_set", target_type="user", target=username)
    # The sign-in pause tells the person to ask for a new password: with it, they may sign in.
    axes_reset(username=username)
    if not user.email:
        logger.warning("password of %s set by an administrator; they have no email address to be told", username)
        return
    _kind, _id, label = actor_fields(actor)
    send_mail(
        subject="Your Brain password was changed by an administrator",
        message=(
            f"Hello {username},\n\nAn administrator ({label}) set a new password for your Brain account "
            f"on {timezone.now():%Y-%m-%d %H:%M} UTC. If you did not ask for this, tell your administrator "
            "or security team now.\n"
        ),
        from_email=None,
        recipient_list=[user.email],
        fail_silently=True,
    )
