"""Scale-out on Redis Cluster, a hot thread, a flooding tenant, and the capacity model
built from what they measure (issue 25, items 1 and 2)."""
