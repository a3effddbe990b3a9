"""``python -m bench.context``: see :mod:`bench.context.main`."""

import sys

from bench.context.main import main

sys.exit(main())
