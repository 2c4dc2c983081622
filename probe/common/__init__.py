"""Shared helpers every step may import (the first step: it imports no other).

Enters: strings and files from users, servers and the model.
Leaves: one-line `UserError`s (errors.py); scrubbed (redact.py), escaped (escape.py) and NFC-checked text
(user_text.py); staged delimited files (staging.py); the project's words, each defined once: conditions,
stages, categories, question types, labels, decodings, run statuses (vocabulary.py); where the curated data
and prompt templates live (resources.py); the package version (version.py); whether SIGTERM/SIGHUP asked a
run to stop (stopping.py: the runner stops between batches, a backend waiting on a server stops waiting).
"""
