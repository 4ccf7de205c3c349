// Harness: Apache Cassandra's own classes, offline, as the oracle for what sluice writes.
//
//   check [--extended] [--text] [--ranges SPEC] PATH[::SPEC]...   (PATH::SPEC: that sstable's own ranges)
//                                         read every partition with Cassandra's scanner and print one canonical
//                                         digest line per partition; read all metadata; run the verifier; with
//                                         --ranges, also scan each range of SPEC alone (RSCAN below). SPEC is a
//                                         comma-separated list of (left,right] token ranges as sluice prints them
//                                         (token.RangeSet.String): Murmur3 tokens as signed decimal longs,
//                                         ByteOrdered tokens as the key's hex; left >= right wraps, left == right
//                                         is the whole ring
//   write --out DIR [--compat 4|none]      write the CQLSSTableWriter fixtures (see Fixtures.java)
//   bulk --out DIR ...                     a bulk-load source of overlapping sstables by CQLSSTableWriter (see Bulk.java)
//   live --port P --jmx J TABLE...          against a running node: see Live.java
//   merge --out DIR PATH...                Cassandra's merge of the sstables (UnfilteredPartitionIterators.merge, no
//                                         purging), written by Cassandra as one sstable of the first one's format
//                                         into DIR; prints `MERGED <Data.db path> partitions=<n>`
//
// The output of check is a line protocol the Go suite (interop/*_test.go) parses:
//   SSTABLE <path>
//   P <key hex> <token> <digest> rows=<n> markers=<n> cells=<n>      one per partition, scanner order
//   T <canonical text line>                                           only with --text
//   READ ok partitions=<n> digest=<d> ... | READ fail <message>   the index-driven read the P lines come from
//   READKEYS emptykeys=<hex>,... keys=<hex>,...[ truncated]        after READ ok: the key of every partition that read
//                                                                  returned, in order, empty ones included (keys) and
//                                                                  the empty ones alone (emptykeys); see KEY LISTS
//   RIDX ok partitions=<n> | RIDX fail <message>                   every partition of 2+ rows read again through its row
//                                                                  index (reversed; forward from its middle row)
//   SCAN ok partitions=<n> digest=<d> ... empty=<n> | SCAN fail <message>   the sequential read from position 0
//                                                                  (compaction's); its digest is over the P lines it would
//                                                                  print for the partitions that are not empty
//   SCANKEYS emptykeys=<hex>,... keys=<hex>,...[ truncated]        after SCAN ok: as READKEYS, for the sequential read
//   RSCAN <range> ok partitions=<n> digest=<d> first=<hex> last=<hex> empty=<n> emptykeys=<hex>,... keys=<hex>,...[ truncated]
//   RSCAN <range> fail <message>                                    with --ranges: one line per range of SPEC, in SPEC
//                                                                  order, for getScanner(List.of(range)) (what partial
//                                                                  streaming, repair validation and cleanup read): as
//                                                                  the SCAN line (partitions= and digest= count the
//                                                                  partitions that are not empty, digest over the P
//                                                                  lines they would print) plus the key lists. <range>
//                                                                  is "(" + left + "," + right + "]" with the tokens'
//                                                                  text as given in SPEC, trimmed. A failure in one
//                                                                  range never stops the others
//   META ok <facts> | META fail <message>
//   VERIFY basic ok <summary> | VERIFY basic fail <message>           sstableverify without -e
//   VERIFY extended ok <summary> | VERIFY extended fail <message>     sstableverify -e, when asked
//   SCRUB ok good=<n> bad=<n> empty=<n> | SCRUB fail <message>       sstablescrub's work on a copy
//   END
// A failure in one sstable never stops the others: every step catches and reports.
// KEY LISTS: comma-separated lower-case key hex (an empty list is empty text, e.g. "emptykeys= keys=0a0b"); an empty
// partition has no rows, no static row, no range tombstone markers and a live partition deletion. A list stops at
// 100000 keys or 8000000 characters and the line then ends with the word "truncated" (the counts stay exact).
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.Directories;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.LivenessInfo;
import org.apache.cassandra.db.SerializationHeader;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.ColumnData;
import org.apache.cassandra.db.rows.ComplexColumnData;
import org.apache.cassandra.db.rows.RangeTombstoneBoundMarker;
import org.apache.cassandra.db.rows.RangeTombstoneBoundaryMarker;
import org.apache.cassandra.db.rows.RangeTombstoneMarker;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.Unfiltered;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;
import org.apache.cassandra.dht.IPartitioner;
import org.apache.cassandra.io.sstable.Component;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.ISSTableScanner;
import org.apache.cassandra.io.sstable.IVerifier;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.io.sstable.metadata.MetadataComponent;
import org.apache.cassandra.io.sstable.metadata.MetadataType;
import org.apache.cassandra.io.sstable.metadata.StatsMetadata;
import org.apache.cassandra.io.sstable.metadata.ValidationMetadata;
import org.apache.cassandra.io.util.File;
import org.apache.cassandra.schema.KeyspaceMetadata;
import org.apache.cassandra.schema.KeyspaceParams;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.SchemaTransformations;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.schema.TableMetadataRef;
import org.apache.cassandra.schema.Tables;
import org.apache.cassandra.schema.Types;
import org.apache.cassandra.schema.UserFunctions;
import org.apache.cassandra.schema.Views;
import org.apache.cassandra.utils.ByteBufferUtil;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.OutputHandler;

public final class Harness
{
    static final PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    static final String KS = "interop";

    public static void main(String[] args) throws Exception
    {
        if (args.length == 0)
            usage();
        List<String> rest = new ArrayList<>(List.of(args).subList(1, args.length));
        int code;
        switch (args[0])
        {
            case "check":
                Env.init(Env.compatFrom(rest));
                code = check(rest);
                break;
            case "merge":
                Env.init(Env.compatFrom(rest));
                code = merge(rest);
                break;
            case "live":
                code = Live.main(rest);
                break;
            case "write":
                code = Fixtures.main(rest);
                break;
            case "bulk":
                code = Bulk.main(rest);
                break;
            default:
                usage();
                code = 2;
        }
        out.flush();
        System.exit(code);
    }

    static void usage()
    {
        System.err.println("usage: Harness check [--extended] [--text] [--ranges SPEC] PATH... | write --out DIR [--compat 4|none]");
        System.exit(2);
    }

    /**
     * Splits a range list as sluice's token.ParseRanges reads it, "(l,r],(l,r]...", into {left, right} token texts
     * (trimmed); the tokens are read per sstable, by its partitioner. A malformed SPEC ends the run (exit 2).
     */
    static List<String[]> parseRanges(String spec)
    {
        List<String[]> ranges = new ArrayList<>();
        String s = spec.trim();
        if (s.isEmpty())
            badRanges(spec, "empty specification");
        while (!s.isEmpty())
        {
            if (s.charAt(0) != '(')
                badRanges(spec, "expected '(' at " + s);
            int end = s.indexOf(']');
            if (end < 0)
                badRanges(spec, "missing ']'");
            String body = s.substring(1, end);
            int comma = body.indexOf(',');
            if (comma < 0)
                badRanges(spec, "expected (left,right]");
            ranges.add(new String[]{ body.substring(0, comma).trim(), body.substring(comma + 1).trim() });
            s = s.substring(end + 1).trim();
            if (s.startsWith(","))
            {
                s = s.substring(1).trim();
                if (s.isEmpty())
                    badRanges(spec, "trailing comma");
            }
            else if (!s.isEmpty())
            {
                badRanges(spec, "expected ',' at " + s);
            }
        }
        return ranges;
    }

    static void badRanges(String spec, String why)
    {
        System.err.println("Harness: --ranges " + spec + ": " + why);
        System.exit(2);
    }

    /**
     * getScanner(List.of(range)) over each range: Cassandra 5.0 reads, for each range of Range.normalize, the section
     * of Data.db from the position of the first partition after the range's left token to the position of the first
     * partition after its right token (or the end of Data.db), sequentially (SSTableSimpleScanner); what partial
     * streaming, repair validation and cleanup read.
     */
    static void rangeScans(SSTableReader sstable, TableMetadata metadata, List<String[]> ranges)
    {
        for (String[] lr : ranges)
        {
            String text = "(" + lr[0] + "," + lr[1] + "]";
            org.apache.cassandra.dht.Range<org.apache.cassandra.dht.Token> range;
            try
            {
                org.apache.cassandra.dht.Token.TokenFactory tf = sstable.getPartitioner().getTokenFactory();
                range = new org.apache.cassandra.dht.Range<>(tf.fromString(lr[0]), tf.fromString(lr[1]));
            }
            catch (Throwable t)
            {
                out.println("RSCAN " + text + " fail bad range: " + chain(t));
                continue;
            }
            List<org.apache.cassandra.dht.Range<org.apache.cassandra.dht.Token>> normal = org.apache.cassandra.dht.Range.normalize(List.of(range));
            scan(sstable, metadata, false, () -> sstable.getScanner(normal), "RSCAN " + text, false, new Keys(), true);
        }
    }

    /** The keys of the partitions one read returned, in order; bounded (see KEY LISTS in the header). */
    static final class Keys
    {
        static final int MAX_KEYS = 100_000, MAX_CHARS = 8_000_000;
        final StringBuilder all = new StringBuilder(), empty = new StringBuilder();
        long listed;
        boolean truncated;

        void add(String key, boolean isEmpty)
        {
            if (truncated || listed >= MAX_KEYS || all.length() + empty.length() + 2 * key.length() + 2 > MAX_CHARS)
            {
                truncated = true;
                return;
            }
            listed++;
            (all.length() > 0 ? all.append(',') : all).append(key);
            if (isEmpty)
                (empty.length() > 0 ? empty.append(',') : empty).append(key);
        }

        String fields()
        {
            return "emptykeys=" + empty + " keys=" + all + (truncated ? " truncated" : "");
        }
    }

    static int check(List<String> args) throws Exception
    {
        boolean extended = args.remove("--extended");
        boolean text = args.remove("--text");
        List<String[]> ranges = null;
        int r = args.indexOf("--ranges");
        if (r >= 0)
        {
            if (r + 1 >= args.size())
                usage();
            ranges = parseRanges(args.get(r + 1));
            args.remove(r + 1);
            args.remove(r);
        }
        Keyspace ks = openKeyspace();
        int n = 0;
        for (String arg : args)
        {
            // PATH::SPEC scans that sstable's own ranges (as --ranges does for every path).
            String path = arg;
            List<String[]> own = ranges;
            int sep = arg.indexOf("::");
            if (sep >= 0)
            {
                path = arg.substring(0, sep);
                own = parseRanges(arg.substring(sep + 2));
            }
            out.println("SSTABLE " + path);
            checkOne(ks, path, extended, text, own, n++);
            out.println("END");
            out.flush();
        }
        return 0;
    }

    static int merge(List<String> args) throws Exception
    {
        int i = args.indexOf("--out");
        Files.createDirectories(Path.of(args.get(i + 1)));
        File out = new File(args.get(i + 1));
        args.remove(i + 1);
        args.remove(i);
        openKeyspace();
        // One table whose columns are the union of every sstable's header (a statement may touch only some).
        List<Descriptor> descs = new ArrayList<>();
        Map<ByteBuffer, org.apache.cassandra.db.marshal.AbstractType<?>> statics = new java.util.LinkedHashMap<>(), regulars = new java.util.LinkedHashMap<>();
        SerializationHeader.Component first = null;
        for (String path : args)
        {
            Descriptor d = Descriptor.fromFileWithComponent(new File(path), false).left;
            descs.add(d);
            SerializationHeader.Component h = (SerializationHeader.Component) d.getMetadataSerializer().deserialize(d, EnumSet.of(MetadataType.HEADER)).get(MetadataType.HEADER);
            if (first == null)
                first = h;
            statics.putAll(h.getStaticColumns());
            regulars.putAll(h.getRegularColumns());
        }
        TableMetadata.Builder b = TableMetadata.builder(KS, "merged").partitioner(FBUtilities.newPartitioner(descs.get(0)));
        statics.forEach((k, v) -> b.addStaticColumn(ColumnIdentifier.getInterned(UTF8Type.instance.getString(k), true), v));
        regulars.forEach((k, v) -> b.addRegularColumn(ColumnIdentifier.getInterned(UTF8Type.instance.getString(k), true), v));
        b.addPartitionKeyColumn("PartitionKey", first.getKeyType());
        for (int c = 0; c < first.getClusteringTypes().size(); c++)
            b.addClusteringColumn("clustering" + (c > 0 ? c : ""), first.getClusteringTypes().get(c));
        TableMetadata metadata = b.build();
        TableMetadataRef ref = TableMetadataRef.forOfflineTools(metadata);
        List<SSTableReader> readers = new ArrayList<>();
        List<ISSTableScanner> scanners = new ArrayList<>();
        long keys = 0;
        for (Descriptor d : descs)
        {
            SSTableReader r = SSTableReader.openNoValidation(null, d, ref);
            readers.add(r);
            scanners.add(r.getScanner());
            keys += r.estimatedKeys();
        }
        Descriptor target = new Descriptor(out, KS, "merged", new org.apache.cassandra.io.sstable.SequenceBasedSSTableId(1), descs.get(0).getFormat());
        SerializationHeader header = SerializationHeader.make(metadata, readers);
        long partitions = 0;
        try (org.apache.cassandra.db.partitions.UnfilteredPartitionIterator merged =
                 org.apache.cassandra.db.partitions.UnfilteredPartitionIterators.merge(scanners, org.apache.cassandra.db.partitions.UnfilteredPartitionIterators.MergeListener.NOOP);
             org.apache.cassandra.io.sstable.SSTableTxnWriter w =
                 org.apache.cassandra.io.sstable.SSTableTxnWriter.create(ref, target, keys, 0, null, false, header, java.util.Collections.emptyList(), null))
        {
            while (merged.hasNext())
            {
                try (UnfilteredRowIterator p = merged.next())
                {
                    w.append(p);
                    partitions++;
                }
            }
            w.finish(false);
        }
        Harness.out.println("MERGED " + target.fileFor(org.apache.cassandra.io.sstable.format.SSTableFormat.Components.DATA) + " partitions=" + partitions);
        return 0;
    }

    /** An empty keyspace to hang one ColumnFamilyStore per sstable on (the verifier wants one). */
    static Keyspace openKeyspace()
    {
        Schema.instance.transform(SchemaTransformations.addKeyspace(KeyspaceMetadata.create(KS, KeyspaceParams.simple(1), Tables.none(),
                                                                                            Views.none(), Types.none(), UserFunctions.none()), true));
        return Keyspace.openWithoutSSTables(KS);
    }

    static void checkOne(Keyspace ks, String path, boolean extended, boolean text, List<String[]> ranges, int n)
    {
        Descriptor desc;
        TableMetadata metadata;
        SSTableReader sstable;
        try
        {
            desc = Descriptor.fromFileWithComponent(new File(path), false).left;
            metadata = metadataFromHeader(desc, "t" + n);
            sstable = SSTableReader.openNoValidation(null, desc, TableMetadataRef.forOfflineTools(metadata));
        }
        catch (Throwable t)
        {
            out.println("READ fail open: " + chain(t));
            return;
        }
        long[] scanned = read(sstable, metadata, text);
        if (ranges != null)
            rangeScans(sstable, metadata, ranges);
        meta(desc, sstable, scanned);
        ColumnFamilyStore cfs;
        try
        {
            File dir = new File(Files.createTempDirectory(Env.dir, "cfs").toString());
            Directories directories = new Directories(metadata, Set.of(new Directories.DataDirectory(dir)));
            cfs = ColumnFamilyStore.createColumnFamilyStore(ks, metadata.name, TableMetadataRef.forOfflineTools(metadata),
                                                            directories, false, false, true);
        }
        catch (Throwable t)
        {
            out.println("VERIFY basic fail no table store: " + chain(t));
            return;
        }
        verify(cfs, sstable, false);
        if (extended)
            verify(cfs, sstable, true);
        scrub(cfs, path, metadata);
        sstable.selfRef().release();
    }

    /**
     * sstablescrub's work (IScrubber, checking data), on a copy of the sstable so the original stays:
     * `SCRUB ok good=<n> bad=<n> empty=<n>` (partitions written again, dropped as unreadable, dropped as
     * empty) or `SCRUB fail <message>`.
     */
    static void scrub(ColumnFamilyStore cfs, String path, TableMetadata metadata)
    {
        try
        {
            java.nio.file.Path src = Path.of(path);
            String prefix = src.getFileName().toString();
            prefix = prefix.substring(0, prefix.length() - "Data.db".length());
            java.nio.file.Path dir = Files.createTempDirectory(Env.dir, "scrub");
            try (java.util.stream.Stream<java.nio.file.Path> files = Files.list(src.getParent()))
            {
                for (java.nio.file.Path f : (Iterable<java.nio.file.Path>) files::iterator)
                    if (f.getFileName().toString().startsWith(prefix))
                        Files.copy(f, dir.resolve(f.getFileName()));
            }
            Descriptor desc = Descriptor.fromFileWithComponent(new File(dir.resolve(src.getFileName()).toString()), false).left;
            SSTableReader copy = SSTableReader.openNoValidation(null, desc, TableMetadataRef.forOfflineTools(metadata));
            StringBuilder log = new StringBuilder();
            OutputHandler handler = new OutputHandler()
            {
                public void output(String msg) { }
                public void debug(String msg) { }
                public void warn(String msg) { log.append("WARN ").append(msg).append(" | "); }
                public void warn(Throwable th, String msg) { log.append("WARN ").append(msg).append(": ").append(chain(th)).append(" | "); }
            };
            org.apache.cassandra.io.sstable.IScrubber.ScrubResult r;
            try (org.apache.cassandra.db.lifecycle.LifecycleTransaction txn = org.apache.cassandra.db.lifecycle.LifecycleTransaction.offline(org.apache.cassandra.db.compaction.OperationType.SCRUB, copy);
                 org.apache.cassandra.io.sstable.IScrubber scrubber = copy.descriptor.getFormat().getScrubber(cfs, txn, handler, org.apache.cassandra.io.sstable.IScrubber.options().checkData(true).build()))
            {
                r = scrubber.scrubWithResult();
            }
            out.println("SCRUB ok good=" + r.goodPartitions + " bad=" + r.badPartitions + " empty=" + r.emptyPartitions + (log.length() > 0 ? " warnings=" + log.toString().replace('\n', ' ') : ""));
        }
        catch (Throwable t)
        {
            out.println("SCRUB fail " + chain(t));
        }
    }

    /** As sstabledump's Util.metadataFromSSTable, with a table name of our own. */
    static TableMetadata metadataFromHeader(Descriptor desc, String table) throws Exception
    {
        Map<MetadataType, MetadataComponent> m = desc.getMetadataSerializer().deserialize(desc, EnumSet.of(MetadataType.STATS, MetadataType.HEADER));
        SerializationHeader.Component header = (SerializationHeader.Component) m.get(MetadataType.HEADER);
        IPartitioner partitioner = FBUtilities.newPartitioner(desc);
        TableMetadata.Builder b = TableMetadata.builder(KS, table).partitioner(partitioner);
        header.getStaticColumns().forEach((k, v) -> b.addStaticColumn(ColumnIdentifier.getInterned(UTF8Type.instance.getString(k), true), v));
        header.getRegularColumns().forEach((k, v) -> b.addRegularColumn(ColumnIdentifier.getInterned(UTF8Type.instance.getString(k), true), v));
        b.addPartitionKeyColumn("PartitionKey", header.getKeyType());
        for (int i = 0; i < header.getClusteringTypes().size(); i++)
            b.addClusteringColumn("clustering" + (i > 0 ? i : ""), header.getClusteringTypes().get(i));
        return b.build();
    }

    /** Scans every partition; returns {partitions, min cell/liveness timestamp, max timestamp} or null on failure. */
    static long[] read(SSTableReader sstable, TableMetadata metadata, boolean text)
    {
        // The index-driven read: the scanner over the whole ring as a token range starts at the first partition's
        // index position (what queries, range reads, streaming and repair use).
        org.apache.cassandra.dht.Token min = sstable.getPartitioner().getMinimumToken();
        Keys readKeys = new Keys();
        long[] indexed = scan(sstable, metadata, text, () -> sstable.getScanner(List.of(new org.apache.cassandra.dht.Range<>(min, min))), "READ", true, readKeys, false);
        if (indexed != null)
            out.println("READKEYS " + readKeys.fields());
        // The sequential read: getScanner() reads Data.db from position 0 to its end without the index (what
        // compaction, sstabledump and sstablepartitions use in 5.0).
        Keys scanKeys = new Keys();
        if (scan(sstable, metadata, false, sstable::getScanner, "SCAN", false, scanKeys, false) != null)
            out.println("SCANKEYS " + scanKeys.fields());
        return indexed;
    }

    static String ridxFailure;
    static long ridxChecked;

    /**
     * Reads a partition again through its row index (BIG promoted index, BTI Rows.db): reversed, which walks the
     * index blocks backwards, and forward from its middle row, which seeks through the index. Both must return the
     * rows the sequential partition read returned. Returns a failure or null.
     */
    static String rowIndexCheck(SSTableReader sstable, TableMetadata metadata, org.apache.cassandra.db.DecoratedKey key, Canon forward)
    {
        String k = hex(key.getKey());
        try
        {
            org.apache.cassandra.db.filter.ColumnFilter all = org.apache.cassandra.db.filter.ColumnFilter.all(metadata);
            List<String> rev = rowsOf(sstable.rowIterator(key, org.apache.cassandra.db.Slices.ALL, all, true, org.apache.cassandra.io.sstable.SSTableReadsListener.NOOP_LISTENER), metadata);
            java.util.Collections.reverse(rev);
            if (!rev.equals(forward.rowTexts))
                return "partition " + k + ": the reversed read returns " + rev.size() + " rows that differ from the " + forward.rowTexts.size() + " of the forward read";
            int mid = forward.rowTexts.size() / 2;
            org.apache.cassandra.db.Slices from = org.apache.cassandra.db.Slices.with(metadata.comparator,
                org.apache.cassandra.db.Slice.make(org.apache.cassandra.db.ClusteringBound.inclusiveStartOf(forward.clusterings.get(mid)), org.apache.cassandra.db.ClusteringBound.TOP));
            List<String> tailRows = rowsOf(sstable.rowIterator(key, from, all, false, org.apache.cassandra.io.sstable.SSTableReadsListener.NOOP_LISTENER), metadata);
            if (!tailRows.equals(forward.rowTexts.subList(mid, forward.rowTexts.size())))
                return "partition " + k + ": the read from row " + mid + " returns " + tailRows.size() + " rows that differ from the forward read's last " + (forward.rowTexts.size() - mid);
            return null;
        }
        catch (Throwable t)
        {
            return "partition " + k + ": " + chain(t);
        }
    }

    static List<String> rowsOf(UnfilteredRowIterator it, TableMetadata metadata)
    {
        try (it)
        {
            Canon c = new Canon(metadata, new long[]{ Long.MAX_VALUE, Long.MIN_VALUE });
            while (it.hasNext())
            {
                Unfiltered u = it.next();
                if (u.isRow())
                    c.row("row", (Row) u);
            }
            return c.rowTexts;
        }
    }

    /**
     * One read: prints the P lines when print, then `tag ok ...` (with keys' fields on the same line when
     * keysInline) or `tag fail ...`; collects every partition's key into keys. Returns null on failure.
     */
    static long[] scan(SSTableReader sstable, TableMetadata metadata, boolean text, java.util.function.Supplier<ISSTableScanner> open, String tag, boolean print,
                       Keys keys, boolean keysInline)
    {
        if (print)
        {
            ridxFailure = null;
            ridxChecked = 0;
        }
        long partitions = 0, empty = 0;
        long[] ts = { Long.MAX_VALUE, Long.MIN_VALUE };
        String firstKey = null, lastKey = null;
        MessageDigest all;
        try
        {
            all = MessageDigest.getInstance("SHA-256");
        }
        catch (Exception e)
        {
            throw new RuntimeException(e);
        }
        try (ISSTableScanner scanner = open.get())
        {
            while (scanner.hasNext())
            {
                try (UnfilteredRowIterator p = scanner.next())
                {
                    Canon c = new Canon(metadata, ts);
                    String key = hex(p.partitionKey().getKey());
                    c.line("partition " + key + " del=" + del(p.partitionLevelDeletion()));
                    c.seen(p.partitionLevelDeletion().markedForDeleteAt());
                    // A filler row (sluice's: nothing but cells written at Long.MIN_VALUE + 1 that
                    // expired long ago) is nothing: it is left out of the canonical content.
                    boolean staticFiller = !p.staticRow().isEmpty() && fillerRow(p.staticRow());
                    if (!p.staticRow().isEmpty() && !staticFiller)
                        c.row("static", p.staticRow());
                    while (p.hasNext())
                    {
                        Unfiltered u = p.next();
                        if (u.isRow() && fillerRow((Row) u))
                            continue;
                        if (u.isRow())
                            c.row("row", (Row) u);
                        else
                            c.marker((RangeTombstoneMarker) u);
                    }
                    boolean isEmpty = p.partitionLevelDeletion().isLive() && (p.staticRow().isEmpty() || staticFiller) && c.rows == 0 && c.markers == 0;
                    keys.add(key, isEmpty);
                    if (isEmpty)
                    {
                        // An empty partition: nothing Cassandra writes, and what compaction drops (an
                        // empty partition is never appended). sluice fills the gaps a zero-copy
                        // sstable's runs leave with such partitions (filler partitions, indexed).
                        empty++;
                        continue;
                    }
                    if (firstKey == null)
                        firstKey = key;
                    lastKey = key;
                    if (print && ridxFailure == null && c.rowTexts.size() >= 2)
                        ridxFailure = rowIndexCheck(sstable, metadata, p.partitionKey(), c);
                    if (print && c.rowTexts.size() >= 2)
                        ridxChecked++;
                    String line = "P " + key + " " + p.partitionKey().getToken() + " " + c.digest() + " rows=" + c.rows + " markers=" + c.markers + " cells=" + c.cells;
                    all.update((line + "\n").getBytes(StandardCharsets.UTF_8));
                    if (print)
                        out.println(line);
                    if (text)
                        for (String l : c.lines)
                            out.println("T " + l);
                    partitions++;
                }
            }
        }
        catch (Throwable t)
        {
            out.println(tag + " fail after " + partitions + " partitions: " + chain(t));
            return null;
        }
        if (print)
            out.println(ridxFailure == null ? "RIDX ok partitions=" + ridxChecked : "RIDX fail " + ridxFailure);
        out.println(tag + " ok partitions=" + partitions + " digest=" + HexFormat.of().formatHex(all.digest(), 0, 16) + " first=" + firstKey + " last=" + lastKey + " empty=" + empty
                    + (keysInline ? " " + keys.fields() : ""));
        // The histogram counts every partition the file holds, filler partitions (empty) too.
        return new long[]{ partitions + empty, ts[0], ts[1] };
    }

    /** A row of a sluice filler partition: no liveness, no deletion, only expired cells written at Long.MIN_VALUE + 1. */
    static boolean fillerRow(Row r)
    {
        if (!r.primaryKeyLivenessInfo().isEmpty() || !r.deletion().isLive())
            return false;
        boolean any = false;
        for (Cell<?> cell : r.cells())
        {
            if (cell.timestamp() != Long.MIN_VALUE + 1 || !cell.isExpiring() || cell.isLive(FBUtilities.nowInSeconds()))
                return false;
            any = true;
        }
        return any;
    }

    /**
     * Deserializes every metadata component and checks the facts Cassandra relies on against the scan: the
     * partition-size histogram counts every partition, min/max timestamps bound every timestamp seen, the
     * first/last keys (where the version stores them) are the scanned ones, the partitioner is the reader's.
     */
    static void meta(Descriptor desc, SSTableReader sstable, long[] scanned)
    {
        try
        {
            Map<MetadataType, MetadataComponent> m = desc.getMetadataSerializer().deserialize(desc, EnumSet.allOf(MetadataType.class));
            StatsMetadata stats = (StatsMetadata) m.get(MetadataType.STATS);
            ValidationMetadata validation = (ValidationMetadata) m.get(MetadataType.VALIDATION);
            List<String> problems = new ArrayList<>();
            if (validation != null && !validation.partitioner.equals(sstable.getPartitioner().getClass().getCanonicalName()))
                problems.add("partitioner " + validation.partitioner);
            long histogramCount = stats.estimatedPartitionSize.count();
            if (scanned != null)
            {
                if (histogramCount != scanned[0])
                    problems.add("partition size histogram counts " + histogramCount + " partitions, scan found " + scanned[0]);
                if (scanned[1] != Long.MAX_VALUE && (stats.minTimestamp > scanned[1] || stats.maxTimestamp < scanned[2]))
                    problems.add("timestamps [" + stats.minTimestamp + "," + stats.maxTimestamp + "] do not bound scanned [" + scanned[1] + "," + scanned[2] + "]");
            }
            if (stats.firstKey != null && !stats.firstKey.equals(sstable.getFirst().getKey()))
                problems.add("stats first key " + hex(stats.firstKey) + " != reader first " + hex(sstable.getFirst().getKey()));
            if (stats.lastKey != null && !stats.lastKey.equals(sstable.getLast().getKey()))
                problems.add("stats last key " + hex(stats.lastKey) + " != reader last " + hex(sstable.getLast().getKey()));
            String facts = "version=" + desc.version + " format=" + desc.getFormat().name() + " partitions=" + histogramCount
                           + " rows=" + stats.totalRows + " minTimestamp=" + stats.minTimestamp + " maxTimestamp=" + stats.maxTimestamp
                           + " level=" + stats.sstableLevel + " repairedAt=" + stats.repairedAt
                           + " first=" + hex(sstable.getFirst().getKey()) + " last=" + hex(sstable.getLast().getKey());
            if (problems.isEmpty())
                out.println("META ok " + facts);
            else
                out.println("META fail " + String.join("; ", problems) + " (" + facts + ")");
        }
        catch (Throwable t)
        {
            out.println("META fail " + chain(t));
        }
    }

    /** Cassandra's verifier as `sstableverify [-e]` runs it (offline, no disk failure policy, no token check). */
    static void verify(ColumnFamilyStore cfs, SSTableReader sstable, boolean extended)
    {
        StringBuilder log = new StringBuilder();
        OutputHandler handler = new OutputHandler()
        {
            public void output(String msg) { log.append(msg).append(" | "); }
            public void debug(String msg) { }
            public void warn(String msg) { log.append("WARN ").append(msg).append(" | "); }
            public void warn(Throwable th, String msg) { log.append("WARN ").append(msg).append(" | "); }
        };
        try
        {
            IVerifier.Options options = IVerifier.options().invokeDiskFailurePolicy(false).extendedVerification(extended).build();
            try (IVerifier verifier = sstable.getVerifier(cfs, handler, true, options))
            {
                verifier.verify();
            }
            String last = log.toString();
            int cut = last.lastIndexOf(" | ", last.length() - 4);
            out.println("VERIFY " + (extended ? "extended" : "basic") + " ok " + (cut >= 0 ? last.substring(cut + 3, last.length() - 3) : last));
        }
        catch (Throwable t)
        {
            out.println("VERIFY " + (extended ? "extended" : "basic") + " fail " + chain(t));
        }
    }

    static String chain(Throwable t)
    {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause())
        {
            if (sb.length() > 0)
                sb.append(" <- ");
            sb.append(c.getClass().getSimpleName()).append(": ").append(String.valueOf(c.getMessage()).replace('\n', ' '));
            if (c.getCause() == c)
                break;
        }
        return sb.toString();
    }

    static String hex(ByteBuffer b)
    {
        return b == null ? "-" : ByteBufferUtil.bytesToHex(b);
    }

    static String del(DeletionTime d)
    {
        return d.isLive() ? "live" : d.markedForDeleteAt() + "@" + d.localDeletionTime();
    }

    /** The canonical text of one partition as Cassandra sees it; its digest is what the suite compares. */
    static final class Canon
    {
        final TableMetadata metadata;
        final long[] ts;
        final List<String> lines = new ArrayList<>();
        long rows, markers, cells;

        Canon(TableMetadata metadata, long[] ts)
        {
            this.metadata = metadata;
            this.ts = ts;
        }

        void line(String s)
        {
            lines.add(s);
        }

        void seen(long t)
        {
            if (t == LivenessInfo.NO_TIMESTAMP)
                return;
            ts[0] = Math.min(ts[0], t);
            ts[1] = Math.max(ts[1], t);
        }

        final List<String> rowTexts = new ArrayList<>();
        final List<org.apache.cassandra.db.Clustering<?>> clusterings = new ArrayList<>();

        void row(String kind, Row r)
        {
            int from = lines.size();
            rowBody(kind, r);
            if (!r.isStatic())
            {
                rowTexts.add(String.join("\n", lines.subList(from, lines.size())));
                clusterings.add(r.clustering());
            }
        }

        void rowBody(String kind, Row r)
        {
            rows++;
            StringBuilder sb = new StringBuilder(kind).append(" [");
            for (int i = 0; i < r.clustering().size(); i++)
                sb.append(i > 0 ? ":" : "").append(hex(r.clustering().bufferAt(i)));
            LivenessInfo li = r.primaryKeyLivenessInfo();
            seen(li.timestamp());
            sb.append("] liveness=").append(li.isEmpty() ? "empty" : li.timestamp() + "/" + li.ttl() + "/" + li.localExpirationTime());
            sb.append(" del=").append(del(r.deletion().time())).append(r.deletion().isShadowable() ? "s" : "");
            seen(r.deletion().time().markedForDeleteAt());
            line(sb.toString());
            for (ColumnData cd : r)
            {
                if (cd instanceof ComplexColumnData)
                {
                    ComplexColumnData ccd = (ComplexColumnData) cd;
                    line("  complex " + cd.column().name + " del=" + del(ccd.complexDeletion()));
                    seen(ccd.complexDeletion().markedForDeleteAt());
                    for (Cell<?> c : ccd)
                        cell(c);
                }
                else
                {
                    cell((Cell<?>) cd);
                }
            }
        }

        void cell(Cell<?> c)
        {
            cells++;
            seen(c.timestamp());
            line("  cell " + c.column().name + (c.path() == null ? "" : " path=" + hex(c.path().get(0)))
                 + " ts=" + c.timestamp() + " ttl=" + c.ttl() + " ldt=" + c.localDeletionTime()
                 + (c.isTombstone() ? " tombstone" : "") + " value=" + hex(c.buffer()));
        }

        void marker(RangeTombstoneMarker m)
        {
            markers++;
            StringBuilder sb = new StringBuilder("marker ").append(m.clustering().kind()).append(" [");
            for (int i = 0; i < m.clustering().size(); i++)
                sb.append(i > 0 ? ":" : "").append(hex(m.clustering().bufferAt(i)));
            sb.append("]");
            if (m.isBoundary())
            {
                RangeTombstoneBoundaryMarker b = (RangeTombstoneBoundaryMarker) m;
                sb.append(" end=").append(del(b.endDeletionTime())).append(" start=").append(del(b.startDeletionTime()));
                seen(b.endDeletionTime().markedForDeleteAt());
                seen(b.startDeletionTime().markedForDeleteAt());
            }
            else
            {
                DeletionTime d = ((RangeTombstoneBoundMarker) m).deletionTime();
                sb.append(" del=").append(del(d));
                seen(d.markedForDeleteAt());
            }
            line(sb.toString());
        }

        String digest() throws Exception
        {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (String l : lines)
                md.update((l + "\n").getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(md.digest(), 0, 16);
        }
    }
}
