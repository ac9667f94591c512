"""The built-in corpus ``"stdlib"``: Python standard-library text, frozen in the repository.

Why frozen. Reading the running interpreter's standard library gives different bytes on
different Pythons (7,465,363 training bytes on CPython 3.11.7, 7,516,823 on 3.11.2), so the
same command trained on different data on different machines and nothing noticed. The
corpus is therefore the exact bytes the kept records were trained on, stored once:

- ``gpu_runs/corpora/stdlib-cpython-3.11.7.tar.xz``: 516 documents (the ``pydoc_data`` topic
  pages, then the ``Lib/**/*.py`` sources sorted by path, without tests, ``idlelib`` and
  ``lib2to3``, capped at 8,000,000 bytes), one tar member per document, in order.
- ``FILE_SHA256``: sha256 of that file, checked at every load (:func:`load_documents`).
- ``STDLIB_SHA256``: sha256 of the train / validation tokens it yields
  (:func:`gpu_runs.data.tokens_sha256`), the corpus's identity in every run's config
  (``TrainConfig.data_sha256``).

The sources are CPython 3.11.7's, under the PSF License Version 2
(``gpu_runs/corpora/LICENSE-PSF.txt``, copied from that Python's ``LICENSE.txt``).

To rebuild the archive from the running interpreter (only to change the corpus, which
changes every run's identity): ``python -m gpu_runs.builtin_corpus --freeze PATH``.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import lzma
import sys
import sysconfig
import tarfile
from pathlib import Path

from gpu_runs import verified_files

CORPORA_DIR = Path(__file__).resolve().parent / "corpora"
ARCHIVE = CORPORA_DIR / "stdlib-cpython-3.11.7.tar.xz"
FILE_SHA256 = "d5908cc7bae569baf07b43205b96f9091f5068c9cc4659bd0972df4dad3f7fbb"
STDLIB_SHA256 = "8413f0dafb1517b4f5b2f15309c224309eccab8e0b0f1a461ef0591f4d4289cf"
MAX_BYTES = 8_000_000


class CorpusIntegrityError(ValueError):
    """The frozen corpus on disk is not the one this package was released with."""


def live_stdlib_documents(max_bytes: int = MAX_BYTES) -> list[tuple[str, bytes]]:
    """(name, bytes) of the *running* interpreter's pydoc topic pages, then its stdlib sources
    sorted by path, up to ``max_bytes``. Differs between Python versions: used only to freeze."""
    from pydoc_data.topics import topics

    docs = [(f"pydoc:{k}", topics[k].encode("utf-8")) for k in sorted(topics)]
    total = sum(len(b) for _, b in docs)
    root = Path(sysconfig.get_paths()["stdlib"])
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if "site-packages" in rel or "/test" in rel or rel.startswith(("test", "idlelib", "lib2to3")):
            continue
        try:
            b = p.read_bytes()
        except OSError:
            continue
        if total + len(b) > max_bytes:
            break
        docs.append((f"stdlib:{rel}", b))
        total += len(b)
    return docs


def archive_bytes(docs: list[tuple[str, bytes]]) -> bytes:
    """A deterministic xz-compressed ustar archive: one member per document, mtime 0, mode 644."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in docs:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tf.addfile(info, io.BytesIO(data))
    return lzma.compress(buf.getvalue(), preset=9 | lzma.PRESET_EXTREME)


def read_archive(blob: bytes) -> list[tuple[str, bytes]]:
    """The (name, bytes) documents of an archive made by :func:`archive_bytes`, in order."""
    docs = []
    with tarfile.open(fileobj=io.BytesIO(lzma.decompress(blob)), mode="r:") as tf:
        for member in tf:
            f = tf.extractfile(member)
            if f is None:
                raise CorpusIntegrityError(f"corpus archive: member {member.name!r} is not a file")
            docs.append((member.name, f.read()))
    return docs


def load_documents(path: Path = ARCHIVE, sha256: str = FILE_SHA256) -> list[tuple[str, bytes]]:
    """The frozen documents, after checking sha256(file) == ``sha256``.

    CorpusIntegrityError names the file and both hashes when it was changed or truncated."""
    try:
        blob = Path(path).read_bytes()
    except OSError as e:
        raise CorpusIntegrityError(f"data: the built-in corpus {path} cannot be read ({e}); "
                                   f"reinstall the package") from e
    got = hashlib.sha256(blob).hexdigest()
    if got != sha256:
        raise CorpusIntegrityError(f"data: the built-in corpus {path} has sha256 {got}, expected "
                                   f"{sha256}: the file was changed; reinstall or `git checkout` it")
    return read_archive(blob)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m gpu_runs.builtin_corpus",
        description="Check the frozen built-in corpus, or freeze the running Python's stdlib text "
                    "into a new archive (which changes every run's identity).")
    ap.add_argument("--freeze", metavar="PATH", help="write a new archive from this interpreter's stdlib")
    args = ap.parse_args(argv)
    if args.freeze:
        blob = archive_bytes(live_stdlib_documents())
        verified_files.write_bytes(args.freeze, blob)
        print(f"wrote {args.freeze}: {len(blob):,} bytes, sha256 {hashlib.sha256(blob).hexdigest()} "
              f"(Python {sys.version.split()[0]})")
        return 0
    docs = load_documents()
    print(f"{ARCHIVE.name}: file sha256 {FILE_SHA256} (checked): {len(docs)} documents, "
          f"{sum(len(b) for _, b in docs):,} bytes; its train/val tokens hash to {STDLIB_SHA256} "
          f"(gpu_runs.data.get_corpus('stdlib').sha256, checked by the test suite)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
