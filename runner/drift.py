"""Drift: what a verified, in-policy agent change did beyond its intent. A flag for a human, never a refusal: a file
changed that neither the intent's outputs nor its own scope name, or an agent summary that says it did what a
non-goal excludes (a lexical check, explained by the sentence and the words it matched)."""

from __future__ import annotations

import re

from .globs import matches_any
from .spec import Intent

# words that carry no content of a non-goal ("Do not change the public API" keys on change, public, api)
_STOPWORD_TEXT = """a an the of to in on at by for from into onto with within as and or nor but if then than so
    is are was were be been being am do does did done doing have has had having
    this that these those it its it's their there here them they we i you he she our your my me us
    any all some each every other others such same own only just also even still very too more most
    should shall must may might can could will would need needs needed let lets
    no not never none without avoid avoids avoided don't dont doesn't doesnt didn't didnt won't wont
    shouldn't shouldnt mustn't mustnt isn't isnt aren't arent wasn't wasnt cannot can't cant
    please anything something nothing everything new"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# a summary sentence holding one of these is skipped: "I did not change the API" is no drift
_NEGATION_TEXT = """no not never none without nor avoid avoided don't dont doesn't doesnt didn't didnt won't wont
    cannot can't cant isn't isnt wasn't wasnt aren't arent haven't havent hasn't hasnt nothing unchanged
    untouched left kept"""
_NEGATIONS = frozenset(_NEGATION_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_SUFFIXES = ("ing", "ions", "ion", "ed", "es", "s", "e")


def stem(word: str) -> str:
    """A crude suffix strip, so change, changes, changed and changing meet (irregular forms do not: wrote)."""
    if len(word) <= 3:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                continue  # class, access
            return word[: -len(suffix)]
    return word


def key_words(text: str) -> list[str]:
    """A non-goal's content words as written (lowercased), in their order, one a stem."""
    out: list[str] = []
    stems: set[str] = set()
    for word in _WORD.findall(text.lower().replace("\u2019", "'")):
        if word not in _STOPWORDS and stem(word) not in stems:
            stems.add(stem(word))
            out.append(word)
    return out


def sentences(summary: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(summary) if s.strip()]


def contradicted(summary: str, non_goal: str) -> tuple[str, list[str]] | None:
    """(the summary's sentence, the non-goal's key words) when one sentence of the summary, holding no negation,
    holds every key word of the non-goal (by stem: changing matches changed); else None."""
    keys = key_words(non_goal)
    if not keys:
        return None
    for sentence in sentences(summary):
        words = _WORD.findall(sentence.lower().replace("\u2019", "'"))
        if any(w in _NEGATIONS or w.endswith("n't") for w in words):
            continue
        stems = {stem(w) for w in words}
        if all(stem(k) in stems for k in keys):
            return sentence, keys
    return None


def find_drift(intent: Intent, changed: list[str], summary: str) -> list[dict]:
    """The drift of an agent change that passed its policy and verification: one entry a file or a non-goal."""
    found: list[dict] = []
    named = tuple(intent.outputs) + tuple(intent.scope)
    for rel in sorted(changed):
        if not matches_any(rel, named):
            found.append(
                {
                    "kind": "scope",
                    "path": rel,
                    "message": f"{rel}: changed, but neither the intent's outputs nor its scope name it "
                    f"(policy '{intent.policy}' allowed it)",
                }
            )
    for non_goal in intent.non_goals:
        hit = contradicted(summary, non_goal) if summary else None
        if hit:
            sentence, words = hit
            shown = sentence if len(sentence) <= 200 else sentence[:197] + "..."
            found.append(
                {
                    "kind": "non_goal",
                    "non_goal": non_goal,
                    "sentence": shown,
                    "words": words,
                    "message": f'the agent\'s summary says "{shown}", which matches non-goal "{non_goal}" '
                    f"(every key word: {', '.join(words)})",
                }
            )
    return found
