"""Tests of probe/cli/."""
