"""The old name of ``python -m bench.http``, kept so that one command runs both trees of
an A/B (a tree before the move knows only this name)."""

import sys

from bench.http.main import main

if __name__ == "__main__":
    sys.exit(main())
