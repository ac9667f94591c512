"""Data: document-level split without leaks, shard formats (incl. malformed files), deterministic batches."""
import numpy as np
import pytest
import torch

from gpu_runs.data import SHARD_MAGIC, Batcher, get_corpus, load_shard, split_documents, val_batches


def _write_header_shard(path, tokens, version=1, ntok=None):
    header = np.zeros(256, dtype=np.int32)
    header[:3] = (SHARD_MAGIC, version, len(tokens) if ntok is None else ntok)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, dtype=np.uint16 if version == 1 else np.uint32).tobytes())


def test_stdlib_split_has_no_document_on_both_sides():
    c = get_corpus("stdlib")
    assert c.vocab_size == 256 and len(c.train) > 100_000 and len(c.val) > 1_000
    assert set(c.train_docs).isdisjoint(c.val_docs) and len(c.val_docs) > 0
    assert get_corpus("stdlib").train_docs == c.train_docs      # deterministic order


def test_text_directory_split_places_each_document_whole(tmp_path):
    docs = {f"doc{i:03d}.txt": f"<<{i:03d}>> unique body {i * 7919} ".encode() * 5 for i in range(60)}
    for n, b in docs.items():
        (tmp_path / n).write_bytes(b)
    c = get_corpus(tmp_path)
    assert set(c.train_docs) | set(c.val_docs) == set(docs) and set(c.train_docs).isdisjoint(c.val_docs)
    tr, va = c.train.tobytes(), c.val.tobytes()
    for n in c.val_docs:
        assert docs[n] in va and docs[n][:7] not in tr          # the marker of a val doc never in train
    for n in c.train_docs:
        assert docs[n] in tr and docs[n][:7] not in va


def test_split_needs_two_documents():
    with pytest.raises(ValueError, match="at least 2"):
        split_documents([("a", b"x")])


def test_shard_formats_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    toks = rng.integers(0, 50257, size=5000)
    _write_header_shard(tmp_path / "a.bin", toks, version=1)
    _write_header_shard(tmp_path / "b.bin", toks, version=2)
    np.asarray(toks, dtype=np.uint16).tofile(tmp_path / "raw.bin")
    np.save(tmp_path / "c.npy", toks.astype(np.uint32))
    for f in ("a.bin", "b.bin", "raw.bin", "c.npy"):
        np.testing.assert_array_equal(np.asarray(load_shard(tmp_path / f)).astype(np.int64), toks)


def test_shard_directory_train_val_by_name(tmp_path):
    _write_header_shard(tmp_path / "fineweb_train_000001.bin", np.arange(3000) % 1000)
    _write_header_shard(tmp_path / "fineweb_val_000000.bin", np.arange(500) % 1000 + 1)
    c = get_corpus(tmp_path)
    assert len(c.train) == 3000 and len(c.val) == 500


def test_malformed_and_missing_shards(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_shard(tmp_path / "missing.bin")
    _write_header_shard(tmp_path / "short.bin", np.arange(100), ntok=200)
    with pytest.raises(ValueError, match="short.bin.*malformed"):
        load_shard(tmp_path / "short.bin")
    _write_header_shard(tmp_path / "ver.bin", np.arange(100), version=7)
    with pytest.raises(ValueError, match="version"):
        load_shard(tmp_path / "ver.bin")
    (tmp_path / "odd.bin").write_bytes(b"\x01\x02\x03")
    with pytest.raises(ValueError, match="odd.bin"):
        load_shard(tmp_path / "odd.bin")
    with pytest.raises(FileNotFoundError):
        get_corpus(tmp_path / "nope")


def test_batcher_deterministic_in_seed_and_step():
    toks = np.random.default_rng(1).integers(0, 256, size=10_000).astype(np.uint8)
    a, b = Batcher(toks, 4, 16, seed=5), Batcher(toks, 4, 16, seed=5)
    for step in (7, 0, 3):                                    # order of calls does not matter
        xa, ya = a.batch(step)
        xb, yb = b.batch(step)
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    x, y = a.batch(0)
    assert x.shape == (4, 16) and x.dtype == torch.int64
    assert torch.equal(x[:, 1:], y[:, :-1])                   # targets are the next tokens
    assert not torch.equal(a.batch(1)[0], x) and not torch.equal(Batcher(toks, 4, 16, seed=6).batch(0)[0], x)
    assert not torch.equal(a.batch(0, micro=0)[0], x)         # extra draws are independent of the step's batch
    with pytest.raises(ValueError, match="batch_size"):
        Batcher(toks, 0, 16)


def test_val_batches_fixed():
    toks = np.arange(5000) % 256
    v1, v2 = val_batches(toks, 3, 4, 16), val_batches(toks, 3, 4, 16)
    assert len(v1) == 3 and all(torch.equal(a[0], b[0]) for a, b in zip(v1, v2))
    assert v1[0][0].shape == (4, 16)
