import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * An explicit KafkaShareConsumer (KIP-932, kafka-clients 4.4) around a
 * broker crash: `ShareCrash <bootstrap> <topic> <group> hold <n>` sets the
 * group's `share.auto.offset.reset` to earliest, accepts
 * records and commits them until `n` are accepted, prints one JSON line
 * (the values whose acceptance the broker answered, and the values it still
 * holds unacknowledged), then keeps its locks until it is killed;
 * `ShareCrash <bootstrap> <topic> <group> drain <n>` accepts everything it
 * gets until `n` records came or 15 s pass with none, and prints the
 * values with their delivery counts.
 */
public class ShareCrash {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], mode = args[3];
        int n = Integer.parseInt(args[4]);
        if (mode.equals("hold")) {  // the group reads from the start
            Properties ap = new Properties();
            ap.put("bootstrap.servers", bootstrap);
            try (Admin admin = Admin.create(ap)) {
                ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
                AlterConfigOp op = new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
                admin.incrementalAlterConfigs(Map.of(res, List.of(op))).all().get();
            }
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        KafkaShareConsumer<String, String> c =
            new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
        c.subscribe(List.of(topic));
        Map<String, Object> out = new LinkedHashMap<>();
        List<String> accepted = new ArrayList<>();
        List<String> held = new ArrayList<>();
        List<List<Object>> drained = new ArrayList<>();
        long idleSince = System.currentTimeMillis();
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            List<String> batch = new ArrayList<>();
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                if (mode.equals("hold") && accepted.size() + batch.size() >= n) {
                    held.add(r.value());  // left unacknowledged: locked to us
                    continue;
                }
                c.acknowledge(r, AcknowledgeType.ACCEPT);
                batch.add(r.value());
                drained.add(List.of(r.value(), r.deliveryCount().map(Short::intValue).orElse(-1)));
            }
            if (!batch.isEmpty()) {
                idleSince = System.currentTimeMillis();
                Map<TopicIdPartition, Optional<org.apache.kafka.common.KafkaException>> done =
                    c.commitSync();
                if (done.values().stream().allMatch(Optional::isEmpty)) {
                    accepted.addAll(batch);
                } else {
                    out.put("commit_failed", done.toString());
                }
            }
            if (mode.equals("hold") && accepted.size() >= n && !held.isEmpty()) {
                break;
            }
            if (mode.equals("drain")
                && (drained.size() >= n || System.currentTimeMillis() - idleSince > 15_000)) {
                break;
            }
        }
        out.put("accepted", accepted);
        out.put("held", held);
        out.put("drained", drained);
        System.out.println(JSON.writeValueAsString(out));
        System.out.flush();
        if (mode.equals("hold")) {
            Thread.sleep(600_000);  // keep the locks: the test kills the broker, then us
        }
        c.close();
        System.exit(0);
    }
}
