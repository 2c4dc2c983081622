"""Benchmarks: speed against the naive way and the hardware limit. Run `python -m bench [--quick]`."""
