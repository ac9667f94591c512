"""Data: document-level split without leaks, shard formats, Batcher determinism."""
import numpy as np
import pytest
import torch

from gpu_runs.data import SHARD_MAGIC, Batcher, get_corpus, load_shard, split_documents, val_batches


def test_stdlib_split_has_no_document_leak():
    c = get_corpus("stdlib")
    assert c.vocab_size == 256 and len(c.train) > 1_000_000 and len(c.val) > 10_000
    assert set(c.train_docs).isdisjoint(c.val_docs) and c.val_docs


def test_split_keeps_documents_whole():
    docs = [(f"doc{i}", (f"<{i}>" * 50).encode()) for i in range(60)]
    tr, va, trn, van = split_documents(docs)
    assert set(trn).isdisjoint(van) and len(trn) + len(van) == 60
    for n, b in docs:
        inside_train, inside_val = b in tr.tobytes(), b in va.tobytes()
        assert inside_train != inside_val and inside_val == (n in van)


def test_text_directory(tmp_path):
    for i in range(30):
        (tmp_path / f"f{i}.txt").write_text(f"file {i} " * 20)
    c = get_corpus(tmp_path)
    assert c.vocab_size == 256 and set(c.train_docs).isdisjoint(c.val_docs)


def write_header_shard(path, tokens, version=1, count=None):
    h = np.zeros(256, dtype=np.int32)
    h[0], h[1], h[2] = SHARD_MAGIC, version, len(tokens) if count is None else count
    with open(path, "wb") as f:
        f.write(h.tobytes())
        f.write(np.asarray(tokens, dtype=np.uint16 if version == 1 else np.uint32).tobytes())


def test_header_and_raw_shards(tmp_path):
    toks = np.arange(5000) % 50257
    write_header_shard(tmp_path / "a_train_000.bin", toks)
    np.testing.assert_array_equal(load_shard(tmp_path / "a_train_000.bin"), toks)
    write_header_shard(tmp_path / "b.bin", toks * 3, version=2)
    np.testing.assert_array_equal(load_shard(tmp_path / "b.bin"), toks * 3)
    # headerless uint16 tokens: read from *.u16 only (a .bin without header is refused, test_data_checks)
    (tmp_path / "raw.u16").write_bytes(toks.astype(np.uint16).tobytes())
    np.testing.assert_array_equal(load_shard(tmp_path / "raw.u16"), toks)


def test_shard_directory_split_by_name(tmp_path):
    write_header_shard(tmp_path / "fineweb_train_000001.bin", np.arange(4000) % 1000)
    write_header_shard(tmp_path / "fineweb_val_000000.bin", np.arange(1000) % 1000)
    c = get_corpus(tmp_path)
    assert len(c.train) == 4000 and len(c.val) == 1000 and c.val_docs == ["fineweb_val_000000.bin"]


def test_malformed_and_missing_shards(tmp_path):
    write_header_shard(tmp_path / "short.bin", np.arange(100), count=200)
    with pytest.raises(ValueError, match="short.bin.*malformed"):
        load_shard(tmp_path / "short.bin")
    (tmp_path / "odd.bin").write_bytes(b"\x01\x02\x03")
    with pytest.raises(ValueError, match="odd.bin"):
        load_shard(tmp_path / "odd.bin")
    with pytest.raises(FileNotFoundError, match="nope.bin"):
        load_shard(tmp_path / "nope.bin")
    with pytest.raises(FileNotFoundError, match="neither"):
        get_corpus(tmp_path / "missing_dir")


def test_batcher_deterministic_in_seed_and_step():
    toks = np.arange(10_000, dtype=np.uint16)
    a, b = Batcher(toks, 4, 8, seed=1), Batcher(toks, 4, 8, seed=1)
    b.batch(7)  # drawing other batches first changes nothing
    for s in (0, 3, 9):
        xa, ya = a.batch(s)
        xb, yb = b.batch(s)
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
        assert torch.equal(ya, xa + 1)  # consecutive tokens: y is x shifted
    assert not torch.equal(a.batch(0)[0], a.batch(1)[0])
    assert not torch.equal(a.batch(0)[0], Batcher(toks, 4, 8, seed=2).batch(0)[0])
    assert not torch.equal(a.batch(0)[0], a.batch(0, micro=0)[0])


def test_val_batches_fixed():
    toks = np.arange(1000, dtype=np.uint16)
    v1, v2 = val_batches(toks, 2, 3, 8), val_batches(toks, 2, 3, 8)
    assert len(v1) == 2 and all(torch.equal(p[0], q[0]) for p, q in zip(v1, v2))
    assert v1[0][0].shape == (3, 8)
    with pytest.raises(ValueError, match="seq_len"):
        Batcher(toks[:5], 1, 8)
