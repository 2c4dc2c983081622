"""Tests of probe/gates/."""
