"""``python -m bench.failover``: see :mod:`bench.failover.main`."""

import sys

from bench.failover.main import main

sys.exit(main())
