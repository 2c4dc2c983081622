"""Tests of probe/integrations/."""
