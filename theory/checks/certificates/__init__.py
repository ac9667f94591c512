"""theory.checks.certificates: certified worst cases of the momentum-error lemma's drift by
performance estimation (PEPit), in the Euclidean special case.

What is certified: the deterministic part (sigma = 0) of the momentum-error lemma for sync,
the one-step delay and error feedback, with the l_2 norm (rho = 1: normalized SGD with
momentum), f L-smooth and not necessarily convex, every step of the virtual sequence a free
vector of norm at most eta. The PEP's value is the exact worst case of
||m_t - grad f(y_t)||_2 over all such f and steps (PEPit's SmoothFunction interpolation
conditions are exact), so a derived drift below it is false and a derived drift equal to it is
attained.

What PEPit cannot express here, so the certificate does not cover it: the non-Euclidean
geometries (spectral / nuclear for Muon, l_inf / l_1 for sign; rho > 1), whose norms are not
quadratic in the Gram matrix, and the stochastic part (sigma > 0: the noise term
(1-mu)^t rho sigma + sqrt(mu) rho sigma is an expectation over a noise law). The certificate
covers only the Euclidean deterministic drift.

Modules: relations (momentum weights, the points every variant takes its gradients at, the
derived terms), pep (one PEP solved; its worst case re-checked as points), table (the grid,
its verdict, the markdown of docs/proof.md), stored (the grid's certified values that
docs/proof.md shows). ``python -m theory.checks.certificates`` solves the grid. This package
imports none of its modules; PEPit is imported inside functions only, so ``import theory``
needs the core dependencies alone.
"""
