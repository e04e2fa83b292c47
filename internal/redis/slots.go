package redis

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = 16384

// MaxSlot is the highest hash slot number.
const MaxSlot = SlotCount - 1

// SlotRange is an inclusive range of hash slots. A single slot has Start == End.
type SlotRange struct {
	Start int
	End   int
}

// Len is the number of slots in the range.
func (r SlotRange) Len() int { return r.End - r.Start + 1 }

// Contains reports whether slot lies in the range.
func (r SlotRange) Contains(slot int) bool { return slot >= r.Start && slot <= r.End }

// Valid reports whether the range lies within 0..MaxSlot and is not reversed.
func (r SlotRange) Valid() bool { return r.Start >= 0 && r.Start <= r.End && r.End <= MaxSlot }

// String renders the range as CLUSTER NODES does: "5" or "0-5460".
func (r SlotRange) String() string {
	if r.Start == r.End {
		return strconv.Itoa(r.Start)
	}
	return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End)
}

// ParseSlotRange parses "5" or "0-5460" and checks the bounds.
func ParseSlotRange(s string) (SlotRange, error) {
	startText, endText, isRange := strings.Cut(s, "-")
	start, err := parseSlot(startText)
	if err != nil {
		return SlotRange{}, fmt.Errorf("slot range %q: %w", s, err)
	}
	if !isRange {
		return SlotRange{Start: start, End: start}, nil
	}
	end, err := parseSlot(endText)
	if err != nil {
		return SlotRange{}, fmt.Errorf("slot range %q: %w", s, err)
	}
	if end < start {
		return SlotRange{}, fmt.Errorf("slot range %q: end before start", s)
	}
	return SlotRange{Start: start, End: end}, nil
}

func parseSlot(s string) (int, error) {
	// Atoi accepts a sign; slots never have one, and accepting "+5" would break round trips.
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("slot %q is not a number", s)
	}
	slot, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("slot %q is not a number", s)
	}
	if slot < 0 || slot > MaxSlot {
		return 0, fmt.Errorf("slot %d out of range 0..%d", slot, MaxSlot)
	}
	return slot, nil
}

// SplitSlots divides 0..MaxSlot into n contiguous ranges whose sizes differ by at most one,
// the usual layout for n masters.
func SplitSlots(n int) []SlotRange {
	if n <= 0 {
		return nil
	}
	ranges := make([]SlotRange, 0, n)
	start := 0
	for i := 0; i < n; i++ {
		size := SlotCount / n
		if i < SlotCount%n {
			size++
		}
		if size == 0 {
			break
		}
		ranges = append(ranges, SlotRange{Start: start, End: start + size - 1})
		start += size
	}
	return ranges
}

// NormalizeSlotRanges sorts ranges and merges overlapping or adjacent ones.
func NormalizeSlotRanges(ranges []SlotRange) []SlotRange {
	if len(ranges) == 0 {
		return nil
	}
	sorted := append([]SlotRange(nil), ranges...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Start < sorted[j].Start })
	merged := []SlotRange{sorted[0]}
	for _, r := range sorted[1:] {
		last := &merged[len(merged)-1]
		if r.Start <= last.End+1 {
			if r.End > last.End {
				last.End = r.End
			}
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// CountSlots is the number of distinct slots in ranges.
func CountSlots(ranges []SlotRange) int {
	n := 0
	for _, r := range NormalizeSlotRanges(ranges) {
		n += r.Len()
	}
	return n
}

// MissingSlots returns the slots of 0..MaxSlot that no range covers, as sorted ranges.
func MissingSlots(ranges []SlotRange) []SlotRange {
	var missing []SlotRange
	next := 0
	for _, r := range NormalizeSlotRanges(ranges) {
		start := max(r.Start, 0)
		if start > next {
			missing = append(missing, SlotRange{Start: next, End: start - 1})
		}
		if r.End+1 > next {
			next = r.End + 1
		}
	}
	if next <= MaxSlot {
		missing = append(missing, SlotRange{Start: next, End: MaxSlot})
	}
	return missing
}

// SlotMigration is one importing or migrating entry of CLUSTER NODES: a slot in the middle
// of resharding, and the node on the other side of the move.
type SlotMigration struct {
	Slot   int
	NodeID string
}
