// Package descriptor owns sstable naming: the `<version>-<id>-<format>-<Component>` file names
// (integer generations and the UUID-style ids of Cassandra 4.1+), the component set of each
// format, TOC.txt, and the `<keyspace>/<table>-<tableid>/` directory layout.
//
// It is pure code apart from the small helpers that list a directory (NextGeneration) and
// read a TOC file.
package descriptor
