import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import org.apache.cassandra.config.DatabaseDescriptor;

/** Cassandra's configuration for offline use: a generated cassandra.yaml in a temporary directory, removed at exit. */
final class Env
{
    static Path dir;

    /** Takes `--compat 4|none` out of args: the storage compatibility mode, which picks the BIG version written (nb or oa). */
    static String compatFrom(List<String> args)
    {
        int i = args.indexOf("--compat");
        if (i < 0)
            return "none";
        String v = args.get(i + 1);
        args.remove(i + 1);
        args.remove(i);
        return v;
    }

    static void init(String compat) throws IOException
    {
        dir = Files.createTempDirectory("sluice-interop-cassandra");
        Runtime.getRuntime().addShutdownHook(new Thread(Env::cleanup));
        String mode = compat.equals("4") ? "CASSANDRA_4" : "NONE";
        String yaml = "cluster_name: interop\n"
                      + "partitioner: org.apache.cassandra.dht.Murmur3Partitioner\n"
                      + "data_file_directories: [" + dir.resolve("data") + "]\n"
                      + "commitlog_directory: " + dir.resolve("commitlog") + "\n"
                      + "saved_caches_directory: " + dir.resolve("saved_caches") + "\n"
                      + "hints_directory: " + dir.resolve("hints") + "\n"
                      + "cdc_raw_directory: " + dir.resolve("cdc_raw") + "\n"
                      + "commitlog_sync: periodic\n"
                      + "commitlog_sync_period: 10000ms\n"
                      + "endpoint_snitch: SimpleSnitch\n"
                      + "seed_provider:\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: \"127.0.0.1:7000\"\n"
                      + "storage_compatibility_mode: " + mode + "\n";
        Path file = dir.resolve("cassandra.yaml");
        Files.writeString(file, yaml);
        System.setProperty("cassandra.config", file.toUri().toString());
        System.setProperty("cassandra.schema.force_load_local_keyspaces", "true");
        DatabaseDescriptor.toolInitialization();
    }

    static void cleanup()
    {
        try (Stream<Path> s = Files.walk(dir))
        {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        catch (IOException ignored)
        {
        }
    }
}
