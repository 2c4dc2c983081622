"""Tests of probe/backends/."""
