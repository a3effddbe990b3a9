"""``python -m bench.history_check --minutes N``: the long history check of replay (the
name issue 14 gives it; ``python -m bench.history`` is the same), see
:mod:`bench.history.main`."""

import sys

from bench.history.main import main

if __name__ == "__main__":
    sys.exit(main())
