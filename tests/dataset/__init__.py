"""Tests of probe/dataset/."""
