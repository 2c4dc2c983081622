"""Tests of probe/answering/."""
