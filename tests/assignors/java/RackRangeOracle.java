import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

// Java's own RangeAssignor (kafka-clients), rack-aware path, as the oracle of
// tests/assignors/test_rack_range_vs_java.py. Reads cases from stdin, one line each of
//   T topic count | P topic partition rack,rack (or -) | M member rack (or -) topic,topic | END
// and prints, per END, "member=topic:p,topic:p;..." with members and partitions sorted.
public class RackRangeOracle {
    public static void main(String[] a) throws Exception {
        Scanner in = new Scanner(System.in);
        Map<String, Integer> counts = new TreeMap<>();
        Map<TopicPartition, List<String>> racks = new HashMap<>();
        Map<String, Subscription> subs = new HashMap<>();
        while (in.hasNext()) {
            String kind = in.next();
            if (kind.equals("T")) counts.put(in.next(), in.nextInt());
            else if (kind.equals("P")) { String t = in.next(); int p = in.nextInt(); String r = in.next();
                racks.put(new TopicPartition(t, p), r.equals("-") ? List.of() : Arrays.asList(r.split(","))); }
            else if (kind.equals("M")) { String id = in.next(); String rack = in.next(); String ts = in.next();
                subs.put(id, new Subscription(ts.equals("-") ? List.of() : Arrays.asList(ts.split(",")), null, List.of(), -1,
                    rack.equals("-") ? Optional.empty() : Optional.of(rack))); }
            else if (kind.equals("END")) {
                Map<String, List<PartitionInfo>> ppt = new HashMap<>();
                for (var e : counts.entrySet()) {
                    List<PartitionInfo> infos = new ArrayList<>();
                    for (int p = 0; p < e.getValue(); p++) {
                        List<String> rs = racks.getOrDefault(new TopicPartition(e.getKey(), p), List.of());
                        Node[] nodes = new Node[rs.size()];
                        for (int i = 0; i < rs.size(); i++) nodes[i] = new Node(i, "h", 1, rs.get(i));
                        infos.add(new PartitionInfo(e.getKey(), p, null, nodes, nodes));
                    }
                    ppt.put(e.getKey(), infos);
                }
                Map<String, List<TopicPartition>> out = new RangeAssignor().assignPartitions(ppt, subs);
                StringBuilder sb = new StringBuilder();
                for (String m : new TreeSet<>(out.keySet())) {
                    List<String> tps = new ArrayList<>();
                    for (TopicPartition tp : out.get(m)) tps.add(tp.topic() + ":" + tp.partition());
                    Collections.sort(tps);
                    sb.append(m).append("=").append(String.join(",", tps)).append(";");
                }
                System.out.println(sb);
                counts.clear(); racks.clear(); subs.clear();
            }
        }
    }
}
