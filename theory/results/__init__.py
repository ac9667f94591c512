"""theory.results: what the checked bounds say.

implications (each reading of the paper's bound x each variant: implied or not, proved in
sympy), slack (reading C2 against the sharper bounds, and the extremal witness of every
inequality), scaling (units), limits (the delay penalty, the noise term against the derived one), rates
(optimal (eta, mu), the K^(-1/4) rate, Kovalev's 31/32, the price of the delay), render (the
proof as text or markdown, each step with its check; docs/proof.md). This package imports none
of its modules.
"""
