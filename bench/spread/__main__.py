"""``python -m bench.spread``: see :mod:`bench.spread.main`."""

import sys

from bench.spread.main import main

sys.exit(main())
