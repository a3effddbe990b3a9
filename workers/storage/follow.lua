-- A follower of the thread is here: its commits keep their change events in its feed
-- (for a follower that resumes) while this mark lasts, window_ms. A commit without it
-- only publishes its event: a thread nobody follows pays for no feed. The mark is the
-- thread id's, not an incarnation's: it outlives a delete, and lapses on its own.
-- KEYS: followed
-- ARGV: window_ms
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return 1
