"""``python -m bench.core``: see :mod:`bench.core.main`."""

import sys

from bench.core.main import main

sys.exit(main())
