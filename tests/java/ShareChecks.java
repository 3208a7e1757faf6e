import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;

/**
 * KafkaShareConsumer (KIP-932, kafka-clients 4.4) against one broker:
 * `ShareChecks <bootstrap>`, printing one JSON line of what it saw, the same
 * on any correct broker. Two share consumers in one group read a 2-partition
 * topic with implicit acknowledgement (every record once); then an explicit
 * consumer releases one record and accepts the rest: the released record
 * comes back with delivery count 2, nothing accepted comes back.
 */
public class ShareChecks {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Map<String, Object> out = new LinkedHashMap<>();
        try {
            run(bootstrap, out);
        } catch (Exception e) {
            out.put("exception", e.toString());
        }
        System.out.println(JSON.writeValueAsString(out));
        System.out.flush();
        System.exit(0);
    }

    static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, boolean explicit) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        if (explicit) {
            p.put("share.acknowledgement.mode", "explicit");
        }
        return new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    static void earliest(Admin admin, String group) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        AlterConfigOp op = new AlterConfigOp(
            new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
        Map<ConfigResource, Collection<AlterConfigOp>> ops = new HashMap<>();
        ops.put(res, List.of(op));
        admin.incrementalAlterConfigs(ops).all().get();
    }

    static void run(String bootstrap, Map<String, Object> out) throws Exception {
        String topic = "share-" + UUID.randomUUID();
        String implicitGroup = "share-implicit-" + UUID.randomUUID();
        String explicitGroup = "share-explicit-" + UUID.randomUUID();
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
            earliest(admin, implicitGroup);
            earliest(admin, explicitGroup);
        }
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        try (KafkaProducer<String, String> producer =
                 new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 100; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, Integer.toString(i)));
            }
            producer.flush();
        }

        // two implicit consumers: every record exactly once between them
        Set<String> seen = new HashSet<>();
        int deliveries = 0;
        try (KafkaShareConsumer<String, String> a = consumer(bootstrap, implicitGroup, false);
             KafkaShareConsumer<String, String> b = consumer(bootstrap, implicitGroup, false)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (seen.size() < 100 && System.currentTimeMillis() < deadline) {
                for (KafkaShareConsumer<String, String> c : List.of(a, b)) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        seen.add(r.value());
                        deliveries++;
                    }
                }
            }
        }
        out.put("implicit_distinct", seen.size());
        out.put("implicit_deliveries", deliveries);

        // explicit: release one record (its first delivery), accept everything
        // else; the released record comes back (when is the broker's choice)
        try (KafkaShareConsumer<String, String> c = consumer(bootstrap, explicitGroup, true)) {
            c.subscribe(List.of(topic));
            String released = null;
            Set<String> accepted = new HashSet<>();
            List<Integer> releasedCounts = new java.util.ArrayList<>();
            int otherDeliveries = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (accepted.size() < 100 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    if (released == null) {
                        released = r.value();
                    }
                    if (r.value().equals(released)) {
                        releasedCounts.add(r.deliveryCount().map(Short::intValue).orElse(-1));
                    } else {
                        otherDeliveries++;
                    }
                    if (r.value().equals(released) && releasedCounts.size() == 1) {
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                    } else {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        accepted.add(r.value());
                    }
                }
                c.commitSync();
            }
            out.put("explicit_accepted", accepted.size());
            out.put("other_deliveries", otherDeliveries);
            out.put("released_delivery_counts", releasedCounts);
        }
    }
}
