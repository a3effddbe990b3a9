import sys

from bench.checkpoint.main import main

sys.exit(main())
