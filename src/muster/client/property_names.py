"""The client property names a user may pass with `-X key=value` or in a
`--command-config FILE`: librdkafka's (its CONFIGURATION.md, 2.16) and the Java
client's, so a misspelt one gets a "did you mean" from the names users know."""

from __future__ import annotations

# librdkafka's settable properties (global and topic), as
# rd_kafka_conf_properties_show() lists them; its callbacks (dr_cb, ...) are left
# out: they are not names a file or -X can set.
LIBRDKAFKA = frozenset(
    """
    acks allow.auto.create.topics api.version.fallback.ms api.version.request
    api.version.request.timeout.ms auto.commit.enable auto.commit.interval.ms
    auto.offset.reset batch.num.messages batch.size bootstrap.servers
    broker.address.family broker.address.ttl broker.version.fallback
    builtin.features check.crcs client.dns.lookup client.id client.rack
    compression.codec compression.level compression.type connections.max.idle.ms
    consume.callback.max.messages coordinator.query.interval.ms debug
    delivery.report.only.error delivery.timeout.ms enable.auto.commit
    enable.auto.offset.store enable.gapless.guarantee enable.idempotence
    enable.metrics.push enable.partition.eof enable.random.seed
    enable.sasl.oauthbearer.unsecure.jwt enable.ssl.certificate.verification
    fetch.error.backoff.ms fetch.max.bytes fetch.message.max.bytes fetch.min.bytes
    fetch.queue.backoff.ms fetch.wait.max.ms group.id group.instance.id
    group.protocol group.protocol.type group.remote.assignor heartbeat.interval.ms
    https.ca.location https.ca.pem interceptors internal.termination.signal
    isolation.level linger.ms log.connection.close log.queue log.thread.name
    max.in.flight max.in.flight.requests.per.connection max.partition.fetch.bytes
    max.poll.interval.ms max.poll.records message.copy.max.bytes message.max.bytes
    message.send.max.retries message.timeout.ms metadata.broker.list
    metadata.max.age.ms metadata.recovery.rebootstrap.trigger.ms
    metadata.recovery.strategy offset.store.method offset.store.path
    offset.store.sync.interval.ms opaque partition.assignment.strategy partitioner
    plugin.library.paths produce.offset.report
    queue.buffering.backpressure.threshold queue.buffering.max.kbytes
    queue.buffering.max.messages queue.buffering.max.ms queued.max.messages.kbytes
    queued.min.messages queuing.strategy receive.message.max.bytes
    reconnect.backoff.jitter.ms reconnect.backoff.max.ms reconnect.backoff.ms
    request.required.acks request.timeout.ms retries retry.backoff.max.ms
    retry.backoff.ms sasl.kerberos.keytab sasl.kerberos.kinit.cmd
    sasl.kerberos.min.time.before.relogin sasl.kerberos.principal
    sasl.kerberos.service.name sasl.mechanism sasl.mechanisms
    sasl.oauthbearer.assertion.algorithm sasl.oauthbearer.assertion.claim.aud
    sasl.oauthbearer.assertion.claim.exp.seconds
    sasl.oauthbearer.assertion.claim.iss
    sasl.oauthbearer.assertion.claim.jti.include
    sasl.oauthbearer.assertion.claim.nbf.seconds
    sasl.oauthbearer.assertion.claim.sub sasl.oauthbearer.assertion.file
    sasl.oauthbearer.assertion.jwt.template.file
    sasl.oauthbearer.assertion.private.key.file
    sasl.oauthbearer.assertion.private.key.passphrase
    sasl.oauthbearer.assertion.private.key.pem
    sasl.oauthbearer.client.credentials.client.id
    sasl.oauthbearer.client.credentials.client.secret sasl.oauthbearer.client.id
    sasl.oauthbearer.client.secret sasl.oauthbearer.config
    sasl.oauthbearer.extensions sasl.oauthbearer.grant.type
    sasl.oauthbearer.metadata.authentication.type sasl.oauthbearer.method
    sasl.oauthbearer.scope sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url sasl.password sasl.username
    security.protocol session.timeout.ms share.acknowledgement.mode
    socket.blocking.max.ms socket.connection.setup.timeout.ms
    socket.keepalive.enable socket.max.fails socket.nagle.disable
    socket.receive.buffer.bytes socket.send.buffer.bytes socket.timeout.ms
    ssl.ca.certificate.stores ssl.ca.location ssl.ca.pem ssl.certificate.location
    ssl.certificate.pem ssl.cipher.suites ssl.crl.location ssl.curves.list
    ssl.endpoint.identification.algorithm ssl.engine.id ssl.engine.location
    ssl.key.location ssl.key.password ssl.key.pem ssl.keystore.location
    ssl.keystore.password ssl.providers ssl.sigalgs.list statistics.interval.ms
    sticky.partitioning.linger.ms topic.blacklist topic.metadata.propagation.max.ms
    topic.metadata.refresh.fast.cnt topic.metadata.refresh.fast.interval.ms
    topic.metadata.refresh.interval.ms topic.metadata.refresh.sparse
    transaction.timeout.ms transactional.id
""".split()
)

# The Java client's names that librdkafka lacks, which Kafka's tools read from a
# --command-config file (ssl.truststore.*, sasl.jaas.config, serializers, ...).
JAVA = frozenset(
    """
    auto.include.jmx.reporter bootstrap.controllers buffer.memory
    default.api.timeout.ms exclude.internal.topics fetch.max.wait.ms
    interceptor.classes internal.leave.group.on.close key.deserializer
    key.serializer max.block.ms max.request.size metadata.max.idle.ms
    metric.reporters metrics.num.samples metrics.recording.level
    metrics.sample.window.ms partitioner.class receive.buffer.bytes
    sasl.client.callback.handler.class sasl.jaas.config
    sasl.login.callback.handler.class sasl.login.class security.providers
    send.buffer.bytes socket.connection.setup.timeout.max.ms ssl.enabled.protocols
    ssl.engine.factory.class ssl.keymanager.algorithm ssl.keystore.certificate.chain
    ssl.keystore.key ssl.keystore.type ssl.protocol ssl.provider
    ssl.secure.random.implementation ssl.trustmanager.algorithm
    ssl.truststore.certificates ssl.truststore.location ssl.truststore.password
    ssl.truststore.type value.deserializer value.serializer
""".split()
)

CLIENT_PROPERTIES = LIBRDKAFKA | JAVA
