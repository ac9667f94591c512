"""The built-in corpus is the same bytes on every Python, and its hash is part of every run's identity."""
from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
import pytest

from gpu_runs import builtin_corpus as bc
from gpu_runs.data import get_corpus, tokens_sha256
from gpu_runs.recipe import TrainConfig, bind_data
from gpu_runs.train import train

FAST = dict(config="tiny", steps=2, batch_size=2, seq_len=16, eval_every=2, eval_batches=1, device="cpu")


def test_frozen_corpus_matches_its_recorded_hashes_on_this_python():
    """The archive's file hash is checked at load, and the tokens hash to STDLIB_SHA256 whatever
    Python runs this (CI runs the suite under two interpreters)."""
    blob = bc.ARCHIVE.read_bytes()
    assert hashlib.sha256(blob).hexdigest() == bc.FILE_SHA256
    c = get_corpus("stdlib")
    assert c.sha256 == bc.STDLIB_SHA256 == tokens_sha256(c.train, c.val)
    assert (len(c.train), len(c.val), c.vocab_size) == (7_465_363, 285_487, 256), sys.version


def test_archive_round_trips_documents_in_order():
    docs = [("pydoc:b", b"second"), ("stdlib:a/x.py", "caf\u00e9\n".encode()), ("pydoc:a", b"")]
    assert bc.read_archive(bc.archive_bytes(docs)) == docs
    assert bc.archive_bytes(docs) == bc.archive_bytes(docs)   # deterministic (mtime 0, fixed mode)


def test_a_changed_archive_is_refused_by_name(tmp_path):
    bad = tmp_path / "stdlib.tar.xz"
    blob = bytearray(bc.ARCHIVE.read_bytes())
    blob[len(blob) // 2] ^= 1
    bad.write_bytes(bytes(blob))
    with pytest.raises(bc.CorpusIntegrityError, match="stdlib.tar.xz has sha256"):
        bc.load_documents(bad)
    with pytest.raises(bc.CorpusIntegrityError, match="cannot be read"):
        bc.load_documents(tmp_path / "absent.tar.xz")


def test_tokens_sha256_sees_every_token_the_split_and_the_dtype():
    tr, va = np.arange(100, dtype=np.uint16), np.arange(7, dtype=np.uint16)
    h = tokens_sha256(tr, va)
    assert h == tokens_sha256(tr, va, chunk=9)                       # chunking is invisible
    tr2 = tr.copy()
    tr2[57] += 1
    assert tokens_sha256(tr2, va) != h                               # one token
    assert tokens_sha256(tr[:-1], np.concatenate([tr[-1:], va])) != h   # the split
    assert tokens_sha256(tr.astype(np.uint32), va) != h              # the dtype


def test_stdlib_runs_carry_the_corpus_hash_in_their_identity():
    assert TrainConfig().data_sha256 == bc.STDLIB_SHA256
    assert TrainConfig(data="some/dir").data_sha256 is None          # filled in at load


def test_user_corpus_hash_is_recorded_and_changed_data_refused(tmp_path):
    data = tmp_path / "text"
    data.mkdir()
    for i in range(30):
        (data / f"doc{i}.txt").write_text(f"document {i}: " + "lorem ipsum dolor sit amet " * 20)
    res = train(TrainConfig(data=str(data), out=str(tmp_path / "run"), **FAST), progress=False)
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["data_sha256"] == get_corpus(str(data)).sha256 == res.config.data_sha256
    (data / "doc3.txt").write_text("edited")
    with pytest.raises(ValueError, match="the data changed"):
        bind_data(res.config, get_corpus(str(data)))
    with pytest.raises(ValueError, match="data_sha256"):              # resume refuses other data
        train(TrainConfig(data=str(data), out=str(tmp_path / "run"), resume=True,
                          **dict(FAST, steps=4)), progress=False)
