"""The probe inside the tools teams already evaluate with, and their results back in.

Enters: a recorded run (or a design without a model), a run's report document (report.json); files those tools
wrote.
Leaves: a Hugging Face dataset folder (hf_dataset.py), an lm-evaluation-harness task folder
(lm_eval_task.py), an Inspect AI task (inspect_task.py); runs created from their sample logs (imports.py);
the headline findings as an Every Eval Ever record and a model card's model-index (results.py), optionally an
MLflow run (mlflow_log.py).

Each tool is an optional extra (`pip install 'taxonomy-probe[hf]'`, `[lm-eval]`, `[inspect]`, `[eee]`,
`[mlflow]`): the files are written without them; only reading or running them, or logging to MLflow, needs the
tool, and nothing here imports one at module level, so `import probe` never loads them. The rows every format
exports are built once, in source.py; every number a result carries is the report document's.
"""
