"""Writing result files: atomically, with ordinary permissions, and checked before any work.

Every file ddlsim writes (result rows, sweep markers, profiles) goes through `atomic_write`: the
content lands in a temporary file beside the target, which then replaces it in one step, so a
crash never leaves half a file. The temporary file is created with mode 0666 less the umask
(0644 under the usual umask), the same as any other file the user creates; `tempfile.mkstemp`
would give 0600.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path

from ddlsim.core.errors import ConfigError

FILE_MODE = 0o666  # less the umask, as open() gives


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], object]) -> Path:
    """Call `write(temporary_path)`, then move the temporary file onto `path`; return `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
    try:
        write(str(temporary))
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write(path, lambda target: Path(target).write_text(text, encoding="utf-8"))


def sha256_of(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_writable_dir(directory: str | os.PathLike[str], key: str) -> None:
    """Raise `ConfigError` naming `key` unless `directory` exists (or can be made) and is writable."""
    directory = Path(directory)
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise ConfigError(key, str(directory), f"cannot be an output directory: {existing} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(key, str(directory), f"cannot be written: no write permission on {existing}")


def check_writable_files(directory: str | os.PathLike[str], names: Iterable[str], key: str) -> None:
    """Raise `ConfigError` unless every file `names` in `directory` could be (re)placed there."""
    check_writable_dir(directory, key)
    for name in names:
        target = Path(directory) / name
        if target.is_dir():
            raise ConfigError(key, str(directory), f"cannot hold the result file {name}: {target} is a directory")
