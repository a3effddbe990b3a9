"""``python -m bench.replay``: see :mod:`bench.replay.main`."""

import sys

from bench.replay.main import main

sys.exit(main())
