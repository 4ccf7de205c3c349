//go:build race

package compress

// raceEnabled skips allocation counts, which the race detector changes (sync.Pool drops items).
const raceEnabled = true
