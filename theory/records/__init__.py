"""theory.records: what is claimed, one `Bound` per statement "quantity <= expr".

symbols (the constants and their units), bound (the `Bound` type, the variants and
quantities), package_bounds (the package's bounds and Kovalev's restated ones),
paper_readings (the paper's delayed bound, one record per reading), registry (every bound by
name). Records import nothing else of theory; this package imports none of its modules.
"""
