"""Tests of probe/pipeline/."""
