"""``python -m bench.pipeline``: see :mod:`bench.pipeline.main`."""

import sys

from bench.pipeline.main import main

sys.exit(main())
