"""``python -m bench.ab``: see :mod:`bench.ab.main`."""

import sys

from bench.ab.main import main

sys.exit(main())
