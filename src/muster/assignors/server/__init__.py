"""Server-side partition assignors of the consumer group protocol (KIP-848):
the broker, not a member, computes the group's target assignment.

    registry.ASSIGNORS[name](members, partitions_per_topic)
        -> {member_id: {topic: [partition, ...]}}

`members` maps member id -> MemberSpec (subscribed topics, its partitions in
the current target assignment, instance id); `partitions_per_topic` maps
topic -> partition count. Subscribed topics missing from it are ignored (no
metadata yet), as Kafka's coordinator hands its assignor only topics it
knows. Names are Kafka's (`group.consumer.assignors`, the client's
`group.remote.assignor`): "uniform" (the default) and "range".

Pure functions over plain data: no I/O, no clock, deterministic (the same
input gives the same output whatever the order of the mappings).
"""
