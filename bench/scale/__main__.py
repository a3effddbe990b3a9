"""``python -m bench.scale``: see :mod:`bench.scale.main`."""

import sys

from bench.scale.main import main

sys.exit(main())
