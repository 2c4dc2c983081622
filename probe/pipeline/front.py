"""The steps' names the command line shows or checks (the metric names among them), drawn in one place: probe/cli/
imports only the pipeline, the API and common (tests/test_structure.py), so a step can move inside its folder without
the CLI knowing.

Light on purpose (no statistics stack, no model library): every command imports it. What a table needs from the
statistics is in front_statistics.py, loaded when a command prints one.
"""

from probe import scanning as scanning
from probe.analysis.metric_registry import ATTR_YES_DIFF as ATTR_YES_DIFF
from probe.analysis.metric_registry import ATTR_YES_F as ATTR_YES_F
from probe.analysis.metric_registry import ATTR_YES_M as ATTR_YES_M
from probe.analysis.metric_registry import BIAS as BIAS
from probe.analysis.metric_registry import CONSISTENCY as CONSISTENCY
from probe.analysis.metric_registry import FEMALE_SHARE as FEMALE_SHARE
from probe.analysis.metric_registry import POSITION_FIRST as POSITION_FIRST
from probe.answering import plan as plan
from probe.answering.runs import study_run_ids as study_run_ids
from probe.backends import backend_help as backend_help
from probe.backends import backend_info as backend_info
from probe.dataset import preview as preview
from probe.dataset.prompts import PROMPT_FORMATS as PROMPT_FORMATS
from probe.store.config import PRESETS as PRESETS
from probe.store.db import DEFAULT_DB as DEFAULT_DB
from probe.store.db import write_failure as write_failure
from probe.store.spec import RunSpec as RunSpec
from probe.taxonomy import occupations as occupations
