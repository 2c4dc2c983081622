"""Tests of probe/scanning/."""
