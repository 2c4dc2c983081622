"""The answering step: a recorded run, its items put to a backend.

Enters: a `RunSpec` (its options: the database, the run id), a `Selection`, a backend.
Leaves: the `runs` record and its status (runs.py); the `answers` table and the answer cache (runner.py); a
dry-run `Plan`: items, model calls, estimated time (plan.py); a run stopped between batches on a signal
(the flag is common/stopping.py, which backends waiting on a server read too); checks only a whole set of
answers can show, for runs and scans alike (answer_checks.py).
"""
