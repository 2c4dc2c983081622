"""`probe report RUN_ID --mlflow URI`: the report as an MLflow run, for teams that track their evaluations there.

One MLflow run per call, named after the probe's run, in the experiment MLFLOW_EXPERIMENT_NAME (default
taxonomy-probe): the settings as params, each headline finding's estimate, interval bounds and n as metrics
(`<condition>.<metric>`, `..._ci_low`, `..._ci_high`, `..._pairs`, `..._instances`; the name pair is the unit of
every interval), and the files the command wrote as artifacts. Every number is read from report.json (the
document the report renders from); the finding keys are results.py's. Needs the `mlflow` extra (the MLflow
client, mlflow-skinny); the URI is any MLflow accepts: a tracking server, a `sqlite:` database (the full `mlflow`
package), a `file:` store (MLflow 3 asks for MLFLOW_ALLOW_FILE_STORE=true).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from probe.common.errors import UserError
from probe.common.redact import safe_url, scrub
from probe.integrations.results import finding_key, reported

if TYPE_CHECKING:
    from mlflow import MlflowClient

EXPERIMENT = "taxonomy-probe"


class Experiment(NamedTuple):
    """Where a run is logged: the tracking URI as given, its client and the experiment's id."""

    uri: str
    client: MlflowClient
    experiment_id: str


@contextmanager
def _mlflow_errors(uri: str) -> Iterator[None]:
    """MLflow's refusals (an unknown scheme, a store it will not open, a server that is down) as one line."""
    from mlflow.exceptions import MlflowException

    try:
        yield
    except MlflowException as error:
        raise UserError(f"--mlflow {safe_url(uri)}: {' '.join(str(error.message).split())}") from None


def open_experiment(uri: str) -> Experiment:
    """The experiment (created on first use) at `uri`, or the one-line error naming the extra to install.

    Called before the report is written, so a store MLflow refuses stops the command before anything is written.
    """
    try:
        from mlflow import MlflowClient
    except ImportError:
        raise UserError("--mlflow needs MLflow: pip install 'taxonomy-probe[mlflow]'") from None
    name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or EXPERIMENT
    with _mlflow_errors(uri):
        client = MlflowClient(tracking_uri=uri)
        experiment = client.get_experiment_by_name(name)
        return Experiment(uri, client, experiment.experiment_id if experiment else client.create_experiment(name))


def params(document: Mapping[str, Any], limit: int) -> dict[str, str]:
    """The run's identity and settings as MLflow params (values scrubbed, at most `limit` characters)."""
    run, settings = document["run"], document["settings"]
    values = {
        "run_id": run["run_id"],
        "model": run["model"],
        "model_identity": run["model_identity"],
        "backend": run["backend"],
        "decoding": run["decoding"],
        "preset": settings["preset"],
        "pairs": settings["pairs"],
        "occupations": settings["occupations"],
        "top_k": settings["top_k"],
        "conditions": ", ".join(settings["conditions"]),
        "system_prompt": settings["system_prompt"],
        "onet_release": run["onet_release"],
        "template_hash": run["template_hash"],
        "package_version": run["package_version"],
    }
    return {key: scrub(value)[:limit] for key, value in values.items() if value is not None}


def metrics(document: Mapping[str, Any]) -> dict[str, float]:
    """Each headline finding's estimate, interval bounds and n, under its finding key."""
    values = {}
    for finding in reported(document):
        key = finding_key(finding)
        named = {
            key: finding["estimate"],
            f"{key}_ci_low": finding["ci_low"],
            f"{key}_ci_high": finding["ci_high"],
            f"{key}_pairs": finding["n"]["pairs"],
            f"{key}_instances": finding["n"]["instances"],
        }
        values |= {name: float(value) for name, value in named.items() if value is not None}
    return values


def log_report(experiment: Experiment, report_json: Path, files: Sequence[Path]) -> str:
    """Log the report at `report_json` and `files` as one MLflow run; returns the MLflow run's id."""
    from mlflow.entities import Metric, Param, RunStatus
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    client = experiment.client
    document = json.loads(report_json.read_text(encoding="utf-8"))
    with _mlflow_errors(experiment.uri):
        mlflow_run = client.create_run(experiment.experiment_id, run_name=document["run"]["run_id"])
        run_id = mlflow_run.info.run_id
        try:
            stamp = mlflow_run.info.start_time
            client.log_batch(
                run_id,
                metrics=[Metric(key, value, stamp, 0) for key, value in metrics(document).items()],
                params=[Param(key, value) for key, value in params(document, MAX_PARAM_VAL_LENGTH).items()],
            )
            for path in files:
                client.log_artifact(run_id, str(path))
        except BaseException:
            client.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
            raise
        client.set_terminated(run_id)
    return run_id
