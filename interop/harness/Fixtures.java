import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.stream.Stream;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.io.sstable.CQLSSTableWriter;

/**
 * Sstables written by Cassandra itself (CQLSSTableWriter, offline) in the shapes the repository's fixtures lack.
 * Each fixture is a table directory DIR/fx/NAME-ID/ holding one sstable per writer statement; the command prints
 * `FIXTURE <name> <format> <compression> <Data.db path>` per sstable, `TYPE <name> <cql>` and `SCHEMA <name> <cql>`
 * per table, and `REFUSED <what>: <reason>` for what the writer does not allow (counters).
 */
final class Fixtures
{
    static final String KS = "fx";
    static final String[] COMPRESSORS = { "LZ4Compressor", "SnappyCompressor", "DeflateCompressor", "ZstdCompressor", "none" };

    static int main(List<String> args) throws Exception
    {
        String compat = Env.compatFrom(args);
        int i = args.indexOf("--out");
        if (i < 0)
            throw new IllegalArgumentException("write needs --out DIR");
        Path out = Path.of(args.get(i + 1));
        Env.init(compat);
        Fixtures f = new Fixtures(out, compat.equals("4") ? "nb" : "");
        if (compat.equals("4"))
        {
            // Cassandra 4 compatibility mode writes BIG nb: one wide and one collections table suffice.
            f.wide("big", "LZ4Compressor", "4");
            f.collections("big", "DeflateCompressor");
        }
        else
        {
            for (String fmt : new String[]{ "big", "bti" })
            {
                for (String c : COMPRESSORS)
                    f.wide(fmt, c, fmt);
                f.scalars(fmt, fmt.equals("big") ? "SnappyCompressor" : "ZstdCompressor");
                f.collections(fmt, fmt.equals("big") ? "LZ4Compressor" : "DeflateCompressor");
                f.statics(fmt, fmt.equals("big") ? "ZstdCompressor" : "LZ4Compressor");
                f.deletions(fmt, fmt.equals("big") ? "none" : "SnappyCompressor");
                if (fmt.equals("big"))
                    f.many(fmt, "LZ4Compressor");
            }
            f.counters();
        }
        Harness.out.flush();
        return 0;
    }

    final Path out;
    final String tag;
    int tables;

    Fixtures(Path out, String tag)
    {
        this.out = out;
        this.tag = tag;
    }

    static String compression(String c)
    {
        return c.equals("none") ? "{'enabled': false}" : "{'class': '" + c + "', 'chunk_length_in_kb': 4}";
    }

    /** One table: every statement writes its own sstable into the table's directory. */
    final class Table
    {
        final String name, format, compressor, schema;
        final List<String> types = new ArrayList<>();
        final Path dir;

        Table(String shape, String format, String compressor, String columns, String options) throws IOException
        {
            this.name = shape + "_" + format + "_" + (compressor.equals("none") ? "none" : compressor.replace("Compressor", "").toLowerCase()) + (tag.isEmpty() ? "" : "_" + tag);
            this.format = format;
            this.compressor = compressor;
            this.schema = "CREATE TABLE " + KS + "." + name + " (" + columns + ") WITH compression = " + compression(compressor)
                          + (options.isEmpty() ? "" : " AND " + options);
            this.dir = out.resolve(KS).resolve(name + "-" + String.format("%032x", ++tables));
            Files.createDirectories(dir);
        }

        Table type(String def)
        {
            types.add(def);
            return this;
        }

        boolean described;

        void write(String statement, Consumer<CQLSSTableWriter> rows) throws IOException
        {
            if (!described)
            {
                described = true;
                for (String t : types)
                    Harness.out.println("TYPE " + name + " " + t);
                Harness.out.println("SCHEMA " + name + " " + schema);
            }
            CQLSSTableWriter.Builder b = CQLSSTableWriter.builder().inDirectory(dir.toString()).forTable(schema).using(statement.replace("%t", KS + "." + name))
                                                         .withFormat(DatabaseDescriptor.getSSTableFormats().get(format));
            for (String t : types)
                b.withType(t);
            Set<Path> before = dataFiles();
            try (CQLSSTableWriter w = b.build())
            {
                rows.accept(w);
            }
            for (Path p : dataFiles())
                if (!before.contains(p))
                    Harness.out.println("FIXTURE " + name + " " + format + " " + compressor + " " + p);
        }

        Set<Path> dataFiles() throws IOException
        {
            try (Stream<Path> s = Files.list(dir))
            {
                return new LinkedHashSet<>(s.filter(p -> p.getFileName().toString().endsWith("-Data.db")).sorted().toList());
            }
        }
    }

    static void add(CQLSSTableWriter w, Object... values)
    {
        try
        {
            w.addRow(values);
        }
        catch (Exception e)
        {
            throw new RuntimeException(e);
        }
    }

    static final long TS = 1_700_000_000_000_000L;

    /** Wide partitions (promoted/row indexes) mixed with many small ones; some rows with a TTL. */
    void wide(String fmt, String compressor, String seedTag) throws IOException
    {
        Table t = new Table("wide", fmt, compressor, "pk int, ck int, v blob, PRIMARY KEY (pk, ck)", "");
        Random r = new Random(seedTag.hashCode() * 31L + compressor.hashCode());
        t.write("INSERT INTO %t (pk, ck, v) VALUES (?, ?, ?) USING TIMESTAMP ? AND TTL ?", w -> {
            for (int pk = 0; pk < 300; pk++)
            {
                int rows = pk % 75 == 0 ? 2500 : 1 + r.nextInt(8);
                for (int ck = 0; ck < rows; ck++)
                {
                    byte[] v = new byte[40 + r.nextInt(200)];
                    // half text-like so compression has something to do
                    for (int j = 0; j < v.length; j++)
                        v[j] = j % 2 == 0 ? (byte) ('a' + r.nextInt(6)) : (byte) r.nextInt(256);
                    add(w, pk, ck, ByteBuffer.wrap(v), TS + pk * 1000L + ck, ck % 10 == 3 ? 86400 * 30 : 0);
                }
            }
        });
    }

    /** Every CQL scalar type, values and nulls (a JSON insert writes omitted columns as cell tombstones). */
    void scalars(String fmt, String compressor) throws IOException
    {
        Table t = new Table("scalars", fmt, compressor,
                            "pk int, ck int, a ascii, bi bigint, bl blob, bo boolean, da date, de decimal, do double, du duration, "
                            + "fl float, ip inet, i int, si smallint, te text, ti time, ts timestamp, tu timeuuid, tiny tinyint, "
                            + "u uuid, vc varchar, vi varint, PRIMARY KEY (pk, ck)", "");
        Random r = new Random(7);
        t.write("INSERT INTO %t JSON ? USING TIMESTAMP ? AND TTL ?", w -> {
            for (int pk = 0; pk < 400; pk++)
                for (int ck = 0; ck < 3; ck++)
                {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("pk", pk - 200);
                    m.put("ck", ck);
                    if ((pk + ck) % 7 != 0)
                    {
                        m.put("a", "ascii-" + pk);
                        m.put("bi", r.nextLong());
                        m.put("bl", String.format("0x%016x", r.nextLong()));
                        m.put("bo", r.nextBoolean());
                        m.put("da", String.format("20%02d-%02d-%02d", 10 + pk % 20, 1 + ck, 1 + pk % 28));
                        m.put("de", "-" + pk + "." + r.nextInt(100000) + "E-" + ck);
                        m.put("do", r.nextGaussian() * 1e6);
                        m.put("du", (1 + pk % 5) + "mo" + ck + "d" + pk + "h" + r.nextInt(60) + "m");
                        m.put("fl", r.nextFloat());
                        m.put("ip", pk % 2 == 0 ? "127.0." + ck + "." + (pk % 256) : "::" + Integer.toHexString(pk));
                        m.put("i", r.nextInt());
                        m.put("si", (short) r.nextInt());
                        m.put("te", "text \u00fc\u4e2d \"quoted\" " + pk);
                        m.put("ti", String.format("%02d:%02d:%02d.%09d", ck, pk % 60, r.nextInt(60), r.nextInt(1_000_000_000)));
                        m.put("ts", String.format("2024-%02d-%02d %02d:00:00.123Z", 1 + pk % 12, 1 + ck, pk % 24));
                        m.put("tu", new UUID(0x1e0000000000100fL | ((long) pk << 32), 0x8000000000000000L | pk).toString());
                        m.put("tiny", (byte) pk);
                        m.put("u", new UUID(r.nextLong(), r.nextLong()).toString());
                        m.put("vc", "varchar-" + ck);
                        m.put("vi", new java.math.BigInteger(80, r).negate().toString());
                    }
                    else
                    {
                        m.put("te", "sparse");
                    }
                    add(w, json(m), TS + pk, pk % 4 == 1 ? 86400 * 7 : 0);
                }
        });
    }

    /** Lists, sets, maps frozen and not, a UDT frozen and not, a tuple, a nested frozen collection. */
    void collections(String fmt, String compressor) throws IOException
    {
        Table t = new Table("collections", fmt, compressor,
                            "pk text, ck int, l list<int>, s set<text>, m map<text, int>, fl frozen<list<int>>, fs frozen<set<text>>, "
                            + "fm frozen<map<int, text>>, fu frozen<addr>, u addr, tu tuple<int, text, double>, "
                            + "nested frozen<map<text, frozen<list<int>>>>, PRIMARY KEY (pk, ck)", "")
                  .type("CREATE TYPE " + KS + ".addr (street text, zip int, tags frozen<set<text>>)");
        Random r = new Random(11);
        t.write("INSERT INTO %t JSON ? USING TIMESTAMP ?", w -> {
            for (int pk = 0; pk < 250; pk++)
                for (int ck = 0; ck < 1 + pk % 4; ck++)
                {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("pk", "p" + pk);
                    m.put("ck", ck);
                    m.put("l", List.of(r.nextInt(100), r.nextInt(100), pk));
                    m.put("s", List.of("x" + pk, "y" + ck));
                    m.put("m", Map.of("k" + ck, pk, "z", ck));
                    m.put("fl", List.of(pk, ck));
                    m.put("fs", List.of("f" + pk));
                    m.put("fm", Map.of(String.valueOf(ck), "v" + pk));
                    Map<String, Object> addr = new LinkedHashMap<>();
                    addr.put("street", pk + " Main St");
                    addr.put("zip", 10000 + pk);
                    addr.put("tags", List.of("t" + ck));
                    m.put("fu", addr);
                    if (ck % 2 == 0)
                        m.put("u", Map.of("street", "u" + pk, "zip", ck));
                    m.put("tu", List.of(pk, "tuple" + ck, pk / 3.0));
                    m.put("nested", Map.of("a", List.of(1, 2, pk), "b", List.of()));
                    add(w, json(m), TS + pk * 10L + ck);
                }
        });
        // Appends: collection cells without a collection tombstone, newer timestamps.
        t.write("UPDATE %t USING TIMESTAMP ? SET l = l + ?, s = s + ?, m = m + ? WHERE pk = ? AND ck = ?", w -> {
            for (int pk = 0; pk < 250; pk += 3)
                add(w, TS + 1_000_000 + pk, List.of(pk * 2), Set.of("added"), Map.of("added", pk), "p" + pk, 0);
        });
    }

    /** Compound partition key, DESC clustering, static columns (and partitions holding only a static row). */
    void statics(String fmt, String compressor) throws IOException
    {
        Table t = new Table("statics", fmt, compressor,
                            "a text, b int, c1 int, c2 text, s text static, s2 int static, v text, PRIMARY KEY ((a, b), c1, c2)",
                            "CLUSTERING ORDER BY (c1 DESC, c2 ASC)");
        t.write("INSERT INTO %t (a, b, c1, c2, s, s2, v) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?", w -> {
            for (int p = 0; p < 300; p++)
                for (int c = 0; c < 1 + p % 5; c++)
                    add(w, "key" + (p % 37), p, c * 7 - 10, "c" + (c % 2), "static-" + p, p * c, "value " + p + "/" + c, TS + p);
        });
        t.write("INSERT INTO %t (a, b, s, s2) VALUES (?, ?, ?, ?) USING TIMESTAMP ?", w -> {
            for (int p = 300; p < 340; p++)
                add(w, "only-static", p, "s" + p, p, TS + p);
        });
    }

    /** Rows, then row, range, partition and cell deletions, each statement its own sstable. */
    void deletions(String fmt, String compressor) throws IOException
    {
        Table t = new Table("deletions", fmt, compressor, "pk int, ck int, v text, w int, PRIMARY KEY (pk, ck)", "");
        t.write("INSERT INTO %t (pk, ck, v, w) VALUES (?, ?, ?, ?) USING TIMESTAMP ?", w -> {
            for (int pk = 0; pk < 200; pk++)
                for (int ck = 0; ck < 6; ck++)
                    add(w, pk, ck, "v" + pk + "." + ck, ck, TS);
        });
        t.write("DELETE FROM %t USING TIMESTAMP ? WHERE pk = ? AND ck = ?", w -> {
            for (int pk = 0; pk < 200; pk += 2)
                add(w, TS + 1, pk, pk % 6);
        });
        t.write("DELETE FROM %t USING TIMESTAMP ? WHERE pk = ? AND ck >= ? AND ck < ?", w -> {
            for (int pk = 1; pk < 200; pk += 3)
                add(w, TS + 2, pk, 1, 4);
        });
        t.write("DELETE FROM %t USING TIMESTAMP ? WHERE pk = ?", w -> {
            for (int pk = 0; pk < 200; pk += 5)
                add(w, TS + 3, pk);
        });
        t.write("DELETE v FROM %t USING TIMESTAMP ? WHERE pk = ? AND ck = ?", w -> {
            for (int pk = 0; pk < 200; pk += 7)
                add(w, TS + 4, pk, 5);
        });
    }

    /** Many small partitions of one row: a Summary.db of many samples (min_index_interval 128) to plan from. */
    void many(String fmt, String compressor) throws IOException
    {
        Table t = new Table("many", fmt, compressor, "pk int PRIMARY KEY, v text", "");
        t.write("INSERT INTO %t (pk, v) VALUES (?, ?) USING TIMESTAMP ?", w -> {
            for (int pk = 0; pk < 12000; pk++)
                add(w, pk, "value-" + pk, TS + pk);
        });
    }

    /** CQLSSTableWriter refuses counter statements: say so (the suite records it). */
    void counters() throws IOException
    {
        Table t = new Table("counters", "big", "LZ4Compressor", "pk int PRIMARY KEY, c counter", "");
        try
        {
            t.write("UPDATE %t SET c = c + ? WHERE pk = ?", w -> add(w, 1L, 1));
        }
        catch (IllegalArgumentException e)
        {
            Harness.out.println("REFUSED counters: " + e.getMessage());
        }
    }

    /** A tiny JSON encoder for the fixture values (strings, numbers, booleans, lists, maps). */
    static String json(Object o)
    {
        if (o == null)
            return "null";
        if (o instanceof String s)
        {
            StringBuilder sb = new StringBuilder("\"");
            for (char c : s.toCharArray())
            {
                if (c == '"' || c == '\\')
                    sb.append('\\').append(c);
                else if (c < 0x20)
                    sb.append(String.format("\\u%04x", (int) c));
                else
                    sb.append(c);
            }
            return sb.append('"').toString();
        }
        if (o instanceof Number || o instanceof Boolean)
            return o.toString();
        if (o instanceof List<?> l)
        {
            List<String> parts = new ArrayList<>();
            for (Object e : l)
                parts.add(json(e));
            return "[" + String.join(", ", parts) + "]";
        }
        if (o instanceof Map<?, ?> m)
        {
            List<String> parts = new ArrayList<>();
            for (Map.Entry<?, ?> e : m.entrySet())
                parts.add(json(String.valueOf(e.getKey())) + ": " + json(e.getValue()));
            return "{" + String.join(", ", parts) + "}";
        }
        throw new IllegalArgumentException("json: " + o.getClass() + " " + Arrays.toString(new Object[]{ o }));
    }
}
