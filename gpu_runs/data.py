"""Token data for the trainer: a built-in byte corpus (no network), text directories, token shards.

``get_corpus(name_or_path) -> Corpus(train, val, vocab_size, ...)``:

- ``"stdlib"`` (default): Python standard-library text, byte-level (vocab 256), frozen in
  the repository (:mod:`gpu_runs.builtin_corpus`: CPython 3.11.7's pydoc topic pages and
  ``.py`` sources, sha256-checked at load), so it is the same bytes on every Python.
- a directory of text files (``*.txt``, ``*.md``, ``*.py``, ``*.rst``): byte-level, one
  document per file.
- a token shard ``*.bin`` / ``*.npy`` / ``*.u16`` or a directory of shards: flat integer
  arrays, memory-mapped. ``.bin`` is the modded-nanogpt / llm.c format (a header of 256
  int32: magic 20240520, version 1 (uint16 tokens) or 2 (uint32), token count; then the
  tokens); a ``.bin`` without that header is refused. Headerless raw ``uint16`` tokens are
  read only from files named ``*.u16`` (the extension is the user saying "raw uint16").
  ``.npy`` files carry their dtype.

Identity: ``Corpus.sha256`` = :func:`tokens_sha256` of the train and validation arrays, the
exact tokens a run consumes; it is ``TrainConfig.data_sha256``, part of every run's key.

Token ids are checked over the whole of every file once (memory-mapped, in chunks of
``CHECK_CHUNK`` tokens): a negative id or one >= ``MAX_VOCAB`` is refused with the file name
and the offset, and the vocabulary is 1 + the largest id of all files (not of a prefix).

Train/val split. Text corpora split *by document*: document ``name`` goes to validation
iff ``crc32(name) % val_every == 0`` (deterministic, never a document on both sides).
Shard directories split by file name: files with ``val`` in the name are validation, the
rest training (FineWeb convention ``fineweb_train_000001.bin`` / ``fineweb_val_000000.bin``);
a single shard (or a directory without ``val`` files) holds out its last ``val_frac``
tokens as one contiguous block.

Pointing a run at FineWeb-Edu: produce GPT-2-tokenized shards with the usual
``fineweb.py`` script of nanoGPT / modded-nanogpt (offline, on a machine with the data),
copy the directory, and run ``python -m gpu_runs.train --data /path/to/fineweb10B --config 135m``;
the model's vocabulary is set from the data (50257 rounded up to a multiple of 64).

``Batcher(tokens, batch_size, seq_len, seed).batch(step) -> (x, y)``: windows at offsets drawn
by ``numpy.random.default_rng([seed, step])``, so the batch depends only on (seed, step),
not on the mode, the optimizer or how many batches were drawn before (resume-safe).
"""
from __future__ import annotations

import functools
import hashlib
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch


SHARD_MAGIC = 20240520
SHARD_HEADER_INTS = 256
TEXT_SUFFIXES = (".txt", ".md", ".py", ".rst")
SHARD_SUFFIXES = (".bin", ".npy", ".u16")
RAW_SUFFIX = ".u16"
#: largest accepted vocabulary (ids must be < MAX_VOCAB); larger ids are a corrupt file
MAX_VOCAB = 1 << 22
CHECK_CHUNK = 1 << 22


@dataclass
class Corpus:
    """Token arrays (numpy, possibly memory-mapped) for training and validation."""

    name: str
    train: np.ndarray
    val: np.ndarray
    vocab_size: int
    train_docs: list = field(default_factory=list)
    val_docs: list = field(default_factory=list)

    @functools.cached_property
    def sha256(self) -> str:
        """:func:`tokens_sha256` of (train, val): the corpus's identity in a run's config."""
        return tokens_sha256(self.train, self.val)

    def __repr__(self) -> str:
        return (f"Corpus({self.name!r}, train={len(self.train):,} tokens, val={len(self.val):,} tokens, "
                f"vocab={self.vocab_size}, docs={len(self.train_docs)}/{len(self.val_docs)})")


def tokens_sha256(train: np.ndarray, val: np.ndarray, chunk: int = CHECK_CHUNK) -> str:
    """sha256 over ``"train" dtype len bytes(train) "val" dtype len bytes(val)`` (little-endian
    token values), read in chunks so memory-mapped shards stay on disk."""
    h = hashlib.sha256()
    for tag, arr in (("train", train), ("val", val)):
        dt = np.dtype(arr.dtype).newbyteorder("<")
        h.update(f"{tag}:{dt.str}:{len(arr)}:".encode())
        for lo in range(0, len(arr), chunk):
            h.update(np.ascontiguousarray(arr[lo:lo + chunk], dtype=dt).tobytes())
    return h.hexdigest()


# ----------------------------------------------------------------------------- text corpora
def directory_documents(path: Path) -> list[tuple[str, bytes]]:
    """Every text file under ``path`` (sorted), one document each."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
    if not files:
        raise FileNotFoundError(f"data: no text files ({', '.join(TEXT_SUFFIXES)}) under {path}")
    return [(p.relative_to(path).as_posix(), p.read_bytes()) for p in files]


def is_val_document(name: str, val_every: int = 20) -> bool:
    """Document goes to validation iff crc32(name) % val_every == 0 (name as UTF-8 bytes; a file
    name that is not valid UTF-8 keeps its raw bytes, os.fsencode's surrogateescape)."""
    return zlib.crc32(name.encode("utf-8", "surrogateescape")) % val_every == 0


def split_documents(docs: list[tuple[str, bytes]], val_every: int = 20):
    """(train_bytes, val_bytes, train_names, val_names): whole documents on one side each.

    If no document hashes to validation, the last document is held out (a corpus needs both)."""
    if len(docs) < 2:
        raise ValueError(f"data: need at least 2 documents to split train/val, got {len(docs)}")
    val_names = {n for n, _ in docs if is_val_document(n, val_every)}
    if not val_names or len(val_names) == len(docs):
        val_names = {docs[-1][0]}
    tr = [(n, b) for n, b in docs if n not in val_names]
    va = [(n, b) for n, b in docs if n in val_names]
    join = lambda part: np.frombuffer(b"\n\n".join(b for _, b in part), dtype=np.uint8).copy()
    return join(tr), join(va), [n for n, _ in tr], [n for n, _ in va]


def byte_corpus(name: str, docs: list[tuple[str, bytes]], val_every: int = 20) -> Corpus:
    tr, va, trn, van = split_documents(docs, val_every)
    return Corpus(name, tr, va, 256, trn, van)


# ----------------------------------------------------------------------------- token shards
def load_shard(path: str | os.PathLike) -> np.ndarray:
    """Memory-map one token shard (header ``.bin``, raw uint16 ``.u16``, or ``.npy``).

    Raises FileNotFoundError for a missing file and ValueError naming the file when the
    header's token count or the file size does not fit, or a ``.bin`` has no header."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data: shard {path} does not exist")
    if path.suffix == ".npy":
        try:   # allow_pickle stays False: a pickled array is refused, never unpickled
            arr = np.load(path, mmap_mode="r")
        except EOFError:    # an empty or truncated file: numpy reads no header at all
            raise ValueError(f"data: shard {path} is empty or truncated (no .npy header); "
                             f"rewrite it or remove it from the data directory") from None
        except ValueError as e:
            raise ValueError(f"data: shard {path} is not a plain .npy array of token ids ({e})") from None
        if arr.ndim != 1 or arr.dtype not in (np.uint16, np.uint32, np.int32, np.int64):
            raise ValueError(f"data: shard {path} must be a 1-D integer array, got {arr.dtype} {arr.shape}")
        return arr
    size = path.stat().st_size
    if path.suffix == RAW_SUFFIX:
        if size == 0 or size % 2:
            raise ValueError(f"data: raw shard {path} is malformed: size {size} is not a positive "
                             f"multiple of 2 (uint16 tokens)")
        return np.memmap(path, dtype=np.uint16, mode="r")
    header = np.fromfile(path, dtype=np.int32, count=SHARD_HEADER_INTS) if size >= 4 * SHARD_HEADER_INTS else None
    if header is not None and header[0] == SHARD_MAGIC:
        version, ntok = int(header[1]), int(header[2])
        if version not in (1, 2):
            raise ValueError(f"data: shard {path} has magic {SHARD_MAGIC} but unknown version {version} (1 or 2)")
        dtype = np.uint16 if version == 1 else np.uint32
        expected = 4 * SHARD_HEADER_INTS + ntok * np.dtype(dtype).itemsize
        if ntok <= 0 or size != expected:
            raise ValueError(f"data: shard {path} is malformed: header says {ntok} tokens "
                             f"({expected} bytes) but the file has {size} bytes")
        return np.memmap(path, dtype=dtype, mode="r", offset=4 * SHARD_HEADER_INTS, shape=(ntok,))
    raise ValueError(f"data: shard {path} is malformed: a .bin shard must start with the "
                     f"modded-nanogpt header (256 int32, magic {SHARD_MAGIC}, version, token count) "
                     f"and this one does not ({size} bytes). If it holds headerless uint16 tokens, "
                     f"name it *{RAW_SUFFIX}; or save the tokens with numpy as *.npy")


def check_token_ids(arr: np.ndarray, source, max_vocab: int = MAX_VOCAB) -> int:
    """The largest id of ``arr`` after checking every id lies in [0, max_vocab).

    Reads the whole array once in chunks of CHECK_CHUNK (memory-mapped files stay on disk);
    ValueError names ``source`` and the offset of the first bad id."""
    if len(arr) == 0:
        raise ValueError(f"data: {source} holds no tokens")
    top = 0
    for lo in range(0, len(arr), CHECK_CHUNK):
        chunk = np.asarray(arr[lo:lo + CHECK_CHUNK])
        cmin, cmax = int(chunk.min()), int(chunk.max())
        if cmin < 0 or cmax >= max_vocab:
            bad = int(np.flatnonzero((chunk < 0) | (chunk >= max_vocab))[0])
            raise ValueError(f"data: {source} has token id {int(chunk[bad])} at offset {lo + bad} "
                             f"(token index); ids must lie in [0, {max_vocab})")
        top = max(top, cmax)
    return top


def _concat(arrs: list[np.ndarray]) -> np.ndarray:
    return arrs[0] if len(arrs) == 1 else np.concatenate([np.asarray(a) for a in arrs])


def shard_corpus(name: str, files: list[Path], val_frac: float = 0.05) -> Corpus:
    """Train / validation token arrays of ``files`` (module docstring), every id checked."""
    shards = {f: load_shard(f) for f in files}
    top = max(check_token_ids(a, f) for f, a in shards.items())
    val_files = [f for f in files if "val" in f.name]
    train_files = [f for f in files if f not in val_files]
    if train_files and val_files:
        tr, va = _concat([shards[f] for f in train_files]), _concat([shards[f] for f in val_files])
    else:
        allt = _concat([shards[f] for f in files])
        cut = int(len(allt) * (1 - val_frac))
        tr, va = allt[:cut], allt[cut:]
    vocab = top + 1
    if shards[files[0]].dtype == np.uint16 and vocab > 256:
        vocab = max(vocab, 50257)  # GPT-2 tokens: the full vocabulary, not only those seen
    return Corpus(name, tr, va, vocab, [f.name for f in train_files or files], [f.name for f in val_files])


# ----------------------------------------------------------------------------- entry point
@functools.lru_cache(maxsize=2)
def _stdlib_corpus(val_every: int) -> Corpus:
    """The frozen built-in corpus (:mod:`gpu_runs.builtin_corpus`), built once per process;
    arrays are read-only."""
    # imported here: ``import gpu_runs`` must not import the command
    # ``python -m gpu_runs.builtin_corpus`` (runpy would run a second copy of it)
    from gpu_runs.builtin_corpus import load_documents
    c = byte_corpus("stdlib", load_documents(), val_every)
    c.train.setflags(write=False)
    c.val.setflags(write=False)
    return c


def get_corpus(name_or_path: str | os.PathLike | None = "stdlib", *, val_every: int = 20) -> Corpus:
    """``"stdlib"`` / None, a text directory, a shard file or a directory of shards (module docstring)."""
    if name_or_path is None or name_or_path == "stdlib":
        return _stdlib_corpus(val_every)
    path = Path(name_or_path)
    if not path.exists():
        raise FileNotFoundError(f"data: {name_or_path!r} is neither 'stdlib' nor an existing file/directory")
    if path.is_file():
        if path.suffix in TEXT_SUFFIXES:
            raise ValueError(f"data: {path} is a single text file; pass its directory (documents are files)")
        return shard_corpus(path.name, [path])
    shards = sorted(p for p in path.iterdir() if p.suffix in SHARD_SUFFIXES)
    if shards:
        return shard_corpus(path.name, shards)
    return byte_corpus(path.name, directory_documents(path), val_every)


# ----------------------------------------------------------------------------- batches
class Batcher:
    """Random windows: ``batch(step)`` draws offsets o_b ~ U{0..n-T-1} from rng([seed, step]);
    x_b = tokens[o_b : o_b+T], y_b = tokens[o_b+1 : o_b+T+1] (int64)."""

    def __init__(self, tokens, batch_size: int, seq_len: int, seed: int = 0, device=None):
        for k, v in (("batch_size", batch_size), ("seq_len", seq_len)):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"Batcher: {k} must be a positive int, got {v!r}")
        if len(tokens) < seq_len + 2:
            raise ValueError(f"Batcher: tokens ({len(tokens)}) shorter than seq_len+2 ({seq_len + 2})")
        self.tokens = tokens if isinstance(tokens, np.ndarray) else np.asarray(tokens)
        self.batch_size, self.seq_len, self.seed, self.device = batch_size, seq_len, int(seed), device

    def offsets(self, step: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, int(step)])
        return rng.integers(0, len(self.tokens) - self.seq_len - 1, size=self.batch_size)

    def batch(self, step: int, micro: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, y) of shape (batch_size, seq_len); ``micro`` selects an independent extra draw (diagnostics)."""
        if micro is not None:
            rng = np.random.default_rng([self.seed, int(step), 1 + int(micro)])
            offs = rng.integers(0, len(self.tokens) - self.seq_len - 1, size=self.batch_size)
        else:
            offs = self.offsets(step)
        idx = offs[:, None] + np.arange(self.seq_len + 1)[None, :]
        w = torch.from_numpy(np.asarray(self.tokens[idx]).astype(np.int64))
        if self.device is not None:
            w = w.to(self.device, non_blocking=True)
        return w[:, :-1], w[:, 1:]


def val_batches(tokens, n_batches: int, batch_size: int, seq_len: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A fixed validation set: n_batches * batch_size windows at evenly spaced offsets (no randomness)."""
    n = len(tokens) - seq_len - 1
    if n <= 0:
        raise ValueError(f"val_batches: validation split ({len(tokens)} tokens) shorter than seq_len+1")
    k = n_batches * batch_size
    offs = (np.arange(k, dtype=np.int64) * n) // k
    idx = offs[:, None] + np.arange(seq_len + 1)[None, :]
    w = torch.from_numpy(np.asarray(tokens[idx]).astype(np.int64)).view(n_batches, batch_size, seq_len + 1)
    return [(b[:, :-1], b[:, 1:]) for b in w]
