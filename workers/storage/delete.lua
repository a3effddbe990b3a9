-- KEYS: dirty quarantine threads expiry
-- ARGV: tag ref reason
-- The thread's own keys are named from its ref (KEY, lifecycle.lua): forget() is the
-- one removal, shared with the TTL sweep and a prune.
return forget(ARGV[1], ARGV[2], ARGV[3], KEYS[1], KEYS[2], KEYS[3], KEYS[4])
