"""Tests of probe/store/."""
