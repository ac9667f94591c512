"""theory.results: what the checked bounds say.

implications (each reading of the paper's bound x each variant: implied or not, proved in
sympy), slack (reading C2 against the sharper bounds, and the extremal witness of every
inequality), scaling (units), limits (corners of the domain, the delay penalty), rates
(optimal (eta, mu), the K^(-1/4) rate, Kovalev's 31/32, the price of the delay). This package
imports none of its modules.
"""
