// Times Kafka's own server-side assignors (org.apache.kafka:kafka-group-coordinator) on the
// shapes of tools/server_assignor_bench.py, for the side-by-side table in
// benches/results/assignors.md. Compiled and run by that script (javac against the jars
// Maven resolved; see tools/kafka_broker.py's classpath()).
//
// Usage: ServerAssignorBench ASSIGNOR MEMBERS TOPICS PARTITIONS_PER_TOPIC BUCKETS WARMUP RUNS
//   ASSIGNOR   uniform | range
//   BUCKETS    0: every member subscribes to every topic (homogeneous); k > 0: member i
//              subscribes to the topics t with t % k != i % k (heterogeneous)
// Prints one JSON line per phase: {"phase": "fresh"|"leave", "ms": [run, ...]}.
// fresh: no current assignment. leave: member MEMBERS / 2 left; the others hold what this
// assignor gave them in the fresh assignment. The GroupSpec is built outside the timing,
// as the coordinator builds it before calling the assignor.

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

public final class ServerAssignorBench {
    public static void main(String[] args) {
        String assignorName = args[0];
        int members = Integer.parseInt(args[1]);
        int topics = Integer.parseInt(args[2]);
        int partitions = Integer.parseInt(args[3]);
        int buckets = Integer.parseInt(args[4]);
        int warmup = Integer.parseInt(args[5]);
        int runs = Integer.parseInt(args[6]);
        ConsumerGroupPartitionAssignor assignor =
            assignorName.equals("uniform") ? new UniformAssignor() : new RangeAssignor();

        List<Uuid> topicIds = new ArrayList<>();
        for (int t = 0; t < topics; t++) topicIds.add(new Uuid(0L, t + 1L));
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override public int numPartitions(Uuid topicId) {
                long t = topicId.getLeastSignificantBits() - 1;
                return t >= 0 && t < topics ? partitions : -1;
            }
            @Override public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Collections.emptySet();
            }
        };
        // one Set instance per distinct subscription, as members with equal subscriptions share
        Map<Integer, Set<Uuid>> subscriptions = new HashMap<>();
        List<String> ids = new ArrayList<>();
        Map<String, Set<Uuid>> subscriptionOf = new HashMap<>();
        for (int m = 0; m < members; m++) {
            int bucket = buckets == 0 ? -1 : m % buckets;
            Set<Uuid> subscribed = subscriptions.computeIfAbsent(bucket, b -> {
                Set<Uuid> s = new HashSet<>();
                for (int t = 0; t < topics; t++) if (b < 0 || t % buckets != b) s.add(topicIds.get(t));
                return Collections.unmodifiableSet(s);
            });
            String id = String.format("member-%05d", m);
            ids.add(id);
            subscriptionOf.put(id, subscribed);
        }
        SubscriptionType type = buckets == 0 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;

        GroupSpecImpl fresh = spec(ids, subscriptionOf, Collections.emptyMap(), type);
        GroupAssignment freshResult = assignor.assign(fresh, describer);
        report("fresh", time(() -> assignor.assign(fresh, describer), warmup, runs));

        String leaver = ids.get(members / 2);
        List<String> rest = new ArrayList<>(ids);
        rest.remove(leaver);
        Map<String, Map<Uuid, Set<Integer>>> current = new HashMap<>();
        for (String id : rest) {
            MemberAssignment a = freshResult.members().get(id);
            current.put(id, a == null ? Collections.emptyMap() : a.partitions());
        }
        GroupSpecImpl leave = spec(rest, subscriptionOf, current, type);
        report("leave", time(() -> assignor.assign(leave, describer), warmup, runs));
    }

    private static GroupSpecImpl spec(List<String> ids, Map<String, Set<Uuid>> subscriptionOf,
                                      Map<String, Map<Uuid, Set<Integer>>> current, SubscriptionType type) {
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (String id : ids) {
            Map<Uuid, Set<Integer>> held = current.getOrDefault(id, Collections.emptyMap());
            Map<Uuid, Set<Integer>> copy = new HashMap<>();
            held.forEach((t, ps) -> {
                copy.put(t, Collections.unmodifiableSet(new HashSet<>(ps)));
                Map<Integer, String> owners = inverted.computeIfAbsent(t, k -> new HashMap<>());
                for (Integer p : ps) owners.put(p, id);
            });
            members.put(id, new MemberSubscriptionAndAssignmentImpl(
                Optional.empty(), Optional.empty(), subscriptionOf.get(id),
                new Assignment(Collections.unmodifiableMap(copy))));
        }
        return new GroupSpecImpl(members, type, inverted);
    }

    private static double[] time(Runnable call, int warmup, int runs) {
        for (int i = 0; i < warmup; i++) call.run();
        double[] ms = new double[runs];
        for (int i = 0; i < runs; i++) {
            long start = System.nanoTime();
            call.run();
            ms[i] = (System.nanoTime() - start) / 1e6;
        }
        return ms;
    }

    private static void report(String phase, double[] ms) {
        StringBuilder out = new StringBuilder("{\"phase\": \"" + phase + "\", \"ms\": [");
        for (int i = 0; i < ms.length; i++) out.append(i > 0 ? ", " : "").append(String.format("%.3f", ms[i]));
        System.out.println(out.append("]}"));
    }
}
