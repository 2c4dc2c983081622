"""Tests of probe/taxonomy/."""
