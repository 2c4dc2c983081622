"""Tests of probe/common/."""
