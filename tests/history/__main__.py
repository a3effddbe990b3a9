"""``python -m tests.history``: see :mod:`tests.history.main`."""

import sys

from tests.history.main import main

sys.exit(main())
