// Kafka's own Java Admin client (`JavaAdmin BOOTSTRAP`), for test_java_client.py: one
// consumer-group call per stdin line, one JSON answer per stdout line:
//
//   list
//   describe GROUP
//   offsets GROUP
//   alter GROUP TOPIC PARTITION OFFSET
//   delete-offsets GROUP TOPIC PARTITION
//   delete GROUP
//
// answers {"ok": <result>} or {"error": "<exception class>", "message": ...} (the cause of
// the future's ExecutionException: what an application catches).
// Compiled and run by tools/kafka_java.py.

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.InputStreamReader;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

public class JavaAdmin {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (Admin admin = Admin.create(props)) {
            String line;
            while ((line = in.readLine()) != null) {
                ObjectNode reply = JSON.createObjectNode();
                try {
                    reply.set("ok", JSON.valueToTree(run(admin, line.trim().split(" "))));
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                    reply.put("error", cause.getClass().getName()).put("message", cause.getMessage());
                }
                out.println(reply.toString());
                out.flush();
            }
        }
    }

    static Object run(Admin admin, String[] args) throws Exception {
        String op = args[0];
        switch (op) {
            case "list": {
                ArrayNode groups = JSON.createArrayNode();
                for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) {
                    groups.addObject()
                        .put("group_id", g.groupId())
                        .put("state", g.groupState().map(Object::toString).orElse(null))
                        .put("type", g.type().map(Object::toString).orElse(null))
                        .put("simple", g.isSimpleConsumerGroup());
                }
                return groups;
            }
            case "describe": {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(args[1]))
                    .describedGroups().get(args[1]).get();
                ObjectNode g = JSON.createObjectNode()
                    .put("group_id", d.groupId())
                    .put("state", d.groupState().toString())
                    .put("type", d.type().toString())
                    .put("assignor", d.partitionAssignor())
                    .put("simple", d.isSimpleConsumerGroup())
                    .put("coordinator", d.coordinator().host() + ":" + d.coordinator().port());
                ArrayNode members = g.putArray("members");
                for (MemberDescription m : d.members()) {
                    ObjectNode mj = members.addObject()
                        .put("member_id", m.consumerId())
                        .put("instance_id", m.groupInstanceId().orElse(null))
                        .put("client_id", m.clientId())
                        .put("host", m.host());
                    ArrayNode parts = mj.putArray("assignment");
                    for (TopicPartition tp : m.assignment().topicPartitions()) {
                        parts.addArray().add(tp.topic()).add(tp.partition());
                    }
                }
                return g;
            }
            case "offsets": {
                Map<TopicPartition, OffsetAndMetadata> offsets =
                    admin.listConsumerGroupOffsets(args[1]).partitionsToOffsetAndMetadata().get();
                ArrayNode arr = JSON.createArrayNode();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    arr.addArray().add(e.getKey().topic()).add(e.getKey().partition())
                        .add(e.getValue() == null ? null : e.getValue().offset());
                }
                return arr;
            }
            case "alter": {
                TopicPartition tp = new TopicPartition(args[2], Integer.parseInt(args[3]));
                admin.alterConsumerGroupOffsets(args[1],
                    Map.of(tp, new OffsetAndMetadata(Long.parseLong(args[4])))).all().get();
                return "altered";
            }
            case "delete-offsets": {
                TopicPartition tp = new TopicPartition(args[2], Integer.parseInt(args[3]));
                admin.deleteConsumerGroupOffsets(args[1], Set.of(tp)).all().get();
                return "deleted";
            }
            case "delete": {
                admin.deleteConsumerGroups(List.of(args[1])).all().get();
                return "deleted";
            }
            default:
                throw new IllegalArgumentException("unknown operation " + op);
        }
    }
}
