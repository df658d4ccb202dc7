from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """People come and go: invitations, sign-in sessions, suspension, offboarding, single sign-on.

    The top of the app layering: it orchestrates the write paths of every app that holds
    a member's credentials or data (memory, answers, builds, oauth), so none of them has
    to know about the others.
    """

    default_auto_field = "django.db.models.BigAutoField"
    name = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from accounts import sessions  # noqa: F401  (connects the sign-in signal receivers)
