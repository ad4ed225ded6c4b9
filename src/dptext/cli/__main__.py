"""``python -m dptext.cli``: the ``dptext`` command."""

from dptext.cli import run

run()
