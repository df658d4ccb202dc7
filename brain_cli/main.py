"""The ``brain`` command: your memories, the corpus search, questions and uploads from a shell.

Every command talks to REST v1 with the personal token saved by ``brain setup``. ``--json``
prints the server's answer as JSON for scripts. A failure prints one line on stderr and
exits with a code that says what kind of failure it was (``brain_cli.client``).
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import parse_qs, urlsplit

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
from rich.table import Table
from rich.text import Text

from brain_cli import config
from brain_cli.client import NOT_FOUND, REFUSED, UNAUTHORISED, UNAVAILABLE, USAGE, Api, CliError


class _Stdout(Console):
    def on_broken_pipe(self) -> None:
        """The reader closed the pipe (`brain list | head -1`): it has what it wanted. Rich's
        own answer is exit 1, the code of a refusal, which fails a `set -o pipefail` script."""
        self.quiet = True
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0)


# Markup off: what we print is mostly the server's text (titles, tags, content written by other
# people), and Rich would read "[/bold]" in a teammate's tag as markup — an error (the command
# died with a traceback) or a style that hides the text. Styles are given as Text spans instead.
out = _Stdout(highlight=False, soft_wrap=True, markup=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)

# What a terminal would act on in someone else's text: C0 and C1 controls (escape sequences
# that set the clipboard, hide or rewrite what is shown; a carriage return that overwrites a
# line) and bidirectional overrides that reorder it. Tabs and line breaks are handled apart.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _one_line(value: object) -> str:
    """The server's text (an id, a title, a tag, a message) as one line, controls removed: a
    line break in a teammate's text must not print a line that looks like another entry."""
    return _CONTROLS.sub("", str(value).replace("\n", " ").replace("\t", " "))


def _block(value: object, indent: str = "  ") -> str:
    """The server's multi-line text (a memory, a snippet, an answer), controls removed, every
    line indented under the entry it belongs to."""
    return indent + _CONTROLS.sub("", str(value)).replace("\n", "\n" + indent)


EXIT_CODES = """Exit codes: 0 done; 1 refused by the server (invalid input); 2 bad usage;
3 not set up, or the token is unknown, revoked or lacks the scope; 4 not found;
5 server unreachable or failing; 6 rate limited."""


class Context:
    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def api(self) -> Api:
        try:
            settings = config.load()
        except config.ConfigInvalid as invalid:
            raise CliError(str(invalid), UNAUTHORISED) from None
        if settings is None:
            raise CliError(
                "not set up: run `brain setup --url URL --token TOKEN` (BRAIN_URL naming another server than "
                "the saved one needs its own BRAIN_TOKEN)",
                UNAUTHORISED,
            )
        return Api(settings)

    def emit(self, data: Any, human: Callable[[Any], None]) -> None:
        if self.as_json:
            click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        else:
            human(data)


def _memory_id(text: str) -> str:
    """A memory id as the server writes it; anything else is a usage error here, never a path
    (``brain get count`` reached ``/memories/count``, another endpoint)."""
    try:
        return str(uuid.UUID(text.strip()))
    except ValueError:
        raise CliError(f"not a memory id: {text[:60]!r} (ids look like 6f1c…-…, see `brain list`)", USAGE) from None


def command(function: Callable[..., None]) -> Callable[..., None]:
    """Turn a ``CliError`` into one line on stderr and its exit code (never a traceback); an
    error nobody foresaw is one line too (its type and message), exit 1."""

    @wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> None:
        try:
            function(*args, **kwargs)
        except CliError as error:
            err.print(f"brain: {_one_line(error)}", markup=False)
            sys.exit(error.code)
        except BrokenPipeError:
            # The reader has what it wanted (`brain export --memories | head`): not our failure.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except OSError as error:
            where = f": {error.filename}" if error.filename else ""
            err.print(_one_line(f"brain: {error.strerror or error}{where}"), markup=False)
            sys.exit(1)
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise  # main() turns these into their own exit codes
        except (KeyError, TypeError) as error:  # a JSON object, but not the answer Brain gives
            said = f"the server's answer lacks what Brain answers ({type(error).__name__}: {error})"
            err.print(_one_line(f"brain: {said}: is the URL Brain's, and as new as this client?")[:300], markup=False)
            sys.exit(UNAVAILABLE)
        except Exception as error:  # a bug here, or an answer shaped unlike any we know
            err.print(f"brain: unexpected {type(error).__name__}: {_one_line(error)[:200]}", markup=False)
            sys.exit(1)

    return wrapped


@click.group(epilog=EXIT_CODES)
@click.option("--json", "as_json", is_flag=True, help="Print the server's answer as JSON.")
@click.version_option("1", prog_name="brain")
@click.pass_context
def cli(ctx: click.Context, as_json: bool) -> None:
    """Brain from the command line: remember, recall, search, ask, upload."""
    ctx.obj = Context(as_json)


def _memory_line(memory: dict[str, Any]) -> None:
    tags = f"  [{', '.join(_one_line(tag) for tag in memory['tags'])}]" if memory.get("tags") else ""
    head = f"  {_one_line(memory['workspace'])}  {_one_line(memory['status'])}{tags}"
    out.print(Text.assemble((_one_line(memory["id"]), "bold"), head))
    out.print(_block(memory["content"]))


def _degraded(answer: dict[str, Any]) -> None:
    if answer.get("degraded"):
        err.print("(keyword matches only: the embedding service is not answering)")


# --------------------------------------------------------------------------- setup


@cli.command()
@click.option("--url", help="The server's address (asked for when left out, at a terminal).")
@click.option("--token", help="From Security → Personal API tokens (asked for, hidden, at a terminal).")
@click.pass_obj
@command
def setup(ctx: Context, url: str | None, token: str | None) -> None:
    """Save the server URL and your personal token (checked first; stored readable by you only)."""
    url = url if url is not None else _asked("--url", "Brain URL (e.g. https://brain.example.org)")
    token = token if token is not None else _asked("--token", "Personal token (bmt_…)", hide_input=True)
    settings = config.Settings(url=url.strip().rstrip("/"), token=token.strip())
    problem = config.url_problem(settings.url)
    if problem is not None:
        raise CliError(problem, USAGE)
    if not (settings.token.isascii() and settings.token.isprintable()):
        raise CliError("the token holds characters a token never has: copy it again from your Brain", USAGE)
    try:
        teams = Api(settings).call("GET", "/team/workspaces")
    except CliError as failed:
        if failed.code == NOT_FOUND:  # Brain answered, but the API is not under this address
            raise CliError(f"{settings.url} is not Brain's address (no API under it): is the URL Brain's?",
                           UNAVAILABLE) from None  # fmt: skip
        raise
    if not isinstance(teams.get("teams"), list):  # checked before anything is saved
        raise CliError(f"{settings.url} did not answer as Brain does: is the URL Brain's?", UNAVAILABLE)
    path = config.save(settings)
    ctx.emit({"saved": str(path), "teams": teams["teams"]}, lambda _: out.print(f"Saved to {path}. Ready."))


def _asked(option: str, prompt: str, *, hide_input: bool = False) -> str:
    """An option left out, asked for at a terminal; without one (a script, CI) a usage error
    naming it — a prompt reading the end of standard input read as an interrupt (exit 130)."""
    if not sys.stdin.isatty():
        raise click.UsageError(f"{option} is required when standard input is not a terminal")
    return str(click.prompt(prompt, hide_input=hide_input))


# --------------------------------------------------------------------------- memories


@cli.command()
@click.argument("text", nargs=-1, required=True)
@click.option("--workspace", type=click.Choice(["personal", "company"]), help="Where it lands (default: yours).")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for more).")
@click.pass_obj
@command
def remember(ctx: Context, text: tuple[str, ...], workspace: str | None, tags: tuple[str, ...]) -> None:
    """Store a memory (TEXT, or - to read it from standard input)."""
    # "-" reads the memory from stdin (a file, a pipe): a shell argument holds at most ~128 KB,
    # and `echo … | brain remember -` stored the text "-".
    content = sys.stdin.read() if text == ("-",) else " ".join(text)
    body: dict[str, Any] = {"content": content}
    if workspace:
        body["workspace"] = workspace
    if tags:
        body["tags"] = list(tags)
    answer = ctx.api().call("POST", "/memories", json=body)
    ctx.emit(answer, lambda a: out.print(_one_line(f"{a['outcome'].capitalize()}: {a['id']} ({a['workspace']})")))


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--limit", default=5, show_default=True, type=click.IntRange(1, 20))
@click.pass_obj
@command
def recall(ctx: Context, query: tuple[str, ...], limit: int) -> None:
    """Find memories by meaning."""
    answer = ctx.api().call("GET", "/memories/recall", params={"query": " ".join(query), "topK": limit})

    def human(a: dict[str, Any]) -> None:
        _degraded(a)
        if not a["results"]:
            out.print("Nothing recalled.")
        for item in a["results"]:
            _memory_line(item)

    ctx.emit(answer, human)


@cli.command(name="list")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 50))
@click.option("--tag")
@click.option("--workspace", type=click.Choice(["personal", "company"]))
@click.option("--cursor", help="Where the previous list stopped (printed after it as 'More: …').")
@click.pass_obj
@command
def list_memories(ctx: Context, limit: int, tag: str | None, workspace: str | None, cursor: str | None) -> None:
    """Your most recent memories, newest first; a page at a time."""
    params: dict[str, Any] = {"limit": limit}
    if cursor:
        params["cursor"] = cursor
    if tag:
        params["tag"] = tag
    if workspace:
        params["workspace"] = workspace
    answer = ctx.api().call("GET", "/memories", params=params)

    def human(a: dict[str, Any]) -> None:
        if not a["results"]:
            out.print("No memories.")
        for memory in a["results"]:
            _memory_line(memory)
        following = parse_qs(urlsplit(str(a.get("next") or "")).query).get("cursor")
        if following:  # on stderr: `brain list | …` reads memories only
            err.print(f"More: brain list --cursor {_one_line(following[0])} (with the same options)")

    ctx.emit(answer, human)


@cli.command()
@click.argument("memory_id")
@click.pass_obj
@command
def get(ctx: Context, memory_id: str) -> None:
    """Show one memory."""
    memory_id = _memory_id(memory_id)  # a usage error before "not set up"
    ctx.emit(ctx.api().call("GET", f"/memories/{memory_id}"), _memory_line)


@cli.command()
@click.argument("memory_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
@command
def forget(ctx: Context, memory_id: str, yes: bool) -> None:
    """Delete a memory for good."""
    memory_id = _memory_id(memory_id)  # a usage error before "not set up" or the question
    if not yes:
        if not sys.stdin.isatty():
            # Nobody to ask: "n" piped in was read as a yes. Deleting for good takes --yes.
            raise CliError("forget deletes for good: pass --yes to confirm without a terminal", USAGE)
        if not click.confirm(f"Forget {memory_id} permanently?"):
            raise CliError("not forgotten", REFUSED)
    answer = ctx.api().call("DELETE", f"/memories/{memory_id}")
    ctx.emit(answer, lambda _: out.print(f"Forgotten: {memory_id}"))


@cli.command()
@click.argument("memory_id")
@click.option("--to", "workspace", type=click.Choice(["company", "personal"]), default="company", show_default=True)
@click.pass_obj
@command
def share(ctx: Context, memory_id: str, workspace: str) -> None:
    """Move a memory to the team layer (or back to yours)."""
    memory_id = _memory_id(memory_id)  # a usage error before "not set up"
    answer = ctx.api().call("POST", f"/memories/{memory_id}/share", json={"workspace": workspace})
    ctx.emit(answer, lambda _: out.print(f"Moved to {workspace}: {memory_id}"))


@cli.command()
@click.pass_obj
@command
def stats(ctx: Context) -> None:
    """Counts of the memories you can see."""
    answer = ctx.api().call("GET", "/memories/stats")

    def human(a: dict[str, Any]) -> None:
        table = Table("", "count", show_header=False)
        table.add_row("total", str(a["total"]))
        for group in ("workspace", "status", "kind"):
            for name, number in sorted(a[group].items()):
                table.add_row(_one_line(f"{group}: {name}"), str(number))
        out.print(table)

    ctx.emit(answer, human)


@cli.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="File to write, - for stdout (default: brain-export.zip; stdout for --memories).")  # fmt: skip
@click.option("--memories", is_flag=True, help="Your memories as JSON lines instead of the corpus ZIP.")
@click.option("--originals", is_flag=True, help="Also include each capture's uploaded original file.")
@click.pass_obj
@command
def export(ctx: Context, output: str | None, memories: bool, originals: bool) -> None:
    """Every page and capture you can read, as a ZIP of Markdown (or your memories, --memories). Streamed."""
    if memories and originals:
        raise click.UsageError("--originals goes with the corpus export, not --memories")
    if output is None and not memories:
        output = "brain-export.zip"
    to_stdout = output is None or output == "-"  # "-": standard output, as for any Unix tool
    target = Path(output or "-")
    if not to_stdout and not target.parent.is_dir():  # a usage error before "not set up"
        raise CliError(f"cannot write {output}: the folder {target.parent} does not exist", USAGE)
    answered: dict[str, str] = {}
    chunks = ctx.api().stream(
        "/memories/export" if memories else "/export" + ("?originals=true" if originals else ""),
        media_type="application/x-ndjson" if memories else "application/zip",
        headers=answered,
    )
    if to_stdout:
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        return
    # Progress on stderr at a terminal (bytes so far and speed: the size is not known ahead).
    with Progress(TextColumn("Exporting"), DownloadColumn(), TransferSpeedColumn(), console=err,
                  disable=ctx.as_json or not err.is_terminal) as progress:  # fmt: skip
        task = progress.add_task("export", total=None)

        def whole(path: Path) -> bool:
            if memories:  # one line a memory: at least as many as the server counted when it began
                return _whole_lines(path, int(answered.get(MEMORIES_HEADER, "0") or "0"))
            return _whole_zip(path)

        written = _write_whole(target, chunks, _advancer(progress, task), whole=whole)
    ctx.emit({"output": output, "bytes": written}, lambda _: err.print(f"Wrote {written:,} bytes to {output}"))


MEMORIES_HEADER = "x-brain-export-memories"  # how many memories the server began to send
_END = struct.Struct("<4s4H2LH")  # a ZIP's end record: signature, disks, entries, size, offset, comment
_END64 = struct.Struct("<4sQ2H2L4Q")  # the zip64 end record (the same, wider), before its locator
_LOCATOR64 = struct.Struct("<4sLQL")


def _whole_zip(path: Path) -> bool:
    """Whether the file is a whole ZIP: its own end record closes the file (the export writes no
    comment) and names a central directory ending right before it — not just any end record in
    the last bytes, as zipfile accepts (a cut right after a .docx original ends with the
    docx's own) — and that directory reads."""
    size = path.stat().st_size
    if size < _END.size:
        return False
    with path.open("rb") as handle:
        handle.seek(size - _END.size)
        signature, *_, entries, directory_size, directory_offset, comment = _END.unpack(handle.read(_END.size))
        if signature != b"PK\x05\x06" or comment:
            return False
        directory_end = size - _END.size
        if directory_offset == 0xFFFFFFFF or directory_size == 0xFFFFFFFF or entries == 0xFFFF:
            if directory_end < _LOCATOR64.size + _END64.size:
                return False
            handle.seek(directory_end - _LOCATOR64.size)
            locator = _LOCATOR64.unpack(handle.read(_LOCATOR64.size))
            if locator[0] != b"PK\x06\x07" or locator[2] != directory_end - _LOCATOR64.size - _END64.size:
                return False
            handle.seek(locator[2])
            end64 = _END64.unpack(handle.read(_END64.size))
            directory_end, directory_size, directory_offset = locator[2], end64[8], end64[9]
        if directory_offset + directory_size != directory_end:
            return False
    try:
        with zipfile.ZipFile(path) as archive:
            archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        return False
    return True


def _whole_lines(path: Path, expected: int) -> bool:
    """Whether a JSON-lines download ends where a line does and holds at least ``expected``
    lines (a stream cut between two lines ends with a newline too)."""
    size = path.stat().st_size
    if size == 0:
        return expected == 0
    with path.open("rb") as handle:
        handle.seek(size - 1)
        if handle.read(1) != b"\n":
            return False
        handle.seek(0)
        return sum(1 for _ in handle) >= expected


def _write_whole(
    target: Path,
    chunks: Iterator[bytes],
    advance: Callable[[int], None] | None = None,
    *,
    whole: Callable[[Path], bool] | None = None,
) -> int:
    """Write ``chunks`` to ``target`` all or nothing: into a private file beside it, moved over
    ``target`` only when the download ended well. A refused token, an unreachable server or a
    cut stream leaves a previous export where it was (opening ``target`` first emptied it).
    ``advance`` is told each chunk's size as it is written. ``whole`` checks the download is
    complete: a server (or proxy) ends a streamed answer that failed half-way by closing the
    connection, which an HTTP/1.0 client cannot tell from its end."""
    descriptor, partial = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    written = 0
    try:
        with os.fdopen(descriptor, "wb") as handle:
            for chunk in chunks:
                written += handle.write(chunk)
                if advance is not None:
                    advance(len(chunk))
        if whole is not None and not whole(Path(partial)):
            kept = "; the file already there is kept" if target.exists() else ""
            raise CliError(f"the download was cut short ({written:,} bytes, incomplete){kept}: try again", UNAVAILABLE)
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return written


# --------------------------------------------------------------------------- the corpus


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "--limit", default=10, show_default=True, type=click.IntRange(1, 50))
@click.option("--prefix", help="Only pages under this path prefix.")
@click.pass_obj
@command
def search(ctx: Context, query: tuple[str, ...], limit: int, prefix: str | None) -> None:
    """Search the pages you can read."""
    params: dict[str, Any] = {"query": " ".join(query), "k": limit}
    if prefix:
        params["prefix"] = prefix
    answer = ctx.api().call("GET", "/search", params=params)

    def human(a: dict[str, Any]) -> None:
        _degraded(a)
        if not a["results"]:
            out.print("No results.")
        for hit in a["results"]:
            out.print(Text.assemble((_one_line(hit["path"]), "bold"), f"  {_one_line(hit['title'])}"))
            out.print(_block(hit["snippet"]), markup=False)

    ctx.emit(answer, human)


@cli.command()
@click.argument("question", nargs=-1, required=True)
@click.option("--timeout", default=120, show_default=True, type=click.IntRange(1, 3600), help="Seconds to wait.")
@click.pass_obj
@command
def ask(ctx: Context, question: tuple[str, ...], timeout: int) -> None:
    """Ask a question; the answer cites pages (or says why there is none)."""
    api = ctx.api()
    filed = api.call("POST", "/questions", json={"question": " ".join(question)})
    deadline = time.monotonic() + timeout
    answer = filed
    with err.status("Waiting for the answer…", spinner="dots") if not ctx.as_json else _nothing():
        while True:
            # The server holds each poll up to wait_seconds: never past the caller's deadline.
            left = max(1, min(10, int(deadline - time.monotonic())))
            # The HTTP wait is bounded too: a server that hangs must not hold past --timeout.
            answer = api.call("GET", f"/questions/{filed['question_id']}", params={"wait_seconds": left},
                              timeout=left + 5)  # fmt: skip
            if answer["status"] in ("answered", "refused", "failed") or time.monotonic() >= deadline:
                break

    def human(a: dict[str, Any]) -> None:
        if a["status"] == "answered":
            out.print(_block(a["answer"], indent=""), markup=False)
            out.print("Sources: " + ", ".join(_one_line(citation) for citation in a["citations"]), markup=False)
        # No answer is a failure: its one line goes to stderr, as every failure's does.
        elif a["status"] in ("refused", "failed"):
            err.print(f"brain: no answer: {_one_line(a['refusal_reason'])}", markup=False)
        else:
            err.print(_one_line(f"brain: still {a['status']} after {timeout} s; question {a['question_id']}."))

    ctx.emit(answer, human)
    if answer["status"] not in ("answered",):
        sys.exit(1 if answer["status"] in ("refused", "failed") else 5)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _Counted:
    """A file that reports how much of it has been read (the upload's progress)."""

    def __init__(self, handle: BinaryIO, advance: Callable[[int], None]) -> None:
        self.handle = handle
        self.advance = advance

    def read(self, size: int = -1) -> bytes:
        chunk = self.handle.read(size)
        self.advance(len(chunk))
        return chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)


def _advancer(progress: Progress, task: Any) -> Callable[[int], None]:
    def advance(read: int) -> None:
        progress.advance(task, read)

    return advance


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--title", help="Title of the capture (one file only).")
@click.option("--category")
@click.pass_obj
@command
def upload(ctx: Context, files: tuple[str, ...], title: str | None, category: str | None) -> None:
    """Upload documents; each is extracted in the background (PDF, DOCX, HTML, Markdown, text, VTT, SRT)."""
    if title and len(files) > 1:
        raise CliError("--title names one file; upload several without it", 2)
    api = ctx.api()
    results = []
    failure: CliError | None = None
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  console=err, disable=ctx.as_json or not err.is_terminal) as progress:  # fmt: skip
        for name in files:
            path = Path(name)
            task = progress.add_task(path.name, total=path.stat().st_size)
            fields = {key: value for key, value in (("title", title), ("category", category)) if value}
            with path.open("rb") as handle:
                counted: Any = _Counted(handle, _advancer(progress, task))
                try:
                    results.append(api.upload(path.name, counted, fields))
                except CliError as refused:
                    # The files before it are uploaded: their keys are printed before the refusal.
                    failure = CliError(f"{path.name}: {refused}", refused.code)
                    break

    def human(all_results: list[dict[str, Any]]) -> None:
        for result in all_results:
            status = result["extraction"].get("status", "queued")
            if result.get("existing"):
                out.print(_one_line(f"Already uploaded as {result['key']} (these exact bytes): its title and "
                                    f"category are as they were — extraction {status}"))  # fmt: skip
            else:
                out.print(_one_line(f"Uploaded {result['key']} — extraction {status}"))

    if results or failure is None:
        ctx.emit(results, human)
    if failure is not None:
        raise failure


def main() -> None:
    """Entry point of the ``brain`` console script.

    Click's standalone mode turned Ctrl-C into "Aborted!" and exit 1, the code of a refusal:
    it is 130 here, as shells expect of an interrupt."""
    # Text the terminal's encoding cannot show (an accent on an ASCII terminal) is printed
    # escaped, never a failure of the command: it killed `brain get` with exit 1.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        cli.main(prog_name="brain", standalone_mode=False)
    except (KeyboardInterrupt, click.Abort):
        err.print("brain: interrupted")
        sys.exit(130)
    except click.ClickException as error:  # usage errors: click's own message and code (2)
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:  # --help, --version
        sys.exit(done.exit_code)
