"""Durability across a Redis failover, and the price of waiting for a replica."""
