"""Tests of probe/analysis/."""
