"""``python -m bench.http``: see :mod:`bench.http.main`."""

import sys

from bench.http.main import main

sys.exit(main())
