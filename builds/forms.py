from __future__ import annotations

from django import forms


class ReviewForm(forms.Form):
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=4000)


class ZipImportForm(forms.Form):
    title = forms.CharField(max_length=200)
    archive = forms.FileField(help_text="A .zip of Markdown pages; each member's path is its page path.")
