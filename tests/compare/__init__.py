"""Tests of probe/compare/."""
