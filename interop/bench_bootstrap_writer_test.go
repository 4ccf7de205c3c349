package interop

// benchWriterJava is the data of TestBenchBootstrapAgainstCassandra, written by Cassandra
// itself: CQLSSTableWriter (cassandra-all 5.0.7, storage_compatibility_mode NONE, so BIG "oa")
// writes FILES sstables of PARTITIONS partitions each into OUT/fN/bench/stress/, in the table
// bench.stress (key text, c text, value blob, PRIMARY KEY (key, c)) with LZ4 and 16 KiB chunks.
// Every partition is 16 rows of a 4 KiB random value (64 KiB, incompressible: LZ4 keeps it
// whole). Keys are k<file>-<i>, so the files do not overlap; the writer is sorted (one sstable
// per file), the keys given in token order. It runs with Java's single-file source launcher on
// the harness's class path (interop/cassandra.sh java BenchWriter.java ...).
const benchWriterJava = `
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.io.sstable.CQLSSTableWriter;
import org.apache.cassandra.utils.ByteBufferUtil;

public class BenchWriter
{
    public static void main(String[] args) throws Exception
    {
        Path out = Paths.get(args[0]);
        int files = Integer.parseInt(args[1]);
        int partitions = Integer.parseInt(args[2]);
        Path conf = Files.createTempDirectory("sluice-bench-writer");
        Files.writeString(conf.resolve("cassandra.yaml"),
            "cluster_name: bench\n" +
            "partitioner: org.apache.cassandra.dht.Murmur3Partitioner\n" +
            "data_file_directories: [" + conf.resolve("data") + "]\n" +
            "commitlog_directory: " + conf.resolve("commitlog") + "\n" +
            "saved_caches_directory: " + conf.resolve("saved_caches") + "\n" +
            "hints_directory: " + conf.resolve("hints") + "\n" +
            "cdc_raw_directory: " + conf.resolve("cdc_raw") + "\n" +
            "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms\nendpoint_snitch: SimpleSnitch\n" +
            "seed_provider:\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: \"127.0.0.1:7000\"\n" +
            "storage_compatibility_mode: NONE\n");
        System.setProperty("cassandra.config", conf.resolve("cassandra.yaml").toUri().toString());
        DatabaseDescriptor.toolInitialization();
        String schema = "CREATE TABLE bench.stress (key text, c text, value blob, PRIMARY KEY (key, c)) " +
                        "WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}";
        Random rnd = new Random(7);
        byte[] value = new byte[4096];
        for (int f = 0; f < files; f++)
        {
            Path dir = out.resolve("f" + f).resolve("bench").resolve("stress");
            Files.createDirectories(dir);
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < partitions; i++)
                keys.add("k" + f + "-" + i);
            keys.sort(Comparator.comparing((String k) -> (Token) Murmur3Partitioner.instance.getToken(ByteBufferUtil.bytes(k))));
            try (CQLSSTableWriter w = CQLSSTableWriter.builder().inDirectory(dir.toString()).forTable(schema)
                                                      .using("INSERT INTO bench.stress (key, c, value) VALUES (?, ?, ?)").sorted().build())
            {
                for (String k : keys)
                    for (int r = 0; r < 16; r++)
                    {
                        rnd.nextBytes(value);
                        w.addRow(k, String.format("c%02d", r), ByteBuffer.wrap(value.clone()));
                    }
            }
            System.out.println(dir);
        }
        System.exit(0);
    }
}
`
