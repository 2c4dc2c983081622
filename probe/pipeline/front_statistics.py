"""The statistics stack's names the command line prints (front.py has the light ones): the metrics' labels, an
estimate's formats, the significance level (probe/cli/tables.py), the gate planner's figures, the comparison's run
check. Loaded when a command needs one, so that `probe run --dry-run` or `probe runs` start quickly."""

from probe.analysis.binomial import SIGNIFICANCE as SIGNIFICANCE
from probe.analysis.binomial import binomial_min_p as binomial_min_p
from probe.analysis.metric_registry import METRICS as METRICS
from probe.analysis.metric_registry import TABLE_METRICS as TABLE_METRICS
from probe.compare.summary import check_run_ids as check_run_ids
from probe.gates import run_for as run_for
from probe.gates.verdicts import MOST_PAIRS as MOST_PAIRS
from probe.report import ReportFiles as ReportFiles
from probe.report.formatting import MISSING as MISSING
from probe.report.formatting import fmt_ci as fmt_ci
from probe.report.formatting import fmt_contrast_value as fmt_contrast_value
from probe.report.formatting import fmt_difference as fmt_difference
from probe.report.formatting import fmt_duration as fmt_duration
from probe.report.formatting import fmt_estimate as fmt_estimate
from probe.report.formatting import fmt_p as fmt_p
from probe.report.formatting import fmt_signed as fmt_signed
from probe.taxonomy.name_sets import JOINT as JOINT
