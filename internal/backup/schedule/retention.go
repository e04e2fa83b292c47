package schedule

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// State is where a backup is in its life, as retention sees it.
type State int

const (
	// Active is a backup not finished yet (Pending, Running, or not yet looked at): never
	// deleted, its objects may be being written.
	Active State = iota
	Completed
	Failed
)

// Backup is what retention needs of one backup of the schedule.
type Backup struct {
	Name  string
	State State
	// Created is when the backup was made; Finished when it ended (zero when unknown).
	Created, Finished time.Time
}

// at is the time the backup's age is counted from: when it ended, else when it was made.
func (b Backup) at() time.Time {
	if !b.Finished.IsZero() {
		return b.Finished
	}
	return b.Created
}

// Keep is a parsed retention: the newest Last Completed backups and those younger than Within
// are kept. Zero fields are unset; with both unset every Completed backup is kept.
type Keep struct {
	Last   int
	Within time.Duration
}

// ParseKeep reads the retention of the API: last (nil when unset) and within ("" when unset).
func ParseKeep(last *int32, within string) (Keep, error) {
	var k Keep
	if last != nil {
		if *last < 1 {
			return Keep{}, fmt.Errorf("keep.last %d is less than 1", *last)
		}
		k.Last = int(*last)
	}
	if within != "" {
		d, err := time.ParseDuration(within)
		if err != nil {
			return Keep{}, fmt.Errorf("keep.within: %w", err)
		}
		if d <= 0 {
			return Keep{}, fmt.Errorf("keep.within %s is not positive", within)
		}
		k.Within = d
	}
	return k, nil
}

// Prune names the backups to delete, oldest first: the Completed ones neither rule keeps, and
// the Failed ones made before the newest Completed one (a later success makes them moot; one
// after it says the schedule is failing now, and stays for people to read). Active backups are
// never named.
func Prune(backups []Backup, keep Keep, now time.Time) []string {
	var completed []Backup
	for _, b := range backups {
		if b.State == Completed {
			completed = append(completed, b)
		}
	}
	// Newest first; the name breaks ties so that the answer does not depend on the order given.
	slices.SortFunc(completed, func(a, b Backup) int {
		if c := b.at().Compare(a.at()); c != 0 {
			return c
		}
		return cmp.Compare(b.Name, a.Name)
	})
	var doomed []Backup
	if keep.Last > 0 || keep.Within > 0 {
		for i, b := range completed {
			keptByCount := keep.Last > 0 && i < keep.Last
			keptByAge := keep.Within > 0 && now.Sub(b.at()) <= keep.Within
			if !keptByCount && !keptByAge {
				doomed = append(doomed, b)
			}
		}
	}
	if len(completed) > 0 {
		newest := completed[0].Created
		for _, b := range backups {
			if b.State == Failed && b.Created.Before(newest) {
				doomed = append(doomed, b)
			}
		}
	}
	slices.SortFunc(doomed, func(a, b Backup) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	names := make([]string, 0, len(doomed))
	for _, b := range doomed {
		names = append(names, b.Name)
	}
	return names
}
