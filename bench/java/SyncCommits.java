// Sync commits in a loop with Kafka's own Java consumer (kafka-clients 4.4.0),
// the Java row of bench/kafka_compare.py's commit figures (as groups.py's
// confluent-kafka and kafka-python loops: assign mode, a new offset each time).
//
//   java -cp <kafka lib>/*:<classes> SyncCommits BOOTSTRAP TOPIC SECONDS WARMUP_SECONDS
//
// Prints "<commits> <elapsed seconds>" of the timed loop (after an untimed
// warm-up loop of the same kind, so the JIT has compiled the client).
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

public class SyncCommits {
    public static void main(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        long timed = (long) (Double.parseDouble(args[2]) * 1e9);
        long warm = (long) (Double.parseDouble(args[3]) * 1e9);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", "bench-java-" + UUID.randomUUID());
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            long n = 0;
            long end = System.nanoTime() + warm;
            do {
                n++;
                c.commitSync(Map.of(tp, new OffsetAndMetadata(n)));
            } while (System.nanoTime() < end);
            long k = 0;
            long t0 = System.nanoTime();
            end = t0 + timed;
            long now;
            while (true) {
                n++;
                k++;
                c.commitSync(Map.of(tp, new OffsetAndMetadata(n)));
                now = System.nanoTime();
                if (now >= end) break;
            }
            long got = c.committed(Set.of(tp)).get(tp).offset();
            if (got != n) {
                System.err.println("committed offset reads back " + got + ", expected " + n);
                System.exit(2);
            }
            System.out.printf("%d %.6f%n", k, (now - t0) / 1e9);
        }
    }
}
