"""The HTTP benchmark's parts: wrk runs, a paced generator, the stack, profiles, report."""
