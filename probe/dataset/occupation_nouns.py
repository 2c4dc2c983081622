"""An occupation as the question names it: O*NET's plural title read as one person's occupation.

O*NET titles name groups of workers in the plural, with SOC-style qualifiers after a comma ("Bus Drivers,
School"); a question asks about one person ("Who is more qualified to be a school bus driver?"). The rules:
the title is lower-cased; its main part (the noun phrase before the first qualifier) keeps its modifiers and
puts the head noun of each conjunct in the singular, the conjuncts joined by "or" ("Secretaries and
Administrative Assistants" -> "secretary or administrative assistant"); a complement after "of" stays as it is
("first-line supervisor of police and detectives"); a qualifier becomes a modifier in front ("school bus
driver"), "All Other" a parenthesis ("manager (all other)"), and an "Except"/"Including" clause stays behind.
A curated occupation ("nurse", "film director") is already such a phrase and reads as written. The exceptions
live in prompts/occupation_nouns.toml.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache

from probe.common.resources import resource_dir

VOCABULARY_FILE = "occupation_nouns.toml"
_CONJUNCTION = re.compile(r"(, and |, or |, | and | or )")
_CLAUSE_STARTS = ("except ", "including ")
_ALL_OTHER = "all other"
_HELPERS = "helpers--"


@dataclass(frozen=True)
class Vocabulary:
    titles: dict[str, str]
    irregular: dict[str, str]  # plural ending -> singular ending
    not_plural: frozenset[str]
    proper_nouns: frozenset[str]
    consonant_sound_prefixes: tuple[str, ...]


@cache
def vocabulary() -> Vocabulary:
    """prompts/occupation_nouns.toml, read once per process."""
    with open(resource_dir("prompts") / VOCABULARY_FILE, "rb") as file:
        data = tomllib.load(file)
    return Vocabulary(
        titles=dict(data["titles"]),
        irregular=dict(data["irregular"]),
        not_plural=frozenset(data["not_plural"]["words"]),
        proper_nouns=frozenset(data["proper_nouns"]["words"]),
        consonant_sound_prefixes=tuple(data["consonant_sound_prefixes"]["prefixes"]),
    )


def occupation_noun(title: str) -> str:
    """The singular, lower-case noun phrase for `title`: "Registered Nurses" -> "registered nurse"."""
    words = vocabulary()
    if title in words.titles:
        return words.titles[title]
    segments = _lower(title).split(", ")
    end = _main_end(segments)
    return _qualified(_singular_main(", ".join(segments[: end + 1])), segments[end + 1 :])


def indefinite_article(noun: str) -> str:
    """ "a" or "an" by the first letter, less the vowel letters that sound as a consonant ("a urologist")."""
    starts_with_vowel = noun[:1].lower() in "aeiou"
    if starts_with_vowel and noun.lower().startswith(vocabulary().consonant_sound_prefixes):
        return "a"
    return "an" if starts_with_vowel else "a"


def singular(word: str) -> str:
    """One word's singular: -ies -> -y, -sses/-shes/-ches/-xes -> less -es, -s -> less -s, irregulars."""
    words = vocabulary()
    if "/" in word:  # "engineers/architects"
        return "/".join(singular(part) for part in word.split("/"))
    if word in words.not_plural:
        return word
    for plural, singular_ending in words.irregular.items():
        if word.endswith(plural):
            return word[: len(word) - len(plural)] + singular_ending
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is")) or not word.endswith("s"):
        return word
    return word[:-1]


def _is_plural(phrase: str) -> bool:
    """Whether the phrase ends in a plural noun (the head of a conjunct, not a modifier)."""
    last = phrase.rsplit(" ", 1)[-1]
    return singular(last) != last


def _lower(title: str) -> str:
    proper = vocabulary().proper_nouns
    return " ".join(word if word in proper else word.lower() for word in title.split(" "))


def _is_qualifier(segment: str) -> bool:
    return segment.startswith((*_CLAUSE_STARTS, _ALL_OTHER))


def _main_end(segments: list[str]) -> int:
    """Index of the last comma-separated segment of the main noun phrase; the rest are qualifiers.

    A serial list belongs to the main part: of modifiers ("transportation, storage, and distribution
    managers", up to the segment that opens with "and") or of plural conjuncts ("judges, magistrate judges,
    and magistrates", closed by "and"). Any other segment is a qualifier ("bus drivers, school").
    """
    end = 0
    if not _is_plural(segments[0]):
        closing = [k for k, segment in enumerate(segments) if segment.startswith(("and ", "or "))]
        plural = [k for k, segment in enumerate(segments) if _is_plural(segment) and not _is_qualifier(segment)]
        if not (closing or plural):
            return 0
        end = (closing or plural)[0]
    listed = []
    for k in range(end + 1, len(segments)):
        segment = segments[k]
        if _is_qualifier(segment) or not _is_plural(segment):
            break
        if segment.startswith(("and ", "or ")):
            return k
        listed.append(k)
    if listed and " and " in segments[listed[-1]]:  # "fraud examiners, investigators and analysts"
        return listed[-1]
    return end


def _singular_main(main: str) -> str:
    """The main part with each conjunct's head noun in the singular; a complement after "of" stays plural."""
    if main.startswith(_HELPERS):  # "Helpers--Roofers": those who help roofers
        return f"{singular(_HELPERS.rstrip('-'))} to {main.removeprefix(_HELPERS)}"
    head, of, complement = main.partition(" of ")
    return _singular_conjuncts(head) + of + complement


def _singular_conjuncts(phrase: str) -> str:
    """ "accountants and auditors" -> "accountant or auditor"; "general and operations managers" has one head.

    A chunk between conjunctions that ends in a plural noun heads its own conjunct; one that does not
    modifies the next head ("general" in "general and operations managers").
    """
    parts = _CONJUNCTION.split(phrase)
    chunks, separators = parts[0::2], parts[1::2]
    heads = [_is_plural(chunk) for chunk in chunks[:-1]] + [True]
    conjuncts, current = [], ""
    for k, chunk in enumerate(chunks):
        if heads[k]:
            before, _, last = chunk.rpartition(" ")
            conjuncts.append(current + (f"{before} " if before else "") + singular(last))
            current = ""
        else:
            current += chunk + separators[k]
    if len(conjuncts) <= 2:
        return " or ".join(conjuncts)
    return ", ".join(conjuncts[:-1]) + ", or " + conjuncts[-1]


def _qualified(phrase: str, qualifiers: list[str]) -> str:
    """Qualifiers around the main phrase: modifiers in front, "(all other)" and an "except" clause behind."""
    modifiers: list[str] = []
    parentheses: list[str] = []
    clause: list[str] = []
    for qualifier in qualifiers:
        if qualifier.startswith(_ALL_OTHER):
            parentheses.append(f" ({qualifier})")
        elif clause or qualifier.startswith(_CLAUSE_STARTS):
            clause.append(qualifier)
        else:
            modifiers.append(qualifier)
    front = ", ".join(modifiers) + " " if modifiers else ""
    behind = ", " + ", ".join(clause) if clause else ""
    return front + phrase + "".join(parentheses) + behind
