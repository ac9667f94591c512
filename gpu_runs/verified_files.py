"""Files that say whether they are whole: atomic writes with a sha256 sidecar, verified reads.

Every file the package writes goes through this module, atomically. Every checkpoint (the
trainer's ``ckpt_step{k}.pt`` / ``ckpt.pt``, a pipeline stage's ``ckpt_stage{s}.pt`` /
``ckpt_step{k}_stage{s}.pt``) is written by :func:`write_verified`:

1. the content goes into a uniquely named temporary file next to ``path``, hashed (sha256)
   as it is written, and fsync-ed;
2. its digest goes into a temporary ``<name>.sha256`` the same way (``sha256sum`` format,
   ``<hex>  <name>``, so ``sha256sum -c`` checks a file by hand);
3. only when both are complete are they moved in place with ``os.replace``, the sidecar
   first, and the directory is fsync-ed.

So a failed write (a full disk, a read-only file system) never touches the file it was to
replace: its temporary files are removed and :class:`NotWritten` (an OSError naming the path
and the cause, never torch's ``inline_container.cc`` message) is raised. A kill between the
two renames leaves a sidecar that does not match its file, which :func:`check` refuses like
any other damage (4 KiB of garbage, a flipped bit that keeps every tensor finite), so a
reader falls back to an older checkpoint. A file without a sidecar was written before
checksums existed (the writer renames the sidecar first): :func:`check` calls it unverified
and the readers load it, saying so, so that a run started before checksums still resumes.

:func:`load`: the checked ``torch.load(weights_only=True)``; :class:`Damaged` (a ValueError)
says why a file cannot be used in one line, and never passes on torch's advice to load with
``weights_only=False`` (unsafe for a file that failed its check).

Every other file (config.json, log.jsonl, result.json, records, reports, figures) is written
by :func:`atomic_write` (:func:`write_text`, :func:`write_bytes`): steps 1 and 3 without the
sidecar. A reader never sees half a file, and a failed write leaves the old one whole.

Files are created with the permissions of any other file the process creates (0666 minus
the umask: 0644 by default), not ``mkstemp``'s 0600.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import torch

SUFFIX = ".sha256"
CHUNK = 1 << 20


class NotWritten(OSError):
    """A file could not be written; ``filename`` is the path, ``strerror`` the cause. The
    file it was to replace, if any, is untouched and no temporary file is left."""

    def __str__(self) -> str:
        return f"could not write {self.filename}: {self.strerror}; nothing was replaced"


class Damaged(ValueError):
    """A file that failed its check or could not be loaded (the message says which and why)."""


def sidecar(path) -> Path:
    """``<path>.sha256``: the digest of ``path``."""
    path = Path(path)
    return path.with_name(path.name + SUFFIX)


def _mode() -> int:
    """0666 minus the process's umask: what ``open(path, "w")`` would create."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def fsync_dir(d: Path) -> None:
    """fsync a directory (its entries: a rename is durable after this); best effort."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _HashingWriter:
    """A binary file object that hashes what goes through it and keeps the OS error a write
    raised (torch.save wraps it in a RuntimeError that says nothing about the cause)."""

    def __init__(self, f):
        self.f, self.h, self.error = f, hashlib.sha256(), None

    def write(self, b) -> int:
        try:
            n = self.f.write(b)
        except OSError as e:
            self.error = e
            raise
        self.h.update(b)
        return n

    def flush(self) -> None:
        self.f.flush()


def _temp(path: Path) -> tuple[int, str]:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, _mode())
    return fd, tmp


def _write_temp(path: Path, write) -> tuple[str, str]:
    """(temporary file next to ``path`` holding what ``write(f)`` wrote, fsync-ed; its sha256
    hex digest). On failure the temporary file is removed and the OS error re-raised (as
    :class:`NotWritten` when the cause is an OS error)."""
    try:
        fd, tmp = _temp(path)
    except OSError as e:
        raise _not_written(path, e) from None
    w = None
    try:
        with os.fdopen(fd, "wb") as f:
            w = _HashingWriter(f)
            write(w)
            f.flush()
            os.fsync(f.fileno())
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        cause = w.error if w is not None and w.error is not None else e
        if isinstance(cause, OSError):
            raise _not_written(path, cause) from None
        raise
    return tmp, w.h.hexdigest()


def _not_written(path: Path, e: OSError) -> NotWritten:
    code = e.errno if e.errno is not None else errno.EIO
    why = e.strerror or str(e) or type(e).__name__
    return NotWritten(code, why, str(path))


def atomic_write(path, write) -> str:
    """``write(f)`` into a uniquely named temporary file next to ``path``, fsync it,
    ``os.replace`` it onto ``path`` and fsync the directory (no sidecar): a kill or a second
    writer never leaves half a file or collides on the temporary name. Returns the sha256."""
    path = Path(path)
    tmp, digest = _write_temp(path, write)
    _replace([(tmp, path)])
    return digest


def atomic_save(path, save) -> None:
    """``save(temporary path)`` (a writer that wants a path, e.g. ``fig.savefig``), then fsync
    and ``os.replace`` onto ``path`` as :func:`atomic_write`; a failure removes the temporary file."""
    path = Path(path)
    try:
        fd, tmp = _temp(path)
        os.close(fd)
    except OSError as e:
        raise _not_written(path, e) from None
    try:
        save(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise _not_written(path, e) from None
        raise
    _replace([(tmp, path)])


def write_bytes(path, data: bytes) -> str:
    """``data`` into ``path`` atomically (:func:`atomic_write`): the one way the package writes a
    file that is not a checkpoint (config, log, result, record, report, figure)."""
    return atomic_write(path, lambda f: f.write(bytes(data)))


def write_text(path, text: str) -> str:
    """``text`` (UTF-8) into ``path`` atomically (:func:`write_bytes`)."""
    return write_bytes(path, text.encode())


def _replace(moves: list[tuple[str, Path]]) -> None:
    """``os.replace`` each (temporary, final) in order, then fsync the directory; on failure
    the temporary files not yet moved are removed."""
    try:
        for i, (tmp, final) in enumerate(moves):
            try:
                os.replace(tmp, final)
            except OSError as e:
                for t, _ in moves[i:]:
                    with contextlib.suppress(OSError):
                        os.unlink(t)
                err = _not_written(final, e)
                err.moved = i          # how many of the moves were done
                raise err from None
    finally:
        fsync_dir(moves[0][1].parent)


def _sidecar_text(path: Path, digest: str) -> bytes:
    return f"{digest}  {path.name}\n".encode()


def write_verified(path, write) -> str:
    """``write(f)`` into ``path`` with its sidecar ``<path>.sha256`` (module docstring: both
    written in full, then moved in place, the sidecar first). Returns the sha256."""
    path = Path(path)
    tmp, digest = _write_temp(path, write)
    _move_in_with_sidecar(tmp, path, digest)
    return digest


def _move_in_with_sidecar(tmp: str, path: Path, digest: str) -> None:
    """Write ``path``'s sidecar (``digest``) to a temporary file, then move it and ``tmp`` in
    place, the sidecar first; if the sidecar cannot be written, ``tmp`` is removed."""
    try:
        side, _ = _write_temp(sidecar(path), lambda f: f.write(_sidecar_text(path, digest)))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    try:
        old = sidecar(path).read_bytes()
    except OSError:
        old = None
    try:
        _replace([(side, sidecar(path)), (tmp, path)])
    except NotWritten as e:   # the sidecar moved in, the file did not: the old pair is put back
        if getattr(e, "moved", 0) >= 1:
            _restore_sidecar(path, old)
        raise


def _restore_sidecar(path: Path, old: bytes | None) -> None:
    """Put back ``path``'s previous sidecar (``old``; None: it had none), best effort: a
    failed write must leave the file it was to replace as checkable as it was."""
    with contextlib.suppress(OSError):
        if old is None:
            sidecar(path).unlink(missing_ok=True)
        else:
            back, _ = _write_temp(sidecar(path), lambda f: f.write(old))
            os.replace(back, sidecar(path))


def save(path, obj) -> str:
    """``torch.save(obj)`` into ``path`` through :func:`write_verified`; returns the sha256."""
    return write_verified(path, lambda f: torch.save(obj, f))


def link_verified(src, dst, digest: str) -> None:
    """``dst`` becomes the same content as ``src`` (whose sha256 is ``digest``): a hard link,
    or a copy where the file system has none, with its own sidecar; atomically as
    :func:`write_verified`."""
    src, dst = Path(src), Path(dst)
    try:
        fd, tmp = _temp(dst)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        raise _not_written(dst, e) from None
    try:
        try:
            os.link(src, tmp)
        except OSError:   # no hard links here: a copy, fsync-ed
            shutil.copyfile(src, tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _not_written(dst, e) from None
    _move_in_with_sidecar(tmp, dst, digest)


def is_temp_name(name: str) -> bool:
    """Is ``name`` one of this module's temporary files (``.<final name>.<8 chars>.tmp``)?"""
    return name.startswith(".") and name.endswith(".tmp") and len(name) > 14 and name[-13] == "."


def remove_stale_temps(d, owns=lambda final: True) -> list[str]:
    """Remove the temporary files a killed writer left in ``d`` (only for a caller that holds
    ``d``'s lock, so no writer is alive); ``owns(final name)`` picks the files of this writer
    (a pipeline rank: its own stage's). Returns the names removed."""
    gone = []
    for f in Path(d).glob(".*.tmp"):
        if is_temp_name(f.name) and owns(f.name[1:-13]):
            with contextlib.suppress(OSError):
                f.unlink()
                gone.append(f.name)
    return gone


def remove(path) -> None:
    """Remove ``path`` and its sidecar (either may be missing)."""
    Path(path).unlink(missing_ok=True)
    sidecar(path).unlink(missing_ok=True)


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


#: what :func:`check` says of a file without a sidecar (it loads, unverified)
UNVERIFIED = "unverified"


def check(path) -> str | None:
    """None when ``path`` matches its sidecar; :data:`UNVERIFIED` when it has none (written
    before checksums); else why it cannot be trusted (one line, naming the file). OSError
    (the file itself missing or unreadable) as is."""
    path = Path(path)
    try:
        recorded = sidecar(path).read_text().split()
    except FileNotFoundError:
        path.stat()          # the file itself missing: FileNotFoundError for it, not its sidecar
        return UNVERIFIED
    except (OSError, UnicodeDecodeError) as e:
        return f"{path.name}: its checksum file {sidecar(path).name} is unreadable ({type(e).__name__})"
    if not recorded or len(recorded[0]) != 64:
        return f"{path.name}: its checksum file {sidecar(path).name} is malformed"
    if file_sha256(path) != recorded[0]:
        return f"{path.name}: content does not match its sha256 (damaged after it was written)"
    return None


def load_error(e: BaseException) -> str:
    """One line for a failed ``torch.load``: its kind and first line, without torch's advice
    to retry with ``weights_only=False``."""
    first = (str(e).splitlines() or [""])[0]
    if "weights_only" in str(e) or "Weights only" in first:
        first = "holds objects that a tensors-only load refuses"
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


def load(path, map_location=None, *, unverified=None):
    """The object in ``path`` after :func:`check`; :class:`Damaged` (one line naming the
    file) when it fails its check or cannot be loaded; OSError when it cannot be read.
    ``unverified(path)`` is called for a file without a sidecar (default: loaded silently)."""
    path = Path(path)
    why = check(path)
    if why == UNVERIFIED:
        if unverified is not None:
            unverified(path)
    elif why is not None:
        raise Damaged(why)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except OSError:
        raise
    except Exception as e:  # noqa: BLE001 - truncated / garbage files raise many kinds
        raise Damaged(f"{path.name}: {load_error(e)}") from None
