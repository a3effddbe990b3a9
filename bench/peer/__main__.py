import sys

from bench.peer.main import main

sys.exit(main())
