"""Tests of probe/report/."""
