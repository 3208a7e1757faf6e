"""The names of the internal topics the coordinator's records go to.

A module of its own so the broker's start and the Metadata handler can name
them without importing the events module (its dataclasses and causes cost
about 10 ms, which a start that only creates the topics has no use for)."""

# The internal topic the broker's runtime writes the rebalance events to (one
# partition, keyed by group id).
EVENTS_TOPIC = "__muster_group_events"
