"""``python -m bench.live``: see :mod:`bench.live.main`."""

import sys

from bench.live.main import main

sys.exit(main())
