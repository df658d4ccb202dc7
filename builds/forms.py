from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings


class ReviewForm(forms.Form):
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        max_length=4000,
        help_text="Recorded with your approval and shown in the page history.",
    )


class RejectForm(forms.Form):
    """A rejection must say why: the requester needs to know what to change."""

    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=4000,
        error_messages={"required": "Say why you reject this build, so its author knows what to change."},
    )

    def clean_reason(self) -> str:
        reason = str(self.cleaned_data["reason"]).strip()
        if not reason:
            raise forms.ValidationError("Say why you reject this build, so its author knows what to change.")
        return reason


class ZipImportForm(forms.Form):
    title = forms.CharField(max_length=200)
    archive = forms.FileField(help_text="A .zip of Markdown pages; each member's path is its page path.")

    def clean_archive(self) -> Any:
        archive = self.cleaned_data["archive"]
        limit = int(settings.BRAIN_BUILD_DRIVER["MAX_ZIP_BYTES"])
        if archive.size > limit:
            raise forms.ValidationError(f"the archive is {archive.size:,} bytes; the limit is {limit:,}")
        return archive
