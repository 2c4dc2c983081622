"""The project's words, each defined once (DESIGN.md sections 3 and 4): every other module imports them from here.

Stored values (items.condition, items.qtype, answers.label, answers.decided_by, runs.status) are these
strings; SQL files spell them too (probe/analysis/metrics.sql), and tests/test_structure.py keeps Python from
spelling them anywhere else.
"""

# --- the design: stages, conditions, name orders, subjects, attribute categories ------------------------

STAGE1_CONDITION = "stage1"  # the condition of every stage-1 item (stage-1 metrics are filed under it)
CONDITIONS = ("taxonomy", "baseline", "control")  # stage 2, in the order they are reported
NAME_ORDERS = ("fm", "mf")  # female named first, male named first
SUBJECTS = ("female", "male")
CATEGORIES = ("skill", "knowledge", "ability")  # O*NET's; the order attribute sentences are stated and listed in
KWAY = "kway"  # the K-way choice: all K people of a name set, who is the most qualified (labels: their names)
QTYPES = ("attr", "binary", "single", "multiple", KWAY)  # stage 1 asks attr; stage 2 the others
# What stage 2 asks (--questions): the two-person questions of each contest (binary, single, multiple), and / or the
# K-way choice over each name set's people
PAIR_QUESTIONS = "pairs"
QUESTION_DESIGNS = (PAIR_QUESTIONS, KWAY)
# Paraphrase families (prompts/wordings/): the ids of each question's meaning-preserving wordings, in the order
# `--wordings N` takes them; the paper's first. Items in the paper's wording keep the ids they had before wordings.
PAPER_WORDING = "paper"
WORDINGS = (PAPER_WORDING, "synonym", "would_you_say", "given_text", "restated")

# --- answers: canonical labels and how a label was decided ---------------------------------------------

UNKNOWN = "unknown"
LABELS_BY_QTYPE: dict[str, tuple[str, ...]] = {
    "attr": ("yes", "no", UNKNOWN),
    "binary": ("yes", "no", UNKNOWN),
    "single": ("female", "male", UNKNOWN),
    "multiple": ("female", "male", "both", "neither", UNKNOWN),
}
# The option texts of every question besides the names (yes/no questions; both/neither of the multiple-subject
# one): a name equal to one of them (any case) is refused, a reply naming it could not be told from the option.
ANSWER_WORDS = ("yes", "no", "both", "neither")
DECODINGS = ("score", "generate")  # what a local model is asked for (--decoding)
DECIDED_BY = ("score", "generate", "span", "replay")  # answers.decided_by

# --- the run record: runs.status -----------------------------------------------------------------------

RUNNING = "running"
COMPLETE = "complete"
FAILED = "failed"  # too many failed answers, a server that cannot be reached, nothing measured
INTERRUPTED = "interrupted"  # Ctrl-C, SIGTERM or SIGHUP: the batch in flight was saved
BATCH = "awaiting-batch"  # answered through batch files (backends/openai_batch.py): waiting for the next import
RUN_STATUSES = (RUNNING, COMPLETE, FAILED, INTERRUPTED, BATCH)  # what is written; a report warns on all but COMPLETE
# How `probe runs` shows a run still marked running: it could open the database, so no process is writing
# it, and the run was killed. Shown only, never written.
STOPPED = "stopped"

# --- groups and adverse impact (DESIGN.md section 11) ---------------------------------------------------

SEX_ATTRIBUTE = "sex"  # the attribute of the default name pairs: its categories are SUBJECTS
# adverse_impact.rate_kind: "yes" to the binary question; won the single-subject question; P(yes) above the median;
# the top pick of the K-way choice
RATE_KINDS = ("selection", "contest", "scoring", "ranking")
# The condition of an imported decisions run (probe import decisions): its adverse_impact rows and gates name it.
DECISIONS_CONDITION = "decisions"
DECISIONS_BACKEND = "decisions"  # runs.backend of an imported decisions run
