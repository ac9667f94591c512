"""How a matrix optimizer (Muon) reads a weight with more than two dims: ``flatten=``.

A 4-D convolution kernel (out, in, kh, kw) is one linear map (out, in*kh*kw); read as a
batch of (kh, kw) matrices, Muon would orthogonalize every 3x3 kernel on its own, which
is not Muon (torch.optim.Muon refuses anything but 2-D). Leading dims *are* a batch
elsewhere in this package: MoE expert stacks (E, d_e, d) and independent seeds (S, m, n).
So the reading must be said:

- ``flatten=None`` (default): 2-D and 3-D weights as before (3-D: a stack of matrices);
  4-D and more refused by name, saying which option to pass;
- ``flatten=True``: every weight with more than two dims is optimized as its
  (shape[0], prod(shape[1:])) matrix, the usual practice for convolutions; the state and
  the shape factor are the flattened matrix's, the update is reshaped back;
- ``flatten=False``: every leading dim is a batch dim (any number of them).

:func:`matrix_view` wraps an optimizer accordingly; with ``flatten=None`` and weights of
at most three dims it only checks, so the update (and the state) are bit-for-bit the
optimizer's own.
"""
from __future__ import annotations

from lmo.base import Optimizer

FLATTEN_CHOICES = (None, True, False)


def check_flatten(flatten) -> None:
    """``flatten`` must be None, True or False (module docstring); ValueError naming it.

    >>> check_flatten(True)
    >>> check_flatten("yes")
    Traceback (most recent call last):
    ...
    ValueError: flatten must be None, True or False, got 'yes'
    """
    if flatten not in FLATTEN_CHOICES or (flatten is not None and not isinstance(flatten, bool)):
        raise ValueError(f"flatten must be None, True or False, got {flatten!r}")


def refuse_ambiguous(tree, name: str) -> None:
    """``flatten=None``: refuse weights with four or more dims, naming them.

    >>> import torch
    >>> refuse_ambiguous({"conv": torch.zeros(4, 3, 2, 2)}, "muon")
    Traceback (most recent call last):
    ...
    ValueError: muon: params['conv'] has shape (4, 3, 2, 2): as a batch of (2, 2) matrices ...
    """
    for k, v in tree.items():
        if v.ndim >= 4:
            raise ValueError(
                f"{name}: params['{k}'] has shape {tuple(v.shape)}: as a batch of "
                f"{tuple(v.shape[-2:])} matrices each trailing block would be orthogonalized on its own. "
                f"For a convolution kernel pass {name}(..., flatten=True), which optimizes it as the "
                f"({v.shape[0]}, {v[0].numel()}) matrix (the usual practice); pass flatten=False "
                f"if its leading dims really are a batch")


def _flat(tree) -> dict:
    return {k: v.reshape(v.shape[0], -1) if v.ndim > 2 else v for k, v in tree.items()}


def _unflat(updates, like) -> dict:
    return {k: u.reshape(like[k].shape) for k, u in updates.items()}


def matrix_view(opt: Optimizer, flatten, name: str) -> Optimizer:
    """``opt`` reading >2-D weights as ``flatten`` says (module docstring).

    >>> import torch
    >>> from lmo.muon_family import muon
    >>> opt, x = muon(0.1, exact=True, flatten=True), {"conv": torch.zeros(2, 1, 2, 2)}
    >>> opt.update({"conv": torch.ones(2, 1, 2, 2)}, opt.init(x), x)[0]["conv"].shape   # stepped as a (2, 4) matrix
    torch.Size([2, 1, 2, 2])
    """
    check_flatten(flatten)
    if flatten is False:
        return opt
    if flatten is None:
        def init(params):
            refuse_ambiguous(params, name)
            return opt.init(params)

        def update(grads, state, params=None):
            refuse_ambiguous(grads, name)
            return opt.update(grads, state, params)

        return Optimizer(init, update, virtual=opt.virtual, name=opt.name, hyper=opt.hyper)

    def init_flat(params):
        return opt.init(_flat(params))

    def update_flat(grads, state, params=None):
        updates, state = opt.update(_flat(grads), state, None if params is None else _flat(params))
        return _unflat(updates, grads), state

    return Optimizer(init_flat, update_flat, name=opt.name, hyper=dict(opt.hyper, flatten=True))
