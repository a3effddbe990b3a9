"""The live-threads benchmark (issue 17 item 8): the change feed's cost on the pipeline's
headline rate (an A/B against the code before the feed), and SSE subscribers following
threads while a producer writes to them.

Run as ``python -m bench.live`` (:mod:`bench.live.main`).
"""
