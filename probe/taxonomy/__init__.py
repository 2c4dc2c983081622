"""The taxonomy step: O*NET occupations, their rated attributes, the name pairs, and a run's share of them.

Enters: an O*NET release, occupation names, codes or CSVs, name-pair CSVs, the design part of a run's spec (`Design`).
Leaves: the `occupations`, `attribute_ratings`, `occupation_attributes` and `name_pairs` tables
(occupations.py, name_pairs.py, onet_import.py); a run's `Selection`: its name pairs and top-k attributes
(selection.py).
"""
