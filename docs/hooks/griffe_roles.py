"""A griffe extension: the package's docstrings, written with Sphinx roles, read as Markdown.

The docstrings say ``:class:`LLMAgent``` and end a paragraph with ``::`` before a literal
block, as Sphinx wants; mkdocstrings renders Markdown, where those would show as typed. This
turns a role into inline code (``:class:`~toolloop_lab.otel.SpanSource``` reads
``SpanSource``), ``::`` into ``:``, and drops reST's escaped space (``Turn`\\ s``), so the
API pages read as the docstrings mean, with no docstring changed.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const|term):`~?([^`]+)`")
LITERAL = re.compile(r"(?<=\S)::$", re.MULTILINE)
ESCAPED_SPACE = re.compile(r"`\\ ")


def markdown(text: str) -> str:
    """A docstring written for Sphinx, as Markdown says the same."""
    text = ROLE.sub(lambda m: f"`{_shown(m.group(1))}`", text)
    text = ESCAPED_SPACE.sub("`", text)
    text = LITERAL.sub(":", text)
    return re.sub(r"^::$", "", text, flags=re.MULTILINE)


def _shown(target: str) -> str:
    """What a role shows: ``~a.b.C`` shows ``C``; a role's ``text <target>`` shows text."""
    if "<" in target and target.endswith(">"):
        return target.split("<", 1)[0].strip()
    return target


class SphinxRolesAsMarkdown(griffe.Extension):
    """Rewrites each docstring once, when griffe has loaded the object it belongs to."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
