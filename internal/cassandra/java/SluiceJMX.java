import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import javax.management.InstanceNotFoundException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * sluice's persistent JMX client of one Cassandra node (internal/cassandra/jmx.go starts it and
 * speaks to it). It uses javax.management only, no Cassandra jar: it connects once to the node's
 * JMX port and, for each request, invokes ColumnFamilyStoreMBean.importNewSSTables, what
 * `nodetool import` calls, without a JVM start per import.
 *
 * Start: java -cp DIR SluiceJMX SERVICE_URL, credentials (optional) in the environment variables
 * SLUICE_JMX_USERNAME and SLUICE_JMX_PASSWORD (never on the command line, which ps shows).
 *
 * Protocol, UTF-8 lines. Once connected it prints {"ready":true}; a failed connection prints
 * {"fatal":"..."} and exits 1. Each request on standard input is one line of space-separated
 * fields, each percent-encoded (URL form encoding):
 *
 *   import ID KEYSPACE TABLE DIR RESET_LEVEL CLEAR_REPAIRED VERIFY_SSTABLES VERIFY_TOKENS
 *          INVALIDATE_CACHES EXTENDED_VERIFY COPY_DATA
 *
 * the booleans being "true" or "false", in the order of importNewSSTables' eight-flag overload
 * (Cassandra 4.1 and 5.0). The answer is one line:
 *
 *   {"id":ID,"failed":[DIR...],"millis":N}   the call returned: the directories it lists failed
 *   {"id":ID,"error":"..."}                   the call threw (or the request was malformed)
 *   {"id":ID,"lost":"..."}                    the connection broke: the outcome is unknown; the
 *                                             client exits 2 and sluice starts a new one
 *
 * Requests run concurrently (a thread each: Cassandra serializes imports per table, not across
 * tables), so answers may come in any order; each is one line, printed whole. End of standard
 * input waits for the calls in flight, closes the connection and exits 0. The program holds no
 * state between requests but the connection, so restarting it is always safe.
 */
public final class SluiceJMX
{
    private static final String SIGNATURE_BOOLEAN = "boolean";

    /** Standard output; each answer is one println on it, which PrintStream makes whole. */
    private static PrintStream out;

    public static void main(String[] args) throws Exception
    {
        out = new PrintStream(System.out, true, "UTF-8");
        if (args.length != 1)
        {
            out.println("{\"fatal\":\"usage: SluiceJMX service:jmx:rmi:///jndi/rmi://HOST:PORT/jmxrmi\"}");
            System.exit(1);
        }
        JMXConnector connector;
        MBeanServerConnection mbs;
        try
        {
            Map<String, Object> env = new HashMap<>();
            String user = System.getenv("SLUICE_JMX_USERNAME");
            if (user != null && !user.isEmpty())
            {
                String password = System.getenv("SLUICE_JMX_PASSWORD");
                env.put(JMXConnector.CREDENTIALS, new String[]{ user, password == null ? "" : password });
            }
            connector = JMXConnectorFactory.connect(new JMXServiceURL(args[0]), env);
            mbs = connector.getMBeanServerConnection();
            mbs.getMBeanCount(); // a round trip: the connection works
        }
        catch (Exception e)
        {
            out.println("{\"fatal\":" + quote("connecting to " + args[0] + ": " + describe(e)) + "}");
            System.exit(1);
            return;
        }
        out.println("{\"ready\":true}");

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ExecutorService calls = Executors.newCachedThreadPool();
        final JMXConnector conn = connector;
        final MBeanServerConnection server = mbs;
        String line;
        while ((line = in.readLine()) != null)
        {
            if (line.isEmpty())
                continue;
            final String request = line;
            calls.execute(() -> out.println(call(conn, server, request)));
        }
        calls.shutdown();
        calls.awaitTermination(1, java.util.concurrent.TimeUnit.DAYS);
        try { connector.close(); } catch (Exception ignored) { }
    }

    /** One request line to its answer line; a broken connection ends the program (exit 2). */
    private static String call(JMXConnector connector, MBeanServerConnection mbs, String line)
    {
        String[] f = line.split(" ", -1);
        String id = f.length > 1 ? decode(f[1]) : "";
        if (!id.matches("[0-9]+"))
            id = "0";
        if (f.length != 12 || !f[0].equals("import"))
            return "{\"id\":" + id + ",\"error\":" + quote("malformed request: want import ID KEYSPACE TABLE DIR and 7 flags, got " + f.length + " fields") + "}";
        String keyspace = decode(f[2]), table = decode(f[3]), dir = decode(f[4]);
        if (!keyspace.matches("\\w+") || !table.matches("\\w+"))
            return "{\"id\":" + id + ",\"error\":" + quote("bad keyspace or table name " + keyspace + "." + table) + "}";
        Object[] params = new Object[8];
        String[] signature = new String[8];
        params[0] = new HashSet<>(Collections.singleton(dir));
        signature[0] = "java.util.Set";
        for (int i = 1; i < 8; i++)
        {
            String b = decode(f[4 + i]);
            if (!b.equals("true") && !b.equals("false"))
                return "{\"id\":" + id + ",\"error\":" + quote("malformed flags: want true or false") + "}";
            params[i] = Boolean.valueOf(b);
            signature[i] = SIGNATURE_BOOLEAN;
        }
        long start = System.nanoTime();
        try
        {
            ObjectName name = new ObjectName("org.apache.cassandra.db:type=ColumnFamilies,keyspace=" + keyspace + ",columnfamily=" + table);
            Object r = mbs.invoke(name, "importNewSSTables", params, signature);
            StringBuilder b = new StringBuilder("{\"id\":").append(id).append(",\"failed\":[");
            if (r instanceof List)
            {
                boolean first = true;
                for (Object o : (List<?>) r)
                {
                    b.append(first ? "" : ",").append(quote(String.valueOf(o)));
                    first = false;
                }
            }
            return b.append("],\"millis\":").append((System.nanoTime() - start) / 1000000).append('}').toString();
        }
        catch (IOException e)
        {
            // The call may have reached the node and be running there still; so may the others
            // in flight: sluice treats every one of them as of unknown outcome.
            out.println("{\"id\":" + id + ",\"lost\":" + quote(describe(e)) + "}");
            try { connector.close(); } catch (Exception ignored) { }
            System.exit(2);
            return "";
        }
        catch (InstanceNotFoundException e)
        {
            return "{\"id\":" + id + ",\"error\":" + quote("the node has no table " + keyspace + "." + table + " (no MBean " + e.getMessage() + ")") + "}";
        }
        catch (Exception e)
        {
            return "{\"id\":" + id + ",\"error\":" + quote(describe(e)) + "}";
        }
    }

    private static String decode(String s)
    {
        try
        {
            return URLDecoder.decode(s, "UTF-8");
        }
        catch (Exception e)
        {
            return "";
        }
    }

    /** The exception and its causes, class and message each: Cassandra's reason is in a cause. */
    private static String describe(Throwable t)
    {
        StringBuilder b = new StringBuilder();
        for (int depth = 0; t != null && depth < 8; t = t.getCause(), depth++)
        {
            if (depth > 0)
                b.append(" <- ");
            b.append(t.getClass().getName());
            if (t.getMessage() != null)
                b.append(": ").append(t.getMessage());
        }
        return b.toString();
    }

    private static String quote(String s)
    {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++)
        {
            char c = s.charAt(i);
            switch (c)
            {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20)
                        b.append(String.format("\\u%04x", (int) c));
                    else
                        b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
