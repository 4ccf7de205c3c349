import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.io.sstable.CQLSSTableWriter;

/**
 * bulk --out DIR --keyspace KS --table T --partitions N --rows R --value-size B --writers W [--seed S] [--format big|bti]
 * [--buffer-mib M]
 *
 * A bulk-load source written by Cassandra itself (CQLSSTableWriter, unsorted, as an operator's export job writes one):
 * table KS.T (pk text, ck int, v text, PRIMARY KEY (pk, ck)), LZ4, into DIR/KS/T-<id>/. W writers run one after
 * another; writer w writes every partition p with p % W == w or p % W == (w + 1) % W, so every partition is in two
 * writers' sstables; each of its R rows gets a value of B characters (base64 of seeded random bytes: LZ4 keeps about
 * three quarters) at timestamp TS + w, so the later writer's cell wins where both wrote one (a reconciliation both
 * loaders must get right). A writer flushes an sstable each time its buffer (M MiB, default 64) fills, so the sstables
 * overlap across the whole ring. Prints `SSTABLE <Data.db path>` per sstable, then
 * `BULK partitions=<n> rows=<n> cells=<n>` (rows: distinct (pk, ck); cells: rows written, duplicates included).
 */
final class Bulk
{
    static final long TS = 1_700_000_000_000_000L;

    static int main(List<String> args) throws Exception
    {
        Path out = Path.of(arg(args, "--out", null));
        String ks = arg(args, "--keyspace", "bulk"), table = arg(args, "--table", "t");
        int partitions = Integer.parseInt(arg(args, "--partitions", "1000"));
        int rows = Integer.parseInt(arg(args, "--rows", "10"));
        int size = Integer.parseInt(arg(args, "--value-size", "1024"));
        int writers = Integer.parseInt(arg(args, "--writers", "3"));
        long seed = Long.parseLong(arg(args, "--seed", "1"));
        String format = arg(args, "--format", "big");
        int buffer = Integer.parseInt(arg(args, "--buffer-mib", "64"));
        if (writers < 2)
            throw new IllegalArgumentException("bulk: --writers must be 2 or more (every partition is in two writers)");
        Env.init("none");
        String schema = "CREATE TABLE " + ks + "." + table + " (pk text, ck int, v text, PRIMARY KEY (pk, ck))";
        Path dir = out.resolve(ks).resolve(table + "-" + String.format("%032x", seed));
        Files.createDirectories(dir);
        long cells = 0;
        for (int w = 0; w < writers; w++)
        {
            CQLSSTableWriter.Builder b = CQLSSTableWriter.builder().inDirectory(dir.toString()).forTable(schema)
                                                         .using("INSERT INTO " + ks + "." + table + " (pk, ck, v) VALUES (?, ?, ?) USING TIMESTAMP ?")
                                                         .withFormat(DatabaseDescriptor.getSSTableFormats().get(format))
                                                         .withBufferSizeInMiB(buffer);
            try (CQLSSTableWriter cw = b.build())
            {
                for (int p = 0; p < partitions; p++)
                {
                    if (p % writers != w && p % writers != (w + 1) % writers)
                        continue;
                    String pk = String.format("p%09d", p);
                    for (int ck = 0; ck < rows; ck++)
                    {
                        cw.addRow(pk, ck, value(seed, p, ck, w, size), TS + w);
                        cells++;
                    }
                }
            }
        }
        try (Stream<Path> s = Files.list(dir))
        {
            for (Path p : s.filter(f -> f.getFileName().toString().endsWith("-Data.db")).sorted().toList())
                Harness.out.println("SSTABLE " + p);
        }
        Harness.out.println("BULK partitions=" + partitions + " rows=" + ((long) partitions * rows) + " cells=" + cells);
        return 0;
    }

    /** The value writer w gives (p, ck): size characters of base64 over seeded random bytes. */
    static String value(long seed, int p, int ck, int w, int size)
    {
        SplittableRandom r = new SplittableRandom(seed * 1_000_003L + p * 7_919L + ck * 31L + w);
        byte[] raw = new byte[(size * 3 + 3) / 4];
        r.nextBytes(raw);
        String v = Base64.getEncoder().encodeToString(raw);
        return v.length() > size ? v.substring(0, size) : v;
    }

    static String arg(List<String> args, String name, String def)
    {
        int i = args.indexOf(name);
        if (i < 0 || i + 1 >= args.size())
        {
            if (def == null)
                throw new IllegalArgumentException("bulk needs " + name);
            return def;
        }
        return args.get(i + 1);
    }

}
