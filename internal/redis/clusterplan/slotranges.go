package clusterplan

import "github.com/rediskube/redis-operator/internal/redis"

func intersect(a, b redis.SlotRange) (redis.SlotRange, bool) {
	r := redis.SlotRange{Start: max(a.Start, b.Start), End: min(a.End, b.End)}
	return r, r.Start <= r.End
}

// slotList expands ranges into sorted, distinct slots.
func slotList(ranges []redis.SlotRange) []int {
	var out []int
	for _, r := range redis.NormalizeSlotRanges(ranges) {
		for s := r.Start; s <= r.End; s++ {
			out = append(out, s)
		}
	}
	return out
}

// slotRanges folds slots into sorted ranges.
func slotRanges(slots []int) []redis.SlotRange {
	ranges := make([]redis.SlotRange, 0, len(slots))
	for _, s := range slots {
		ranges = append(ranges, redis.SlotRange{Start: s, End: s})
	}
	return redis.NormalizeSlotRanges(ranges)
}
