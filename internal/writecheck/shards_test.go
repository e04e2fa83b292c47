package writecheck

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

func TestHashSlotIsTheClusterSlot(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":            12739, // CRC16/XMODEM's check value 0x31C3
		"foo":                  12182,
		"user1000":             3443,
		"{user1000}.following": 3443, // the hash tag alone
		"foo{}{bar}":           8363, // an empty first tag: the whole key
		"foo{{bar}}zap":        4015, // the tag is "{bar"
		"":                     0,
	} {
		if got := HashSlot(key); got != want {
			t.Errorf("HashSlot(%q) = %d, want %d", key, got, want)
		}
	}
}

func FuzzTagInSlotsLandsInTheRanges(f *testing.F) {
	f.Add("p-0", 0, 5460)
	f.Add("shard-2", 16383, 16383)
	f.Add("", 100, 100)
	f.Fuzz(func(t *testing.T, base string, start, end int) {
		start, end = ((start%slotCount)+slotCount)%slotCount, ((end%slotCount)+slotCount)%slotCount
		if start > end {
			start, end = end, start
		}
		if end-start < 50 && len(base) > 0 && base[0] == 'x' {
			end = start // single slots, from time to time
		}
		tag, slot := tagInSlots(base, []goredis.ClusterSlot{{Start: start, End: end}})
		if slot < start || slot > end || HashSlot(tag) != slot || HashSlot("{"+tag+"}:u:1:2") != slot {
			t.Fatalf("tag %q has slot %d (keys %d), want one in [%d, %d]", tag, HashSlot(tag), HashSlot("{"+tag+"}:u:1:2"), start, end)
		}
	})
}

func TestShardPauseIsTheLongestGapIncludingTheLastOne(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := &shard{lastAck: t0}
	for _, at := range []time.Duration{10, 30, 1500, 1510} {
		s.endPause(t0.Add(at * time.Millisecond))
	}
	if got, ended := s.longestPause(); got != 1470*time.Millisecond || !ended.Equal(t0.Add(1500*time.Millisecond)) {
		t.Errorf("longest pause %s ending at %s, want 1.47s ending 1.5s after the start", got, ended)
	}
	// No write acknowledged since: the time up to Stop counts.
	s.endPause(t0.Add(4 * time.Second))
	if got, ended := s.longestPause(); got != 2490*time.Millisecond || !ended.Equal(t0.Add(4*time.Second)) {
		t.Errorf("longest pause with the last gap %s ending at %s, want 2.49s ending at Stop", got, ended)
	}
}

func TestReportNamesTheShardsThatPausedTooLong(t *testing.T) {
	r := Report{Acknowledged: 10, Shards: []ShardReport{
		{Name: "shard of a (slot 1)", Acknowledged: 5, LongestPause: 30 * time.Millisecond},
		{Name: "shard of b (slot 9000)", Acknowledged: 5, Failed: 2, LongestPause: 3 * time.Second,
			LongestPauseEnded: time.Date(2026, 12, 6, 9, 1, 2, 345e6, time.UTC)},
	}}
	if got := r.LongestPause(); got != 3*time.Second {
		t.Errorf("LongestPause = %s", got)
	}
	over := r.PausedLongerThan(time.Second)
	if len(over) != 1 || over[0] != "shard of b (slot 9000): 3s" {
		t.Errorf("PausedLongerThan = %q", over)
	}
	want := "10 acknowledged, 0 failed, 0 uncertain writes; 0 keys read back; no acknowledged write lost; longest pause shard of a (slot 1) 30ms, shard of b (slot 9000) 3s (ended 09:01:02.345) (5 acknowledged, 2 failed, 0 uncertain, 0 lost)"
	if got := r.String(); got != want {
		t.Errorf("String =\n%s\nwant\n%s", got, want)
	}
}
