"""The one spelling rule for registry names (mechanisms, attacks, metrics, datasets, policies)."""

from __future__ import annotations


def normalise_name(name) -> str:
    """``"SanText_Plus"``-style spellings to the registry key (``"santext-plus"``); not checked."""
    return str(name).strip().lower().replace("_", "-")
