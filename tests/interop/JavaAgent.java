// Consumer agent running Kafka's own Java KafkaConsumer (classic or KIP-848 "consumer" group
// protocol, settings' group_protocol), for the
// interop scenarios: the same protocol as agent_common.py (settings JSON in args[0];
// events as JSON lines on stdout: started, generation, assigned / revoked / lost, records,
// committed, error, closed; commands on stdin: commit, committed, close). "committed"
// answers with consumer.committed(assignment()) as {"ev": "offsets", "offsets": [[t, p, o]]}.
// Compiled and run by tools/kafka_java.py.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class JavaAgent {
    static final ObjectMapper JSON = new ObjectMapper();
    static final Comparator<TopicPartition> ORDER =
        Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);
    static PrintStream out;
    static final Set<TopicPartition> owned = new TreeSet<>(ORDER);

    static synchronized void emit(String ev, ObjectNode fields) {
        ObjectNode line = JSON.createObjectNode();
        line.put("ev", ev);
        // CLOCK_MONOTONIC, as Python's time.monotonic(): events of several agents compare
        line.put("t", System.nanoTime() / 1e9);
        line.setAll(fields);
        out.println(line.toString());
        out.flush();
    }

    static ArrayNode partitions(Collection<TopicPartition> tps) {
        ArrayNode arr = JSON.createArrayNode();
        List<TopicPartition> sorted = new ArrayList<>(tps);
        sorted.sort(ORDER);
        for (TopicPartition tp : sorted) arr.addArray().add(tp.topic()).add(tp.partition());
        return arr;
    }

    public static void main(String[] args) throws Exception {
        // stdout carries events only: the client's log lines go to stderr
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        JsonNode settings = JSON.readTree(args[0]);
        String assignor = settings.get("assignor").asText();
        // KIP-848 (group.protocol=consumer): the coordinator assigns, incrementally
        boolean kip848 = settings.hasNonNull("group_protocol")
            && settings.get("group_protocol").asText().equals("consumer");
        boolean eager = !kip848 && !assignor.contains("cooperative");
        Map<String, String> classes = Map.of(
            "range", RangeAssignor.class.getName(),
            "roundrobin", RoundRobinAssignor.class.getName(),
            "cooperative-sticky", CooperativeStickyAssignor.class.getName());
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, settings.get("bootstrap").asText());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, settings.get("group").asText());
        if (kip848) {
            // the classic settings are refused with this protocol: the coordinator owns them
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            props.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
        } else {
            if (!classes.containsKey(assignor)) throw new IllegalArgumentException("assignor " + assignor);
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, classes.get(assignor));
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, settings.get("session_timeout_ms").asText());
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, settings.get("heartbeat_interval_ms").asText());
        }
        props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, settings.get("max_poll_interval_ms").asText());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, settings.get("auto_commit").asText());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        if (settings.hasNonNull("instance_id")) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, settings.get("instance_id").asText());
        }
        boolean reportRecords = settings.get("report_records").asBoolean();
        List<String> topics = new ArrayList<>();
        settings.get("topics").forEach(t -> topics.add(t.asText()));

        // commands are run by the poll loop: KafkaConsumer is not safe to call from two threads
        LinkedBlockingQueue<String> inbox = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) inbox.add(line.trim());
            } catch (Exception e) {
                // end of stdin below
            }
            inbox.add("close");  // end of stdin: the test went away
        }, "agent-stdin");
        reader.setDaemon(true);
        reader.start();

        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        consumer.subscribe(topics, new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                moved("revoked", revoked);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> lost) {
                moved("lost", lost);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                if (eager) owned.clear();
                owned.addAll(assigned);
                ObjectNode f = JSON.createObjectNode();
                f.set("added", partitions(assigned));
                f.set("owned", partitions(owned));
                f.put("gen", consumer.groupMetadata().generationId());
                emit("assigned", f);
            }

            void moved(String kind, Collection<TopicPartition> removed) {
                owned.removeAll(removed);
                ObjectNode f = JSON.createObjectNode();
                f.set("removed", partitions(removed));
                f.set("owned", partitions(owned));
                emit(kind, f);
            }
        });
        emit("started", JSON.createObjectNode());
        int generation = -1;
        while (true) {
            // a rebalance that changes nothing for this member calls no listener: report
            // every generation, so tests can tell "no rebalance" from "no change"
            int now = consumer.groupMetadata().generationId();
            if (now != generation) {
                generation = now;
                emit("generation", JSON.createObjectNode().put("gen", generation));
            }
            String command = inbox.poll();
            try {
                if ("close".equals(command)) {
                    consumer.close();
                    emit("closed", JSON.createObjectNode());
                    return;
                } else if ("commit".equals(command)) {
                    consumer.commitSync();
                    emit("committed", JSON.createObjectNode());
                } else if ("committed".equals(command)) {
                    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(consumer.assignment());
                    ArrayNode offsets = JSON.createArrayNode();
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
                        if (e.getValue() != null) {
                            offsets.addArray().add(e.getKey().topic()).add(e.getKey().partition()).add(e.getValue().offset());
                        }
                    }
                    ObjectNode f = JSON.createObjectNode();
                    f.set("offsets", offsets);
                    emit("offsets", f);
                }
            } catch (Exception e) {
                emit("error", JSON.createObjectNode().put("msg", e.toString()));
            }
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
            if (reportRecords && !records.isEmpty()) {
                ArrayNode recs = JSON.createArrayNode();
                for (ConsumerRecord<String, String> r : records) {
                    recs.addArray().add(r.topic()).add(r.partition()).add(r.offset()).add(r.key());
                }
                ObjectNode f = JSON.createObjectNode();
                f.set("recs", recs);
                emit("records", f);
            }
        }
    }
}
