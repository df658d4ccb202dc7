from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings


class ReviewForm(forms.Form):
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=4000)


class ZipImportForm(forms.Form):
    title = forms.CharField(max_length=200)
    archive = forms.FileField(help_text="A .zip of Markdown pages; each member's path is its page path.")

    def clean_archive(self) -> Any:
        archive = self.cleaned_data["archive"]
        limit = int(settings.BRAIN_BUILD_DRIVER["MAX_ZIP_BYTES"])
        if archive.size > limit:
            raise forms.ValidationError(f"the archive is {archive.size:,} bytes; the limit is {limit:,}")
        return archive
