import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Future;

/**
 * KafkaConsumer (classic eager range, classic cooperative-sticky, the consumer
 * protocol of KIP-848) and KafkaProducer (idempotent; transactional with
 * sendOffsetsToTransaction, read by read_committed and read_uncommitted
 * consumers) against one broker: `ClientChecks <bootstrap> <check>...`, each
 * check printing one JSON line of what it saw, the same on any correct broker.
 */
public class ClientChecks {
    static final ObjectMapper JSON = new ObjectMapper();
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        for (int i = 1; i < args.length; i++) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("check", args[i]);
            try {
                switch (args[i]) {
                    case "eager": group(out, "classic", "org.apache.kafka.clients.consumer.RangeAssignor"); break;
                    case "cooperative": group(out, "classic", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"); break;
                    case "consumer": group(out, "consumer", null); break;
                    case "idempotent": idempotent(out); break;
                    case "transactional": transactional(out); break;
                    default: throw new IllegalArgumentException(args[i]);
                }
            } catch (Exception e) {
                out.put("exception", e.toString());
            }
            System.out.println(JSON.writeValueAsString(out));
            System.out.flush();
        }
    }

    static Properties common() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static void createTopic(String name, int partitions) throws Exception {
        try (Admin admin = Admin.create(common())) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
        }
    }

    static KafkaProducer<String, String> producer(Properties extra) {
        Properties p = common();
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", "5");
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String group, String protocol, String assignor, Properties extra) {
        Properties p = common();
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        if (group != null) {
            p.put("group.id", group);
            p.put("group.protocol", protocol);
            if (assignor != null) p.put("partition.assignment.strategy", assignor);
            if (protocol.equals("classic")) {
                p.put("session.timeout.ms", "10000");
                p.put("heartbeat.interval.ms", "500");
            }
        }
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    static int produce(String topic, int n, String prefix) throws Exception {
        try (KafkaProducer<String, String> producer = producer(new Properties())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) sent.add(producer.send(new ProducerRecord<>(topic, "k" + i, prefix + i)));
            for (Future<RecordMetadata> f : sent) f.get();
        }
        return n;
    }

    /** What a member saw: its assignment after each rebalance, revocations. */
    static final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final List<String> events = new ArrayList<>();
        final Set<String> values = new HashSet<>();
        Member(String name, KafkaConsumer<String, String> consumer) { this.name = name; this.consumer = consumer; }
        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            if (!parts.isEmpty()) events.add("revoked:" + names(parts));
        }
        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            events.add("assigned:" + names(parts));
        }
        public void onPartitionsLost(Collection<TopicPartition> parts) {
            events.add("lost:" + names(parts));
        }
        void poll() {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
            for (ConsumerRecord<String, String> r : records) values.add(r.value());
            if (!records.isEmpty()) consumer.commitSync();
        }
    }

    static String names(Collection<TopicPartition> parts) {
        TreeSet<Integer> ids = new TreeSet<>();
        for (TopicPartition tp : parts) ids.add(tp.partition());
        return ids.toString().replace(" ", "");
    }

    /** Two members of one group over a 4-partition topic: the first alone gets
     * everything, the second joins, each ends with two partitions, together
     * they consume every record once the first has left. */
    static void group(Map<String, Object> out, String protocol, String assignor) throws Exception {
        String tag = out.get("check").toString();
        String topic = "clients-" + tag;
        String group = "clients-g-" + tag;
        createTopic(topic, 4);
        produce(topic, 100, "a");
        Member one = new Member("one", consumer(group, protocol, assignor, new Properties()));
        one.consumer.subscribe(List.of(topic), one);
        long deadline = System.currentTimeMillis() + 60000;
        while (one.consumer.assignment().size() < 4 && System.currentTimeMillis() < deadline) one.poll();
        out.put("one_alone", names(one.consumer.assignment()));
        Member two = new Member("two", consumer(group, protocol, assignor, new Properties()));
        two.consumer.subscribe(List.of(topic), two);
        deadline = System.currentTimeMillis() + 60000;
        boolean overlap = false;
        while (System.currentTimeMillis() < deadline) {
            one.poll();
            two.poll();
            Set<TopicPartition> both = new HashSet<>(one.consumer.assignment());
            both.retainAll(two.consumer.assignment());
            overlap |= !both.isEmpty();
            if (one.consumer.assignment().size() == 2 && two.consumer.assignment().size() == 2
                    && one.values.size() + two.values.size() >= 100) break;
        }
        out.put("overlap_seen", overlap);
        out.put("sizes_shared", List.of(one.consumer.assignment().size(), two.consumer.assignment().size()));
        Set<TopicPartition> union = new HashSet<>(one.consumer.assignment());
        union.addAll(two.consumer.assignment());
        out.put("union_shared", names(union));
        produce(topic, 100, "b");
        one.consumer.close();
        deadline = System.currentTimeMillis() + 60000;
        while (System.currentTimeMillis() < deadline) {
            two.poll();
            Set<String> all = new HashSet<>(one.values);
            all.addAll(two.values);
            if (two.consumer.assignment().size() == 4 && all.size() >= 200) break;
        }
        out.put("two_after_one_left", names(two.consumer.assignment()));
        Set<String> all = new HashSet<>(one.values);
        all.addAll(two.values);
        out.put("distinct_consumed", all.size());
        // an eager (range) member gives back everything on each rebalance, a
        // cooperative or consumer-protocol member only what moves
        boolean revokedAll = false;
        for (String e : one.events) if (e.equals("revoked:[0,1,2,3]")) revokedAll = true;
        out.put("one_revoked_all_on_join", revokedAll);
        two.consumer.commitSync();
        Map<TopicPartition, OffsetAndMetadata> committed = two.consumer.committed(new HashSet<>(two.consumer.assignment()));
        long sum = 0;
        for (OffsetAndMetadata o : committed.values()) if (o != null) sum += o.offset();
        out.put("committed_total", sum);
        out.put("group_protocol_metadata", two.consumer.groupMetadata().generationId() > 0);
        two.consumer.close();
    }

    static void idempotent(Map<String, Object> out) throws Exception {
        String topic = "clients-idempotent";
        createTopic(topic, 2);
        Properties p = new Properties();
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("max.in.flight.requests.per.connection", "5");
        int n = 2000;
        try (KafkaProducer<String, String> producer = producer(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < n; i++) sent.add(producer.send(new ProducerRecord<>(topic, i % 2, null, "v" + i)));
            Map<Integer, Long> last = new TreeMap<>();
            boolean ordered = true;
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata m = f.get();
                Long prev = last.put(m.partition(), m.offset());
                if (prev != null && m.offset() != prev + 1) ordered = false;
            }
            out.put("acked", sent.size());
            out.put("offsets_consecutive", ordered);
        }
        out.put("read_back", readAll(topic, "read_uncommitted", n).size());
    }

    static List<String> readAll(String topic, String isolation, int expect) {
        Properties p = new Properties();
        p.put("isolation.level", isolation);
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(null, null, null, p)) {
            List<TopicPartition> parts = new ArrayList<>();
            c.partitionsFor(topic).forEach(i -> parts.add(new TopicPartition(topic, i.partition())));
            c.assign(parts);
            c.seekToBeginning(parts);
            long deadline = System.currentTimeMillis() + 10000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) values.add(r.value());
                if (values.size() >= expect) {
                    // a little longer: nothing more must come
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) values.add(r.value());
                    break;
                }
            }
        }
        Collections.sort(values);
        return values;
    }

    /** Read from `in`, write to `out` in transactions with the consumer's
     * offsets (sendOffsetsToTransaction): one aborted, one committed. */
    static void transactional(Map<String, Object> out) throws Exception {
        String in = "clients-txn-in", outTopic = "clients-txn-out", group = "clients-txn-g";
        createTopic(in, 1);
        createTopic(outTopic, 2);
        produce(in, 10, "in");
        Properties p = new Properties();
        p.put("transactional.id", "clients-txn");
        p.put("transaction.timeout.ms", "30000");
        try (KafkaProducer<String, String> producer = producer(p);
             KafkaConsumer<String, String> consumer = consumer(group, "classic", null, new Properties() {{
                 put("isolation.level", "read_committed");
             }})) {
            producer.initTransactions();
            consumer.subscribe(List.of(in));
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 60000;
            while (got.size() < 10 && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(got::add);
            }
            out.put("input_read", got.size());
            Map<TopicPartition, OffsetAndMetadata> offsets = Map.of(new TopicPartition(in, 0), new OffsetAndMetadata(5));
            producer.beginTransaction();
            for (int i = 0; i < 5; i++) producer.send(new ProducerRecord<>(outTopic, "aborted" + i));
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            producer.flush();
            producer.abortTransaction();
            out.put("committed_after_abort", committedOffset(group, in));
            producer.beginTransaction();
            for (ConsumerRecord<String, String> r : got) producer.send(new ProducerRecord<>(outTopic, r.key(), "out-" + r.value()));
            producer.sendOffsetsToTransaction(Map.of(new TopicPartition(in, 0), new OffsetAndMetadata(10)), consumer.groupMetadata());
            producer.commitTransaction();
            out.put("committed_after_commit", committedOffset(group, in));
            // a second producer with the same id fences the first
            try (KafkaProducer<String, String> again = producer(p)) {
                again.initTransactions();
                try {
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>(outTopic, "zombie")).get();
                    producer.commitTransaction();
                    out.put("fenced", false);
                } catch (Exception e) {
                    out.put("fenced", e.getClass().getSimpleName() + "/" + (e.getCause() == null ? "" : e.getCause().getClass().getSimpleName()));
                }
            }
        }
        List<String> committed = readAll(outTopic, "read_committed", 10);
        List<String> uncommitted = readAll(outTopic, "read_uncommitted", 15);
        out.put("read_committed", committed.size());
        out.put("read_committed_all_out", committed.stream().allMatch(v -> v.startsWith("out-")));
        out.put("read_uncommitted", uncommitted.size());
    }

    static Object committedOffset(String group, String topic) throws Exception {
        try (Admin admin = Admin.create(common())) {
            OffsetAndMetadata o = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .get(new TopicPartition(topic, 0));
            return o == null ? null : o.offset();
        }
    }
}
