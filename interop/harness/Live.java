import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;

import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ProtocolVersion;
import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;
import com.datastax.driver.core.SimpleStatement;

import org.apache.cassandra.tools.INodeProbeFactory;
import org.apache.cassandra.tools.NodeProbe;
import org.apache.cassandra.tools.NodeTool;
import org.apache.cassandra.tools.Output;

/**
 * The live check, against a running single-node Cassandra (started by the Go suite):
 *
 *   live --port P --jmx J [--type CQL]... --schema CQL --table NAME=DIR[,DIR...]...
 *
 * In keyspace `live`, for each NAME: the types and the table (the schema's keyspace and table name replaced),
 * `nodetool import --copy-data live NAME DIR...` (NodeTool's own class over JMX; it verifies each sstable first),
 * then SELECT * and print `ROWS <name> <count> <digest>` (digest over the sorted rows, every column's bytes), then
 * `nodetool compact live NAME` and the same SELECT again as `COMPACTED <name> <count> <digest>` or
 * `COMPACT <name> fail <exit code>`, `IMPORTED <name> <estimate>` and `PARTITIONS <name> <estimate>` (nodetool tablestats' partition estimate after the import and after the compaction), then
 * `nodetool cleanup live NAME` and `CLEANED <name> <count> <digest>` or
 * `CLEANUP <name> fail <exit code>`. `IMPORT <name> <exit code> <output>` reports the import.
 */
final class Live
{
    static int main(List<String> args) throws Exception
    {
        String port = arg(args, "--port"), jmx = arg(args, "--jmx"), schema = arg(args, "--schema");
        List<String> types = new ArrayList<>();
        for (String t; (t = arg(args, "--type")) != null; )
            types.add(t);
        List<String> tables = new ArrayList<>();
        for (String t; (t = arg(args, "--table")) != null; )
            tables.add(t);
        try (Cluster cluster = Cluster.builder().addContactPoint("127.0.0.1").withPort(Integer.parseInt(port))
                                      .withProtocolVersion(ProtocolVersion.V4).withoutJMXReporting().build();
             Session session = cluster.connect())
        {
            session.execute("CREATE KEYSPACE IF NOT EXISTS live WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
            for (String t : types)
                session.execute(t.replaceFirst("TYPE \\w+\\.", "TYPE IF NOT EXISTS live."));
            for (String spec : tables)
            {
                String name = spec.substring(0, spec.indexOf('='));
                String[] dirs = spec.substring(spec.indexOf('=') + 1).split(",");
                session.execute(schema.replaceFirst("TABLE \\w+\\.\\w+", "TABLE live." + name));
                List<String> cmd = new ArrayList<>(List.of("-h", "127.0.0.1", "-p", jmx, "import", "--copy-data", "live", name));
                cmd.addAll(List.of(dirs));
                Capture c = nodetool(cmd);
                Harness.out.println("IMPORT " + name + " " + c.code + " " + c.text.replace('\n', ' ').trim());
                select(session, "ROWS", name);
                partitions(jmx, "IMPORTED", name);
                Capture compact = nodetool(List.of("-h", "127.0.0.1", "-p", jmx, "compact", "live", name));
                if (compact.code != 0)
                    Harness.out.println("COMPACT " + name + " fail " + compact.code + " " + compact.text.replace('\n', ' ').trim());
                select(session, "COMPACTED", name);
                // What compaction kept: the table's partition estimate (its sstables' key
                // cardinality), which holds a filler partition only if compaction did not drop it.
                partitions(jmx, "PARTITIONS", name);
                Capture cleanup = nodetool(List.of("-h", "127.0.0.1", "-p", jmx, "cleanup", "live", name));
                if (cleanup.code != 0)
                    Harness.out.println("CLEANUP " + name + " fail " + cleanup.code + " " + cleanup.text.replace('\n', ' ').trim());
                select(session, "CLEANED", name);
                Harness.out.flush();
            }
        }
        return 0;
    }

    /** Prints `TAG <name> <estimate>`: nodetool tablestats' partition estimate of live.NAME. */
    static void partitions(String jmx, String tag, String name)
    {
        Capture stats = nodetool(List.of("-h", "127.0.0.1", "-p", jmx, "tablestats", "live." + name));
        for (String line : stats.text.split("\n"))
            if (line.trim().startsWith("Number of partitions (estimate):"))
                Harness.out.println(tag + " " + name + " " + line.substring(line.indexOf(':') + 1).trim());
    }

    record Capture(int code, String text) {}

    static Capture nodetool(List<String> args)
    {
        java.io.ByteArrayOutputStream buf = new java.io.ByteArrayOutputStream();
        java.io.PrintStream ps = new java.io.PrintStream(buf, true, StandardCharsets.UTF_8);
        // NodeTool's own factory is package-private; this is the same one.
        INodeProbeFactory probes = new INodeProbeFactory()
        {
            public NodeProbe create(String host, int port) throws java.io.IOException { return new NodeProbe(host, port); }
            public NodeProbe create(String host, int port, String user, String password) throws java.io.IOException { return new NodeProbe(host, port, user, password); }
        };
        int code = new NodeTool(probes, new Output(ps, ps)).execute(args.toArray(new String[0]));
        return new Capture(code, buf.toString(StandardCharsets.UTF_8));
    }

    static void select(Session session, String tag, String name) throws Exception
    {
        List<String> rows = new ArrayList<>();
        try
        {
            ResultSet rs = session.execute(new SimpleStatement("SELECT * FROM live." + name).setFetchSize(1000));
            for (Row r : rs)
            {
                StringBuilder sb = new StringBuilder();
                for (int i = 0; i < r.getColumnDefinitions().size(); i++)
                {
                    ByteBuffer b = r.getBytesUnsafe(i);
                    sb.append(i > 0 ? "|" : "").append(b == null ? "null" : HexFormat.of().formatHex(b.array(), b.arrayOffset() + b.position(), b.arrayOffset() + b.limit()));
                }
                rows.add(sb.toString());
            }
        }
        catch (Exception e)
        {
            Harness.out.println(tag + " " + name + " fail " + Harness.chain(e));
            return;
        }
        Collections.sort(rows);
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        for (String r : rows)
            md.update((r + "\n").getBytes(StandardCharsets.UTF_8));
        Harness.out.println(tag + " " + name + " " + rows.size() + " " + HexFormat.of().formatHex(md.digest(), 0, 16));
    }

    /** Removes and returns the value of the first `flag VALUE` in args, or null. */
    static String arg(List<String> args, String flag)
    {
        int i = args.indexOf(flag);
        if (i < 0)
            return null;
        String v = args.get(i + 1);
        args.remove(i + 1);
        args.remove(i);
        return v;
    }
}
