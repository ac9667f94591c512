"""theory.dynamics: what a delay does to the loss on a quadratic, not a worst-case bound (issue 48, item 4).

stability (the exact stability region of delayed EMA momentum on f(x) = h x^2 / 2: the
critical step eta h as a function of tau and mu, from the roots of the characteristic
polynomial, and the stationary noise floor inside that region), lmo_oscillation (fixed-norm
LMO steps on the same quadratic cannot diverge: the delay-driven limit cycle, exact without
momentum, the describing-function law and the simulated value with it), predictions (what
both predict for the correctors figure's tau sweep, computed, never typed), adaptive_edge
(delayed Adam settles at the delayed edge; the sharp direction's excess there),
confrontation (predicted against measured growth ratios: fits / fails). Notation:
docs/design.md §3-§4; mu is the weight of the new gradient (beta = 1 - mu). This package
imports none of its modules.
"""
