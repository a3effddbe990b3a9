"""``python -m bench.lifecycle``: see :mod:`bench.lifecycle.main`."""

import sys

from bench.lifecycle.main import main

sys.exit(main())
