"""``python -m bench.history``: see :mod:`bench.history.main`."""

import sys

from bench.history.main import main

sys.exit(main())
