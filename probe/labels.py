"""Canonical answer labels (DESIGN.md section 4): what `answers.label` may hold for each question type."""

UNKNOWN = "unknown"

LABELS_BY_QTYPE: dict[str, tuple[str, ...]] = {
    "attr": ("yes", "no", UNKNOWN),
    "binary": ("yes", "no", UNKNOWN),
    "single": ("female", "male", UNKNOWN),
    "multiple": ("female", "male", "both", "neither", UNKNOWN),
}
