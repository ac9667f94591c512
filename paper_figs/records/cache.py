"""Results cache: one JSON file per experiment, named by the hash of its full configuration.

``key = sha256(canonical_json(config))[:16]`` where ``canonical_json`` sorts keys and
renders anything JSON does not know with ``str``. A changed setting changes the key, so
only the experiments it touches rerun; finished experiments survive a crash because each
is written (atomically: temp file + rename) the moment it finishes.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

from gpu_runs.verified_files import atomic_write


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text of ``obj``: sorted keys, no whitespace, ``str`` for unknown types."""
    return json.dumps(to_jsonable(obj), sort_keys=True, separators=(",", ":"), default=str)


def config_hash(config: Mapping[str, Any]) -> str:
    """First 16 hex digits of sha256(canonical_json(config))."""
    if not isinstance(config, Mapping):
        raise TypeError(f"config: expected a mapping, got {type(config).__name__}")
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]


def to_jsonable(obj: Any) -> Any:
    """Turn tensors, numpy values, tuples, dataclass-free containers and paths into JSON values.

    Non-finite floats become ``None`` (JSON has no NaN); tensors become a float (0-d) or a
    nested list.
    """
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    tolist = getattr(obj, "tolist", None)  # torch.Tensor, numpy arrays and scalars
    if callable(tolist):
        return to_jsonable(tolist())
    item = getattr(obj, "item", None)
    if callable(item):
        return to_jsonable(item())
    return str(obj)


def write_atomically(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and a rename
    (:func:`gpu_runs.verified_files.atomic_write`): a reader (or a crash) never sees half a
    file, and the file gets the usual permissions (0644 under the default umask). Creates
    the parent directory; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda f: f.write(text.encode()))
    return path


class KeyedDir:
    """A directory of ``<key>.json`` files, ``key`` in lowercase hex (a config hash)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        if not is_key(key):
            raise ValueError(f"key: expected lowercase hex digits, got {key!r}")
        return self.root / f"{key}.json"

    def keys(self) -> list[str]:
        """The keys of the records here (``<key>.json``, key in lowercase hex); other files
        are not records (:meth:`strays`)."""
        return sorted(p.stem for p in self._json() if is_key(p.stem))

    def strays(self) -> list[Path]:
        """The ``*.json`` files here that are not records (their name is not a key: a user's
        ``notes.json``): every reader ignores them."""
        return sorted(p for p in self._json() if not is_key(p.stem))

    def _json(self) -> list[Path]:
        return list(self.root.glob("*.json")) if self.root.is_dir() else []


def is_key(name: str) -> bool:
    """A record's key: lowercase hex digits (a config hash)."""
    return bool(name) and all(c in "0123456789abcdef" for c in name)


class Cache(KeyedDir):
    """A directory of ``<key>.json`` records, each ``{"key", "kind", "config", "result", ...}``."""

    def get(self, key: str) -> dict | None:
        """The stored record, or None if absent or unreadable (a torn file counts as absent)."""
        p = self.path(key)
        try:
            with open(p) as f:
                rec = json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return rec if isinstance(rec, dict) and rec.get("key") == key else None

    def put(self, key: str, record: Mapping[str, Any]) -> Path:
        """Write ``record`` (with ``key`` added) atomically; returns the file's path."""
        rec = dict(to_jsonable(record))
        rec["key"] = key
        return write_atomically(self.path(key), json.dumps(rec))

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None
