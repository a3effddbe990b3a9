"""Redis I/O: clients, script calls, pipelining, bulks in flight, the memory policy."""
