"""Pure-Python implementations of the Rust hot paths: the oracle for tests, the baseline
for benchmarks. Import the submodules (``groupcoord.reference.timer``, ...) directly."""
