package descriptor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/sstable/version"
)

// Component is a component file suffix, e.g. "Data.db".
type Component string

const (
	Data            Component = "Data.db"
	Index           Component = "Index.db"
	Summary         Component = "Summary.db"
	Filter          Component = "Filter.db"
	Statistics      Component = "Statistics.db"
	CompressionInfo Component = "CompressionInfo.db"
	Digest          Component = "Digest.crc32"
	CRC             Component = "CRC.db"
	TOC             Component = "TOC.txt"
	Partitions      Component = "Partitions.db"
	Rows            Component = "Rows.db"
)

// ErrBadName reports a path that is not an sstable component or descriptor prefix.
var ErrBadName = errors.New("not an sstable name")

// Descriptor identifies one sstable: its directory, version and id.
type Descriptor struct {
	Dir     string
	Version version.Version
	ID      string // integer generation ("1") or UUID-style id ("3gll_1kke_3qdyo2i4kzfpt3cqcy")
}

var (
	genRE  = regexp.MustCompile(`^[1-9][0-9]*$`)
	uuidRE = regexp.MustCompile(`^[0-9a-z]{4}_[0-9a-z]{4}_[0-9a-z]{18}$`)
)

// Parse accepts a component path ("dir/nb-1-big-Data.db") or a descriptor prefix
// ("dir/nb-1-big") and returns the descriptor and the component ("" for a prefix).
func Parse(path string) (Descriptor, Component, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	dir = filepath.Clean(dir)
	parts := strings.SplitN(base, "-", 4)
	if len(parts) < 3 {
		return Descriptor{}, "", fmt.Errorf("%w: %q (want <version>-<id>-<format>[-Component])", ErrBadName, path)
	}
	f, err := version.ParseFormat(parts[2])
	if err != nil {
		return Descriptor{}, "", fmt.Errorf("%w: %q: %v", ErrBadName, path, err)
	}
	v, err := version.Parse(f, parts[0])
	if err != nil {
		return Descriptor{}, "", fmt.Errorf("%q: %w", path, err)
	}
	id := parts[1]
	if !genRE.MatchString(id) && !uuidRE.MatchString(id) {
		return Descriptor{}, "", fmt.Errorf("%w: %q: bad sstable id %q", ErrBadName, path, id)
	}
	var c Component
	if len(parts) == 4 {
		c = Component(parts[3])
	}
	return Descriptor{Dir: dir, Version: v, ID: id}, c, nil
}

// Prefix is the path without the component: "dir/nb-1-big".
func (d Descriptor) Prefix() string {
	return filepath.Join(d.Dir, d.Version.Name+"-"+d.ID+"-"+d.Version.Format.String())
}

// Path is the file name of component c.
func (d Descriptor) Path(c Component) string { return d.Prefix() + "-" + string(c) }

// Filename is the base name of component c, with no directory.
func (d Descriptor) Filename(c Component) string {
	return d.Version.Name + "-" + d.ID + "-" + d.Version.Format.String() + "-" + string(c)
}

func (d Descriptor) String() string { return d.Prefix() }

// Components is the full component set of a format for a compressed or uncompressed sstable,
// in the order sluice writes them (Data first, TOC last).
func Components(f version.Format, compressed bool) []Component {
	var cs []Component
	if f == version.BTI {
		cs = []Component{Data, Partitions, Rows, Statistics, Filter}
	} else {
		cs = []Component{Data, Index, Summary, Statistics, Filter}
	}
	if compressed {
		cs = append(cs, CompressionInfo)
	} else {
		cs = append(cs, CRC)
	}
	return append(cs, Digest, TOC)
}

// ParseTOC reads TOC.txt: one component name per line. Order is not significant.
func ParseTOC(b []byte) ([]Component, error) {
	var out []Component
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		if strings.ContainsAny(line, "/\\\x00") {
			return nil, fmt.Errorf("TOC.txt line %d: bad component name %q", i+1, line)
		}
		out = append(out, Component(line))
	}
	if len(out) == 0 {
		return nil, errors.New("TOC.txt lists no components")
	}
	return out, nil
}

// AppendTOC writes components one per line, each '\n'-terminated as PrintWriter.println does.
func AppendTOC(b []byte, cs []Component) []byte {
	for _, c := range cs {
		b = append(b, c...)
		b = append(b, '\n')
	}
	return b
}

// TableDir extracts keyspace and table from a Cassandra data path ".../<ks>/<table>-<id>/".
// ok is false when the directory does not follow the layout.
func TableDir(dir string) (keyspace, table, tableID string, ok bool) {
	dir = filepath.Clean(dir)
	base := filepath.Base(dir)
	i := strings.LastIndexByte(base, '-')
	if i <= 0 {
		return "", "", "", false
	}
	table, tableID = base[:i], base[i+1:]
	if len(tableID) != 32 {
		return "", "", "", false
	}
	if _, err := strconv.ParseUint(tableID[:16], 16, 64); err != nil {
		return "", "", "", false
	}
	ks := filepath.Base(filepath.Dir(dir))
	if ks == "." || ks == "/" {
		return "", "", "", false
	}
	return ks, table, tableID, true
}

// List returns the descriptors of every sstable in dir with a TOC.txt or a Data.db,
// ordered by version then id. Files that are not sstable components are ignored.
func List(dir string) ([]Descriptor, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]Descriptor{}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, "-"+string(TOC)) && !strings.HasSuffix(name, "-"+string(Data)) {
			continue
		}
		d, _, err := Parse(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		seen[d.Prefix()] = d
	}
	out := make([]Descriptor, 0, len(seen))
	for _, d := range seen {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			a, errA := strconv.Atoi(out[i].ID)
			b, errB := strconv.Atoi(out[j].ID)
			if errA == nil && errB == nil {
				return a < b
			}
			return out[i].ID < out[j].ID
		}
		return out[i].Version.Name < out[j].Version.Name
	})
	return out, nil
}

// genInName finds "<version>-<generation>-<format>-" anywhere in a file name, so that the
// generations of temporary files (whatever prefix the installer gives them) count too.
var genInName = regexp.MustCompile(`(?:^|[^a-z])[a-z]{2}-([1-9][0-9]{0,17})-(?:big|bti)-`)

// NextGeneration returns one more than the largest integer generation of any file in dir,
// temporary files included so that an interrupted writer's id is never reused; 1 for an empty
// or missing directory.
func NextGeneration(dir string) (int, error) {
	// Names only, unsorted, and the pattern tried only on names that can hold it: a receiver
	// of many sstables calls this once per sstable in a directory that keeps growing.
	var names []string
	d, err := os.Open(dir)
	if err == nil {
		names, err = d.Readdirnames(-1)
		d.Close()
	}
	if err != nil && !os.IsNotExist(err) {
		return 0, err
	}
	max := 0
	for _, name := range names {
		if !strings.Contains(name, "-big-") && !strings.Contains(name, "-bti-") {
			continue
		}
		m := genInName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if g, err := strconv.Atoi(m[1]); err == nil && g > max {
			max = g
		}
	}
	return max + 1, nil
}
