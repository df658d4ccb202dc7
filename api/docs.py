"""The Swagger UI page of the OpenAPI document (its own module: ``api.schema`` is loaded by
drf-spectacular's views module, which this one imports)."""

from __future__ import annotations

from drf_spectacular.views import SpectacularSwaggerSplitView


class DocsView(SpectacularSwaggerSplitView):
    """It renders only through its HTML template, so it answers GET and HEAD: DRF's OPTIONS
    metadata carries no template (a 500 for anyone who asked)."""

    http_method_names = ["get", "head"]
