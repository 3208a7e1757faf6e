import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.resource.*;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.*;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;

/**
 * One Admin client's calls against one broker: `AdminChecks <bootstrap>`, each
 * call printing {"call", "result"} or {"call", "error": exception class,
 * "message"}; results hold what any correct single-node broker answers alike
 * (no ids, addresses or timestamps).
 */
public class AdminChecks {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String T = "admin-t", G = "admin-g", TXN = "admin-txn";

    interface Call { Object run() throws Exception; }

    static void check(String name, Call call) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("call", name);
        try {
            out.put("result", call.run());
        } catch (Exception e) {
            Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            out.put("error", t.getClass().getSimpleName());
            out.put("message", String.valueOf(t.getMessage()));
        }
        System.out.println(JSON.writeValueAsString(out));
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            admin.createTopics(List.of(new NewTopic(T, 2, (short) 1))).all().get();
            Properties pp = new Properties();
            pp.putAll(p);
            pp.put("key.serializer", StringSerializer.class.getName());
            pp.put("value.serializer", StringSerializer.class.getName());
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
                for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(T, i % 2, "k", "v" + i)).get();
            }
            // a static member that commits and leaves without LeaveGroup
            Properties cp = new Properties();
            cp.putAll(p);
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            cp.put("group.id", G);
            cp.put("group.instance.id", "static-1");
            cp.put("auto.offset.reset", "earliest");
            cp.put("enable.auto.commit", "false");
            cp.put("session.timeout.ms", "60000");
            KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
            consumer.subscribe(List.of(T));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 30000;
            while (seen < 10 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> r = consumer.poll(Duration.ofMillis(200));
                seen += r.count();
            }
            consumer.commitSync();
            // an open transaction for listTransactions / describeTransactions / describeProducers
            Properties tp = new Properties();
            tp.putAll(pp);
            tp.put("transactional.id", TXN);
            KafkaProducer<String, String> txn = new KafkaProducer<>(tp);
            txn.initTransactions();
            txn.beginTransaction();
            txn.send(new ProducerRecord<>(T, 0, "k", "in-txn")).get();

            check("describeCluster", () -> {
                DescribeClusterResult r = admin.describeCluster();
                return Map.of("nodes", r.nodes().get().size(), "controller", r.controller().get() != null,
                        "clusterId", r.clusterId().get() != null);
            });
            check("describeTopics", () -> {
                TopicDescription d = admin.describeTopics(List.of(T)).allTopicNames().get().get(T);
                List<Object> parts = new ArrayList<>();
                d.partitions().forEach(i -> parts.add(List.of(i.partition(), i.replicas().size(), i.isr().size(), i.leader() != null)));
                return Map.of("name", d.name(), "internal", d.isInternal(), "partitions", parts);
            });
            // Admin 4.x describes topics with DescribeTopicPartitions: one partition
            // per answer makes it follow the broker's cursor through the topic
            check("describeTopics-paged", () -> {
                TopicDescription d = admin.describeTopics(List.of(T),
                        new DescribeTopicsOptions().partitionSizeLimitPerResponse(1)).allTopicNames().get().get(T);
                List<Object> parts = new ArrayList<>();
                d.partitions().forEach(i -> parts.add(List.of(i.partition(), i.replicas().size(), i.isr().size(),
                        i.leader() != null, i.elr() == null ? "null" : i.elr().toString())));
                return Map.of("name", d.name(), "partitions", parts, "topicId", d.topicId() != null);
            });
            check("describeTopics-nosuch", () -> admin.describeTopics(List.of("nosuch")).allTopicNames().get().keySet());
            check("describeConfigs-topic", () -> {
                Config c = admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, T))).all().get()
                        .values().iterator().next();
                Map<String, Object> m = new TreeMap<>();
                for (String k : List.of("cleanup.policy", "retention.ms", "segment.bytes", "max.message.bytes", "min.insync.replicas")) {
                    ConfigEntry e = c.get(k);
                    m.put(k, e == null ? null : e.value() + "/" + e.source());
                }
                return m;
            });
            check("describeConfigs-broker", () -> {
                String id = String.valueOf(admin.describeCluster().nodes().get().iterator().next().id());
                Config c = admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.BROKER, id))).all().get()
                        .values().iterator().next();
                Map<String, Object> m = new TreeMap<>();
                for (String k : List.of("num.partitions", "auto.create.topics.enable", "log.retention.hours", "message.max.bytes")) {
                    ConfigEntry e = c.get(k);
                    m.put(k, e == null ? null : e.value());
                }
                return m;
            });
            check("listGroups-types", () -> {
                Map<String, Object> m = new TreeMap<>();
                for (GroupListing g : admin.listGroups().all().get()) {
                    if (g.groupId().startsWith("admin-"))
                        m.put(g.groupId(), g.type().map(Object::toString).orElse("?") + "/" + g.protocol()
                                + "/" + g.groupState().map(Object::toString).orElse("?"));
                }
                return m;
            });
            check("listConsumerGroups-classic", () -> {
                List<String> ids = new ArrayList<>();
                for (GroupListing g : admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get())
                    if (g.groupId().startsWith("admin-")) ids.add(g.groupId());
                Collections.sort(ids);
                return ids;
            });
            check("describeConsumerGroups", () -> {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(G)).all().get().get(G);
                List<Object> members = new ArrayList<>();
                for (MemberDescription md : d.members())
                    members.add(md.groupInstanceId().orElse("-") + ":" + md.assignment().topicPartitions().size());
                return Map.of("state", d.groupState().toString(), "type", d.type().toString(),
                        "assignor", d.partitionAssignor(), "members", members, "simple", d.isSimpleConsumerGroup());
            });
            check("describeConsumerGroups-nosuch", () -> admin.describeConsumerGroups(List.of("admin-nosuch")).all().get()
                    .get("admin-nosuch").groupState().toString());
            check("listConsumerGroupOffsets", () -> offsets(admin, G));
            check("removeMembersFromConsumerGroup", () -> {
                consumer.close(org.apache.kafka.clients.consumer.CloseOptions.groupMembershipOperation(
                        org.apache.kafka.clients.consumer.CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP));
                admin.removeMembersFromConsumerGroup(G, new RemoveMembersFromConsumerGroupOptions(
                        List.of(new MemberToRemove("static-1")))).all().get();
                return admin.describeConsumerGroups(List.of(G)).all().get().get(G).groupState().toString();
            });
            check("removeMembers-unknown", () -> {
                admin.removeMembersFromConsumerGroup(G, new RemoveMembersFromConsumerGroupOptions(
                        List.of(new MemberToRemove("nobody")))).all().get();
                return "removed";
            });
            check("alterConsumerGroupOffsets", () -> {
                admin.alterConsumerGroupOffsets(G, Map.of(new TopicPartition(T, 0), new OffsetAndMetadata(1, "meta"))).all().get();
                return offsets(admin, G);
            });
            check("deleteConsumerGroupOffsets", () -> {
                admin.deleteConsumerGroupOffsets(G, Set.of(new TopicPartition(T, 1))).all().get();
                return offsets(admin, G);
            });
            check("deleteConsumerGroups", () -> {
                admin.deleteConsumerGroups(List.of(G)).all().get();
                return admin.listGroups().all().get().stream().anyMatch(g -> g.groupId().equals(G));
            });
            check("deleteConsumerGroups-nosuch", () -> {
                admin.deleteConsumerGroups(List.of("admin-nosuch")).all().get();
                return "deleted";
            });
            check("describeLogDirs", () -> {
                int id = admin.describeCluster().nodes().get().iterator().next().id();
                Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(id)).allDescriptions().get().get(id);
                int partitions = 0;
                for (LogDirDescription d : dirs.values())
                    for (TopicPartition part : d.replicaInfos().keySet()) if (part.topic().equals(T)) partitions++;
                return Map.of("dirs", dirs.size(), "admin_t_partitions", partitions);
            });
            check("describeProducers", () -> {
                List<Object> out = new ArrayList<>();
                for (ProducerState s : admin.describeProducers(List.of(new TopicPartition(T, 0))).all().get()
                        .get(new TopicPartition(T, 0)).activeProducers())
                    out.add(Map.of("epoch", s.producerEpoch(), "txnOpen", s.currentTransactionStartOffset().isPresent()));
                return out;
            });
            check("listTransactions", () -> {
                List<Object> out = new ArrayList<>();
                for (TransactionListing l : admin.listTransactions().all().get())
                    if (l.transactionalId().equals(TXN)) out.add(l.state().toString());
                return out;
            });
            check("describeTransactions", () -> {
                TransactionDescription d = admin.describeTransactions(List.of(TXN)).all().get().get(TXN);
                return Map.of("state", d.state().toString(), "topicPartitions", d.topicPartitions().toString());
            });
            check("describeTransactions-nosuch", () -> admin.describeTransactions(List.of("nosuch")).all().get().toString());
            txn.abortTransaction();
            txn.close();
            AclBinding binding = new AclBinding(new ResourcePattern(ResourceType.TOPIC, T, PatternType.LITERAL),
                    new AccessControlEntry("User:carol", "*", AclOperation.READ, AclPermissionType.ALLOW));
            check("createAcls", () -> { admin.createAcls(List.of(binding)).all().get(); return "created"; });
            check("describeAcls", () -> admin.describeAcls(new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, T, PatternType.ANY), AccessControlEntryFilter.ANY)).values().get().toString());
            check("deleteAcls", () -> admin.deleteAcls(List.of(binding.toFilter())).all().get().size());
            check("alterUserScramCredentials", () -> {
                admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("dave",
                        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "dave-pw"))).all().get();
                return "altered";
            });
            check("describeUserScramCredentials", () -> {
                UserScramCredentialsDescription d = admin.describeUserScramCredentials(List.of("dave")).all().get().get("dave");
                return d.credentialInfos().toString();
            });
            check("describeUserScramCredentials-nosuch", () -> admin.describeUserScramCredentials(List.of("nobody")).all().get().toString());
            check("describeFeatures", () -> {
                FeatureMetadata f = admin.describeFeatures().featureMetadata().get();
                return new TreeSet<>(f.finalizedFeatures().keySet());
            });
            check("describeClientQuotas", () -> admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get().toString());
            check("alterClientQuotas", () -> {
                ClientQuotaEntity user = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, "quota-u"));
                Map<String, String> dflt = new HashMap<>();
                dflt.put(ClientQuotaEntity.CLIENT_ID, null);
                ClientQuotaEntity clients = new ClientQuotaEntity(dflt);
                admin.alterClientQuotas(List.of(
                        new ClientQuotaAlteration(user, List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0))),
                        new ClientQuotaAlteration(clients, List.of(new ClientQuotaAlteration.Op("consumer_byte_rate", 2048.0)))
                )).all().get();
                return "ok";
            });
            check("alterClientQuotas-refused", () -> {
                ClientQuotaEntity c = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "quota-c"));
                admin.alterClientQuotas(List.of(new ClientQuotaAlteration(c,
                        List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1.5))))).all().get();
                return "accepted";
            });
            check("describeClientQuotas-after", () -> {
                // Kafka applies an alteration through its controller: read until it shows
                ClientQuotaFilter users = ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofEntityType(ClientQuotaEntity.USER)));
                long until = System.currentTimeMillis() + 15000;
                Map<ClientQuotaEntity, Map<String, Double>> got = Map.of();
                while (System.currentTimeMillis() < until) {
                    got = admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get();
                    if (got.size() >= 2) break;
                    Thread.sleep(100);
                }
                Map<String, Object> m = new TreeMap<>();
                got.forEach((e, v) -> m.put(e.entries().toString(), new TreeMap<>(v)));
                m.put("users-only", admin.describeClientQuotas(users).entities().get().keySet().toString());
                return m;
            });
            check("alterClientQuotas-remove", () -> {
                ClientQuotaEntity user = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, "quota-u"));
                admin.alterClientQuotas(List.of(new ClientQuotaAlteration(user,
                        List.of(new ClientQuotaAlteration.Op("producer_byte_rate", null))))).all().get();
                long until = System.currentTimeMillis() + 15000;
                Map<ClientQuotaEntity, Map<String, Double>> got = Map.of();
                while (System.currentTimeMillis() < until) {
                    got = admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get();
                    if (got.size() < 2) break;
                    Thread.sleep(100);
                }
                return got.keySet().toString();
            });
            // DescribeQuorum through the broker: a one-node quorum that this node leads
            check("describeMetadataQuorum", () -> {
                QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get();
                List<Integer> voters = new ArrayList<>();
                q.voters().forEach(v -> voters.add(v.replicaId() == q.leaderId() ? -1 : v.replicaId()));
                return Map.of("voters(-1=leader)", voters, "observers", q.observers().size(),
                        "leaderEpochPositive", q.leaderEpoch() > 0, "nodes", q.nodes().size());
            });
            check("listPartitionReassignments", () -> admin.listPartitionReassignments().reassignments().get().toString());
            check("electLeaders-preferred", () -> admin.electLeaders(ElectionType.PREFERRED, Set.of(new TopicPartition(T, 0)))
                    .partitions().get().toString());
            check("electLeaders-unclean", () -> admin.electLeaders(ElectionType.UNCLEAN, Set.of(new TopicPartition(T, 0)))
                    .partitions().get().toString());
        }
    }

    static Map<String, Object> offsets(Admin admin, String group) throws Exception {
        Map<String, Object> m = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get().entrySet())
            m.put(e.getKey().toString(), e.getValue() == null ? null : e.getValue().offset() + "/" + e.getValue().metadata());
        return m;
    }
}
