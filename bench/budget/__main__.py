"""``python -m bench.budget``: see :mod:`bench.budget.main`."""

import sys

from bench.budget.main import main

sys.exit(main())
