"""The dataset step: the questions of a run, rendered as prompts.

Enters: a `Selection`, the conditions, a prompt format, stage-1 answers (for stage 2).
Leaves: stage-1 and stage-2 `Item`s with rendered prompts, the `items` table (stages.py, prompts.py);
`Option`s and `Query`s for a backend (questions.py); prompts shown without a model (preview.py).
"""
