"""``python -m paper_figs``: see :mod:`paper_figs.cli`."""
import sys

from .cli import main

sys.exit(main())
