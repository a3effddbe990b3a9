import sys

from bench.redis.main import main

sys.exit(main())
