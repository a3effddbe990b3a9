"""The targets of issue 17 item 8, judged on the live benchmark's results."""

from __future__ import annotations

from bench.common.target import Target
from bench.live.figures import LiveResult

#: Commit to a subscriber's receipt of the change, 99th percentile.
MAX_P99_MS = 100.0
#: The API's RSS may grow this much over the run's second half (a leak per event or
#: per subscriber grows it with the run's length).
MAX_GROWTH = 0.10


def latency(result: LiveResult) -> Target:
    lat = result.commit_to_event
    return Target("commit-to-event p99, 1,000 SSE subscribers, 5,000 deltas/s", "< 100 ms",
                  f"{lat.p99:.1f} ms", lat.count > 0 and lat.p99 < MAX_P99_MS,
                  f"p50 {lat.p50:.1f}, p99.9 {lat.p999:.1f}, max {lat.max:.1f} ms over "
                  f"{lat.count:,} events ({result.unmatched} without a commit stamp)")


STATES = "every subscriber's final state equals GET state"


def states(result: LiveResult) -> Target:
    ok = result.mismatches == 0 and result.subscriptions > 0
    return Target(STATES, "0 mismatches",
                  f"{result.mismatches} of {result.subscriptions} at "
                  f"{result.config['rate']:,.0f} deltas/s", ok,
                  "; ".join(result.mismatch_examples) or
                  f"{result.chain_breaks} chain breaks, snapshots {result.snapshots}")


def memory(result: LiveResult) -> Target:
    mem = result.memory.summary()
    samples = [mb for _, mb in result.memory.samples]
    half = samples[len(samples) // 2:] or [0.0]
    growth = (half[-1] - half[0]) / half[0] if half[0] else 0.0
    return Target("API memory bounded (RSS over the run)",
                  f"second half grows <= {MAX_GROWTH:.0%}",
                  f"start {mem['start_mb']:.0f} MB, peak {mem['peak_mb']:.0f}, "
                  f"end {mem['end_mb']:.0f}", growth <= MAX_GROWTH,
                  f"second half {growth:+.1%} ({len(samples)} samples)")


def hub(result: LiveResult) -> Target:
    api = result.api_redis
    ok = api["pubsub_connections"] == result.config["api_workers"]
    return Target("one feed listener per API process", "1 Pub/Sub connection per process",
                  f"{api['pubsub_connections']} for {result.config['api_workers']} process(es)",
                  ok, f"API connections to Redis: {api['connections']} ({api['names']}); "
                      f"channels {api['pubsub_channels']}")
