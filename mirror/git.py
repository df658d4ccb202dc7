"""The git CLI, run the few ways the mirror needs it, with nothing of the machine's git setup.

Why the git CLI and not dulwich: the mirror's hard parts are git's own — negotiating an
incremental push over smart HTTP and SSH, refusing non-fast-forward updates, writing a
10k-file tree quickly. The CLI is the reference implementation of all three, ships in every
Debian image (``git`` is already in ours), and ``git fast-import`` writes a commit that
touches three files in milliseconds whatever the tree's size, which is what keeps an
incremental push a small fraction of the first one. dulwich is a fine library, but its push
builds packs in Python and its SSH support shells out to ``ssh`` anyway.

Every command runs in the mirror's cache repository (a bare repository under
``BRAIN_MIRROR_CACHE``: a cache, rebuilt from the remote when missing) with:

- no system or global git configuration (a credential helper or hook on the host cannot
  see or change what the mirror does) and no terminal prompts;
- only the ``file``, ``http``, ``https`` and ``ssh`` transports (``ext::`` runs commands);
- the credential in the environment, never on a command line (``ps`` shows those): a token
  as an HTTP ``Authorization`` header, an SSH key in a 0600 file that lives for one command,
  checked against the configured known hosts.

``GitError`` carries git's own message with the credential scrubbed; it is safe to show an
administrator.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

# One git command's limit; a whole run has its own (``BRAIN_MIRROR_RUN_SECONDS``), below the task's.
TIMEOUT_SECONDS = 300
RUN_SECONDS_SETTING = "BRAIN_MIRROR_RUN_SECONDS"
LOOPBACK = {"localhost", "127.0.0.1", "::1"}
# user@host:path (scp-like SSH); the user and host without anything a shell or git option could use.
SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[A-Za-z0-9._/~-]+$")
BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<![./])$")
SHA = re.compile(r"^[0-9a-f]{40}$")


class GitError(Exception):
    """A git command failed; the message is git's, scrubbed of the credential."""


class PushRejected(GitError):
    """The remote branch is not where the mirror left it: the push would not be a fast-forward."""


@dataclass(frozen=True)
class Remote:
    url: str
    branch: str
    credential: str = ""  # a token (http/https) or an SSH private key (ssh); never logged
    known_hosts: str = ""  # for ssh: the host keys to trust (``ssh-keyscan`` output)

    @property
    def transport(self) -> str:
        return remote_transport(self.url)


def remote_transport(url: str) -> str:
    """``file``, ``http``, ``https`` or ``ssh`` for a URL the mirror accepts; ``ValueError`` naming
    what is wrong otherwise (rejected, never repaired)."""
    if not url or url != url.strip() or any(ord(c) < 32 for c in url):
        raise ValueError("the remote URL is empty or has spaces or control characters")
    if url.startswith("-"):
        raise ValueError("the remote URL may not start with '-'")
    if SCP_LIKE.fullmatch(url):
        return "ssh"
    parts = urlsplit(url)
    if parts.scheme not in {"file", "http", "https", "ssh"}:
        raise ValueError("the remote URL must be https://, ssh://, user@host:path or file:///path")
    # A login name is not a credential on ssh (ssh://git@host/x, as user@host:path); a token
    # or password is, anywhere.
    if parts.password or (parts.username and parts.scheme != "ssh"):
        raise ValueError("put the token or key in the credential field, not in the URL")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        # ?access_token=… was stored in clear and shown on the admin's list; git needs neither.
        raise ValueError("the remote URL may not have a query or fragment (a token goes in the credential field)")
    if parts.scheme == "file":
        if not parts.path.startswith("/") or parts.netloc:
            raise ValueError("a file:// remote is an absolute path: file:///srv/mirror.git")
        return "file"
    if not parts.hostname:
        raise ValueError("the remote URL names no host")
    try:
        port = parts.port  # urllib checks the range only when asked
    except ValueError:
        port = 0
    if port == 0 and parts.netloc.rpartition("]")[2].count(":"):
        raise ValueError("the remote URL's port must be a number from 1 to 65535")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK:
        raise ValueError("plain http is accepted only on this machine (loopback); use https")
    return parts.scheme


def check_branch(branch: str) -> str:
    if not BRANCH.fullmatch(branch) or branch.endswith(".lock"):
        raise ValueError("the branch is letters, digits, '.', '_', '-' and '/' (like main or brain/mirror)")
    return branch


def blob_sha(data: bytes) -> str:
    """The git object id ``data`` gets as a blob (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class Write:
    path: str
    data: bytes


def _quote(path: str) -> str:
    """A path as fast-import reads it: C-style quoted, so no name can end the command early."""
    escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _person(name: str) -> str:
    return re.sub(r"[<>\n\r]", "", name).strip() or "Brain"


class Repository:
    """The mirror's local bare repository (a cache of what was pushed)."""

    def __init__(self, path: Path, *, deadline: float | None = None) -> None:
        """``deadline`` (``time.monotonic()``): no command runs past it, so a run ends, recorded,
        before its task's time limit cuts it off with nothing recorded."""
        self.path = path
        self.deadline = deadline

    def ensure(self) -> None:
        if not (self.path / "HEAD").exists():
            self.path.mkdir(parents=True, exist_ok=True)
            self._git("init", "--bare", "--quiet", str(self.path), cwd=self.path.parent)

    # -- reading the cache

    def has_commit(self, sha: str) -> bool:
        if not SHA.fullmatch(sha):
            return False
        done = self._run(["cat-file", "-e", f"{sha}^{{commit}}"], check=False)
        return done.returncode == 0

    def tree(self, sha: str) -> str:
        return self._git("rev-parse", f"{sha}^{{tree}}").strip()

    def first_parent(self, sha: str) -> str | None:
        parents = self._git("rev-list", "--parents", "-n", "1", sha).split()
        return parents[1] if len(parents) > 1 else None

    # -- talking to the remote

    def remote_head(self, remote: Remote) -> str | None:
        """The commit the remote branch points at now, or None when the branch does not exist."""
        out = self._git("ls-remote", remote.url, f"refs/heads/{remote.branch}", remote=remote)
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            if ref == f"refs/heads/{remote.branch}":
                return sha
        return None

    def fetch(self, remote: Remote) -> None:
        """Bring the remote branch's history into the cache (a fresh machine, a lost cache)."""
        self._git(
            "fetch", "--no-tags", "--quiet", remote.url, f"+refs/heads/{remote.branch}:refs/brain/remote", remote=remote
        )

    def push(self, remote: Remote, sha: str) -> None:
        """Fast-forward the remote branch to ``sha``. Never forced: ``PushRejected`` if it moved."""
        done = self._run(
            ["push", "--porcelain", "--quiet", remote.url, f"{sha}:refs/heads/{remote.branch}"],
            remote=remote,
            check=False,
        )
        if done.returncode == 0:
            return
        said = done.stdout + done.stderr
        if "[rejected]" in said or "non-fast-forward" in said or "fetch first" in said:
            raise PushRejected(self._scrub("the remote branch has commits the mirror did not write", remote))
        raise GitError(self._scrub(_last_words(done.stderr or done.stdout), remote))

    # -- writing

    def commit(
        self, *, parent: str | None, writes: list[Write], removes: list[str], replace_all: bool, message: str,
        author: str, when: int,
    ) -> str:  # fmt: skip
        """One commit on ``parent`` (None: a first commit) that writes and removes those files —
        or, with ``replace_all``, whose tree is exactly ``writes``. Returns its id."""
        text = message.encode("utf-8")
        stream: list[bytes] = [
            b"reset refs/brain/pending\n",  # a fresh branch: the commit's only parent is ``parent``
            b"commit refs/brain/pending\n",
            f"author {_person(author)} <> {when} +0000\n".encode(),
            f"committer Brain mirror <> {when} +0000\n".encode(),
            b"data %d\n" % len(text), text, b"\n",
        ]  # fmt: skip
        if parent is not None:
            stream.append(f"from {parent}\n".encode())
        if replace_all:
            stream.append(b"deleteall\n")
        for path in removes:
            stream.append(f"D {_quote(path)}\n".encode())
        for write in writes:
            stream += [f"M 100644 inline {_quote(write.path)}\n".encode(), b"data %d\n" % len(write.data), write.data]
            stream.append(b"\n")
        stream.append(b"done\n")
        # --force: the scratch ref may hold an earlier, unrelated attempt.
        self._run(["fast-import", "--quiet", "--done", "--force"], input=b"".join(stream))
        return self._git("rev-parse", "refs/brain/pending").strip()

    # -- running git

    def _git(self, *args: str, remote: Remote | None = None, cwd: Path | None = None) -> str:
        return self._run(list(args), remote=remote, cwd=cwd).stdout

    def _run(
        self, args: list[str], *, input: bytes | None = None, remote: Remote | None = None, check: bool = True,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:  # fmt: skip
        timeout = float(TIMEOUT_SECONDS)
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
            if timeout <= 0:
                raise GitError(f"git {args[0]}: the run used up its time ({RUN_SECONDS_SETTING}) before it")
        with _environment(remote) as env:
            done = _run_in_own_group(["git", *args], cwd=cwd or self.path, env=env, stdin=input or b"",
                                     timeout=timeout)  # fmt: skip
            if done is None:
                raise GitError(f"git {args[0]} did not finish within {timeout:.0f} s (is the remote answering?)")
        result = subprocess.CompletedProcess(
            done.args, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
        )
        if check and result.returncode != 0:
            raise GitError(self._scrub(f"git {args[0]}: {_last_words(result.stderr or result.stdout)}", remote))
        return result

    @staticmethod
    def _scrub(text: str, remote: Remote | None) -> str:
        if remote is not None and remote.credential:
            for secret in (remote.credential, *remote.credential.split()):
                if len(secret) >= 8:
                    text = text.replace(secret, "[credential]")
        return text[:480]


def _run_in_own_group(
    command: list[str], *, cwd: Path, env: dict[str, str], stdin: bytes, timeout: float
) -> subprocess.CompletedProcess[bytes] | None:
    """Run ``command`` in a process group of its own; None when it outlived ``timeout``.

    git hands the network to children (``git-remote-https``, ``ssh``): killing git alone left
    them holding the connection, and a worker's children piled up behind a hung remote. On
    timeout the whole group is killed and reaped.
    """
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None
    except BaseException:  # a task's time limit, an interrupt: leave no git behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _last_words(said: str) -> str:
    lines = [line.strip() for line in said.strip().splitlines() if line.strip()]
    return " / ".join(lines[-3:]) or "no message"


@contextmanager
def _environment(remote: Remote | None) -> Iterator[dict[str, str]]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": tempfile.gettempdir(),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": "file:http:https:ssh",
        "GIT_SSH_VARIANT": "ssh",
    }
    config = [("core.hooksPath", os.devnull), ("init.defaultBranch", "main"), ("gc.auto", "0")]
    with tempfile.TemporaryDirectory(prefix="brain-mirror-") as scratch:
        if remote is not None and remote.credential and remote.transport in {"http", "https"}:
            basic = base64.b64encode(f"x-access-token:{remote.credential}".encode()).decode()
            config.append(("http.extraHeader", f"Authorization: Basic {basic}"))
        if remote is not None and remote.transport == "ssh":
            env["GIT_SSH_COMMAND"] = _ssh_command(remote, Path(scratch))
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for index, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
        yield env


def _ssh_command(remote: Remote, scratch: Path) -> str:
    """``ssh`` with only the configured key and host keys: strict checking, no agent, no prompts."""
    known = scratch / "known_hosts"
    known.write_text(remote.known_hosts.strip() + "\n")
    options = f"-o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile={known} -o IdentityAgent=none"
    if remote.credential:
        key = scratch / "key"
        key.touch(mode=0o600)
        key.write_text(remote.credential.strip() + "\n")
        options += f" -o IdentitiesOnly=yes -i {key}"
    return f"ssh -F /dev/null {options}"
