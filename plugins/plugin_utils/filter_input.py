# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Shared input check of the parse_* filters: they take a tool's text output, never data."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text


def tool_text(text, filter_name, tool):
    """Return `text` as str; raise AnsibleFilterError naming the filter and the expected tool output otherwise."""
    if text is None or isinstance(text, (dict, list)):
        raise AnsibleFilterError(
            "%s expects the text output of %s (for example register.stdout), got %s"
            % (filter_name, tool, type(text).__name__)
        )
    return to_text(text)
