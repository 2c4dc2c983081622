"""Rendering of the Jinja2 templates in prompts/: every word a model reads comes from there.

Layout: prompts/<format>/<qtype>.j2 for the formats `qa` (extractive QA: context and question apart),
`chat` (a user message that states the allowed answers) and `completion` (ends with an answer cue);
prompts/context.j2 is the shared context c plus attribute sentences (prompts/sentence.j2), and
prompts/phrases.j2 the shared wording. An occupation reaches a question through the filter `occupation_noun`
(occupation_nouns.py: O*NET's plural title as one person's occupation, exceptions in prompts/occupation_nouns.toml),
an indefinite article through `indefinite_article`. A question template sets `question` at top level, so one render
gives both the full prompt and the question alone. `render_template` renders any template there by name
(the context and sentence templates go through it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import NoReturn

import jinja2

from probe.common.errors import UserError
from probe.common.resources import resource_dir
from probe.common.vocabulary import PAPER_WORDING
from probe.dataset import occupation_nouns

PROMPT_FORMATS = ("qa", "chat", "completion")
WORDING_FILES = (".j2", ".toml")  # what under prompts/ the template hash covers


@dataclass(frozen=True)
class RenderedPrompt:
    prompt: str  # what the backend's format sends (chat: the user message)
    question: str  # the question alone (extractive QA reads context and question apart)


def _fail(message: str) -> NoReturn:
    raise jinja2.TemplateRuntimeError(message)


@cache
def _environment() -> jinja2.Environment:
    """One compiled environment per process: templates are parsed once, rendering stays cheap."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(resource_dir("prompts")),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        auto_reload=False,
    )
    env.globals["fail"] = _fail
    env.filters["occupation_noun"] = lambda title: occupation_nouns.occupation_noun(str(title))  # str: undefined fails
    env.filters["indefinite_article"] = occupation_nouns.indefinite_article
    return env


def _template(name: str) -> jinja2.Template:
    try:
        return _environment().get_template(name)
    except jinja2.TemplateNotFound as exc:
        raise UserError(f"prompts/{name}: no such template") from exc
    except jinja2.TemplateSyntaxError as exc:
        raise UserError(f"prompts/{name}, line {exc.lineno}: {exc.message}") from exc


def _render_module(name: str, variables: dict[str, object]) -> jinja2.environment.TemplateModule:
    try:
        return _template(name).make_module(variables)
    except jinja2.UndefinedError as exc:
        raise UserError(f"prompts/{name}: {exc.message}") from exc
    except jinja2.TemplateRuntimeError as exc:
        raise UserError(f"prompts/{name}: {exc}") from exc


def render_template(template_name: str, /, **variables: object) -> str:
    """Render any template under prompts/ (path relative to it), e.g. an auxiliary chat system prompt."""
    return str(_render_module(template_name, variables))


def render_prompt(prompt_format: str, qtype: str, **variables: object) -> RenderedPrompt:
    """Render prompts/<prompt_format>/<qtype>.j2 into the full prompt and its question (`wording`: a paraphrase id
    of prompts/wordings/, the paper's unless given)."""
    variables.setdefault("wording", PAPER_WORDING)
    if prompt_format not in PROMPT_FORMATS:
        raise UserError(f"prompt format {prompt_format!r}: unknown (choose from {', '.join(PROMPT_FORMATS)})")
    name = f"{prompt_format}/{qtype}.j2"
    module = _render_module(name, variables)
    question = getattr(module, "question", None)
    if question is None:
        raise UserError(f"prompts/{name}: the template must set `question`")
    return RenderedPrompt(prompt=str(module), question=str(question))


def render(prompt_format: str, qtype: str, **variables: object) -> str:
    """The full prompt of one item; an undefined variable is a UserError naming the template."""
    return render_prompt(prompt_format, qtype, **variables).prompt


@cache
def attribute_sentence(name: str, category: str, element: str) -> str:
    """ "Mary is skilled in active listening." Cached: a run states the same few thousand sentences often."""
    return render_template("sentence.j2", name=name, category=category, element=element)


def render_context(first: str, second: str, attributes: Sequence[tuple[str, str, str]] = ()) -> str:
    """Context c for the two subjects in name order, plus one sentence per (name, category, element)."""
    return _context(first, second, tuple(attributes))


@lru_cache(maxsize=1024)
def _context(first: str, second: str, attributes: tuple[tuple[str, str, str], ...]) -> str:
    """Cached (a few recent ones): every item renders its own context, and neighbours share one (the stage-1 items
    of a pair in one name order; a stage-2 instance's single and multiple items)."""
    sentences = [attribute_sentence(*attribute) for attribute in attributes]
    return render_template("context.j2", first=first, second=second, sentences=sentences)


def template_hash() -> str:
    """sha256 over the wording: the templates and vocabulary under prompts/ (path and content), the noun rules.

    Stored with each run and scan to date its prompts: one that started under other wording refuses to resume.
    """
    root = resource_dir("prompts")
    digest = hashlib.sha256()
    wording = sorted(path for path in root.rglob("*") if path.suffix in WORDING_FILES)
    files = [(path.relative_to(root).as_posix(), path) for path in wording]
    files.append(("occupation_nouns.py", Path(occupation_nouns.__file__)))
    for name, path in files:
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
