"""Pure-Python implementations of every Rust hot path.

They are the baseline the benchmarks beat and the oracle the tests compare the
Rust core with, so they are written as a careful Python programmer would, not as
straw men.
"""
