from django.apps import AppConfig


class ApiConfig(AppConfig):
    """REST API v1 (Django REST framework): the MCP tools' operations and the rest, over HTTP."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "api"
    verbose_name = "REST API"
