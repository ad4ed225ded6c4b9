"""``python -m dptext.cli``: the ``dptext`` command."""

import sys

from dptext.cli import main

sys.exit(main())
