"""theory.examples: one bound read in one place, from its statement to its checks.

delayed_lemma (``python -m theory.examples.delayed_lemma``): the delayed lemma's statement, the
steps that derive it, and every check run on them; bounds (every registered bound's example, one
function per bound, named as it: the bound and the quantity it bounds on a run of its algorithm,
run as doctests). This package imports none of its modules.
"""
