"""The dataset step: the questions of a run, rendered as prompts.

Enters: a `Selection`, the conditions, a prompt format, stage-1 answers (for stage 2).
Leaves: stage-1 and stage-2 `Item`s with rendered prompts (stages.py, prompts.py) and their rows of the `items`
table (items.py); `Option`s and `Query`s for a backend (questions.py); prompts shown without a model (preview.py).
"""
