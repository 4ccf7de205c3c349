package stream

import (
	"context"
	"crypto/tls"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/sluicedb/sluice/sstable/token"
)

// Several sessions at once. One session moves its sstables one after another over one
// connection: one core encrypts on the sender and one decrypts on the receiver, and the
// pipeline waits wherever one stage does (a cold read, a commit). Cassandra keeps two files in
// flight for the same reason. FetchSessions cuts the ranges into contiguous groups and runs a
// session per group, each its own connection and its own receive pipeline, into one
// directory: the generation allocator and the install locks already serve concurrent
// installs there, and each group keeps its own resume record (the record is keyed by the
// ranges), so a resumed fetch with the same number of sessions picks up every one of them.
// The cost: a parent sstable whose partitions fall in several groups arrives as one child per
// group.

// FetchSessions fetches req with up to n sessions at once, over disjoint groups of req.Ranges
// (SplitRanges), and merges their results: SSTables, Skipped, Failed and Warnings of every
// session, BytesReceived summed, Wall the whole call's. Its error joins the sessions' errors.
// onProgress, if not nil, sees the sessions' progress summed, from one goroutine at a time.
func FetchSessions(ctx context.Context, cfg Config, tlsConf *tls.Config, req FetchRequest, n int, onProgress func(SessionStatus)) (*FetchResult, error) {
	groups := SplitRanges(req.Ranges, n)
	if len(groups) <= 1 {
		return Fetch(ctx, cfg, tlsConf, req, onProgress)
	}
	start := time.Now()
	results := make([]*FetchResult, len(groups))
	errs := make([]error, len(groups))
	var mu sync.Mutex
	statuses := make([]SessionStatus, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		r := req
		r.Ranges = g
		var progress func(SessionStatus)
		if onProgress != nil {
			progress = func(s SessionStatus) {
				mu.Lock()
				defer mu.Unlock()
				statuses[i] = s
				onProgress(sumStatus(statuses))
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Fetch(ctx, cfg, tlsConf, r, progress)
		}()
	}
	wg.Wait()
	out := &FetchResult{}
	for _, res := range results {
		if res == nil {
			continue
		}
		out.SSTables = append(out.SSTables, res.SSTables...)
		out.Skipped = append(out.Skipped, res.Skipped...)
		out.Failed = append(out.Failed, res.Failed...)
		out.Warnings = append(out.Warnings, res.Warnings...)
		out.BytesReceived += res.BytesReceived
	}
	out.Wall = time.Since(start)
	return out, errors.Join(errs...)
}

// sumStatus is the sessions' progress as one: files and bytes summed, the first session's
// names.
func sumStatus(ss []SessionStatus) SessionStatus {
	out := ss[0]
	out.FilesDone, out.FilesTotal, out.BytesDone, out.BytesTotal, out.RateBytes = 0, 0, 0, 0, 0
	for _, s := range ss {
		out.FilesDone += s.FilesDone
		out.FilesTotal += s.FilesTotal
		out.BytesDone += s.BytesDone
		out.BytesTotal += s.BytesTotal
		out.RateBytes += s.RateBytes
	}
	return out
}

// SplitRanges cuts a Murmur3 range set into at most n groups of contiguous ranges (in token
// order) of about equal width, which for Murmur3's uniform tokens is about equal data: ranges
// stay whole while there are at least n of them; otherwise the widest are halved until there
// are n. Other partitioners' sets, n < 2 and empty sets come back as one group.
func SplitRanges(rs token.RangeSet, n int) []token.RangeSet {
	if n < 2 || len(rs) == 0 {
		return []token.RangeSet{rs}
	}
	for _, r := range rs {
		if r.Left.Kind != token.KindMurmur3 || r.Right.Kind != token.KindMurmur3 {
			return []token.RangeSet{rs}
		}
	}
	pieces := slices.Clone(rs)
	slices.SortStableFunc(pieces, func(a, b token.Range) int { return a.Left.Compare(b.Left) })
	for len(pieces) < n {
		w := 0
		for i := range pieces {
			if pieces[i].Width() > pieces[w].Width() {
				w = i
			}
		}
		if pieces[w].Width() < 2 {
			break
		}
		l, r := halve(pieces[w])
		pieces = slices.Insert(slices.Delete(pieces, w, w+1), w, l, r)
	}
	groups := min(n, len(pieces))
	total := 0.0
	for _, p := range pieces {
		total += p.Width()
	}
	out := make([]token.RangeSet, 0, groups)
	var cur token.RangeSet
	acc := 0.0
	for i, p := range pieces {
		cur = append(cur, p)
		acc += p.Width()
		left := len(pieces) - i - 1   // pieces after this one
		need := groups - len(out) - 1 // groups still to fill after cur
		if need > 0 && (acc >= total*float64(len(out)+1)/float64(groups) || left == need) {
			out = append(out, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// halve cuts a Murmur3 range at its middle token.
func halve(r token.Range) (token.Range, token.Range) {
	w := uint64(r.Right.Long) - uint64(r.Left.Long) // 0: the whole ring, 2^64 tokens
	step := w / 2
	if w == 0 {
		step = 1 << 63
	}
	mid := r.Left
	mid.Long = int64(uint64(r.Left.Long) + step)
	return token.Range{Left: r.Left, Right: mid}, token.Range{Left: mid, Right: r.Right}
}
