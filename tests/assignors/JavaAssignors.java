// Kafka's own assignors (kafka-clients), driven one group per line: the oracle of
// test_java_assignors.py. Compiled and run by tools/kafka_java.py.
//
// stdin, one JSON object per line:
//   {"assignor": "range" | "roundrobin" | "sticky" | "cooperative-sticky",
//    "topics": {"t0": 3, ...},
//    "members": {"m1": {"topics": ["t0"], "owned": [["t0", 1]], "generation": 4,
//                       "instance": "i1" or null}, ...}}
// stdout, one JSON object per line: {"assignment": {"m1": [["t0", 0], ...], ...}}, or
// {"error": "..."} when Kafka's assignor throws (the process keeps serving).
//
// Every case goes through ConsumerPartitionAssignor.assign(Cluster, GroupSubscription), what
// a Java group leader calls, with a fresh assignor and each member's subscription built the
// way a Java consumer builds it: owned partitions and generation in the subscription
// (v1+), and the user data that member's own assignor instance would send after being
// given "owned" at "generation" (StickyAssignor: its previous assignment and generation;
// CooperativeStickyAssignor: the generation).

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public class JavaAssignors {
    static final ObjectMapper JSON = new ObjectMapper();
    static final Node NODE = new Node(0, "127.0.0.1", 9092);

    static ConsumerPartitionAssignor assignor(String name) {
        switch (name) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    static Cluster cluster(JsonNode topics) {
        List<PartitionInfo> partitions = new ArrayList<>();
        Iterator<Map.Entry<String, JsonNode>> it = topics.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> topic = it.next();
            for (int p = 0; p < topic.getValue().asInt(); p++) {
                Node[] replicas = {NODE};
                partitions.add(new PartitionInfo(topic.getKey(), p, NODE, replicas, replicas));
            }
        }
        return new Cluster("oracle", List.of(NODE), partitions, Set.of(), Set.of());
    }

    static Subscription subscription(String name, String member, JsonNode spec) {
        List<String> topics = new ArrayList<>();
        spec.get("topics").forEach(t -> topics.add(t.asText()));
        List<TopicPartition> owned = new ArrayList<>();
        spec.get("owned").forEach(tp -> owned.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt())));
        int generation = spec.get("generation").asInt();
        Optional<String> instance = spec.hasNonNull("instance")
            ? Optional.of(spec.get("instance").asText()) : Optional.empty();
        ConsumerPartitionAssignor own = assignor(name);
        if (own instanceof StickyAssignor || own instanceof CooperativeStickyAssignor) {
            // what this member's assignor learnt when it was last given "owned"
            if (!owned.isEmpty() || generation >= 0) {
                own.onAssignment(new Assignment(owned),
                    new ConsumerGroupMetadata("oracle", generation, member, instance));
            }
        }
        ByteBuffer userData = own.subscriptionUserData(new HashSet<>(topics));
        // an eager (sticky) member revoked everything before joining: it sends no owned
        // partitions, its previous assignment travels in the user data
        List<TopicPartition> sent = own instanceof StickyAssignor ? List.of() : owned;
        Subscription sub = new Subscription(topics, userData, sent, generation, Optional.empty());
        sub.setGroupInstanceId(instance);
        return sub;
    }

    static ObjectNode answer(JsonNode request) {
        String name = request.get("assignor").asText();
        Map<String, Subscription> subs = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = request.get("members").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> m = it.next();
            subs.put(m.getKey(), subscription(name, m.getKey(), m.getValue()));
        }
        Map<String, Assignment> result = assignor(name)
            .assign(cluster(request.get("topics")), new GroupSubscription(subs))
            .groupAssignment();
        ObjectNode out = JSON.createObjectNode();
        ObjectNode assignment = out.putObject("assignment");
        for (Map.Entry<String, Assignment> e : result.entrySet()) {
            ArrayNode parts = assignment.putArray(e.getKey());
            for (TopicPartition tp : e.getValue().partitions()) {
                parts.addArray().add(tp.topic()).add(tp.partition());
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        // stdout carries the answers only: Kafka's log lines (log4j's default console
        // appender, e.g. AbstractStickyAssignor's ERROR on contested claims) go to stderr
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode reply;
            try {
                reply = answer(JSON.readTree(line));
            } catch (Exception e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                reply = JSON.createObjectNode().put("error", trace.toString());
            }
            out.println(JSON.writeValueAsString(reply));
            out.flush();
        }
    }
}
