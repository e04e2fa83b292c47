package writecheck

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// slotCount is the number of hash slots of a Redis cluster.
const slotCount = 16384

// shard is the set of keys one group of writers writes: every key (tag ""), or the keys of
// one hash tag, which lives in one slot and so on one master at a time.
type shard struct {
	name string
	tag  string
	slot int

	acknowledged, failed, uncertain atomic.Int64

	mu sync.Mutex
	// lastAck is when a write of the shard was last acknowledged (Start before the first);
	// longest the longest time between two such moments, or from the last one to Stop.
	lastAck time.Time
	longest time.Duration
	// longestEnd is when the longest pause ended, to be laid beside the operator's timeline.
	longestEnd time.Time
}

// endPause notes a moment writes to the shard were acknowledged again (or the checker stopped).
func (s *shard) endPause(at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pause := at.Sub(s.lastAck); pause > s.longest {
		s.longest, s.longestEnd = pause, at
	}
	s.lastAck = at
}

func (s *shard) longestPause() (time.Duration, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.longest, s.longestEnd
}

// ShardReport is what the writes of one shard showed.
type ShardReport struct {
	// Name says which keys: "all keys", or the master that served the shard's slot at Start.
	Name string
	// Acknowledged, Failed and Uncertain count the shard's writes (see Stats).
	Acknowledged, Failed, Uncertain int
	// LongestPause is the longest time no write of the shard was acknowledged, from Start to
	// Stop.
	LongestPause time.Duration
	// LongestPauseEnded is when that pause ended (a write acknowledged again, or Stop).
	LongestPauseEnded time.Time
	// Lost counts the shard's keys that were missing, wrong or stale at Verify.
	Lost int
}

func (s *shard) report() ShardReport {
	longest, ended := s.longestPause()
	return ShardReport{Name: s.name, Acknowledged: int(s.acknowledged.Load()), Failed: int(s.failed.Load()),
		Uncertain: int(s.uncertain.Load()), LongestPause: longest, LongestPauseEnded: ended}
}

// shardTargets reads the cluster's slot map and gives each master a shard: a hash tag,
// starting with prefix, whose slot that master serves.
func shardTargets(ctx context.Context, rdb *goredis.ClusterClient, prefix string) ([]*shard, error) {
	//nolint:staticcheck // CLUSTER SHARDS is Redis 7.0's: the checker writes to Redis 6 clusters too
	ranges, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("read the slot map for per-shard writers: %w", err)
	}
	slices.SortFunc(ranges, func(a, b goredis.ClusterSlot) int { return a.Start - b.Start })
	byMaster := map[string][]goredis.ClusterSlot{}
	var masters []string
	for _, r := range ranges {
		if len(r.Nodes) == 0 {
			continue
		}
		addr := r.Nodes[0].Addr
		if _, seen := byMaster[addr]; !seen {
			masters = append(masters, addr)
		}
		byMaster[addr] = append(byMaster[addr], r)
	}
	if len(masters) == 0 {
		return nil, fmt.Errorf("the cluster serves no slot: no shard to write to")
	}
	shards := make([]*shard, 0, len(masters))
	for i, addr := range masters {
		tag, slot := tagInSlots(prefix+"-"+strconv.Itoa(i), byMaster[addr])
		shards = append(shards, &shard{name: fmt.Sprintf("shard of %s (slot %d)", addr, slot), tag: tag, slot: slot})
	}
	return shards, nil
}

// tagInSlots finds the first tag base-0, base-1, ... whose hash slot lies in one of ranges.
// Each slot is hit by one in 16384 tags on average, so a range of any size is found.
func tagInSlots(base string, ranges []goredis.ClusterSlot) (string, int) {
	for k := 0; ; k++ {
		tag := base + "-" + strconv.Itoa(k)
		slot := HashSlot(tag)
		for _, r := range ranges {
			if slot >= r.Start && slot <= r.End {
				return tag, slot
			}
		}
	}
}

// HashSlot is the cluster slot of a key: CRC16 (XMODEM: polynomial 0x1021, initial value 0)
// of the key, or of the text between its first "{" and the next "}" when that is not
// empty, modulo 16384.
func HashSlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % slotCount
}
