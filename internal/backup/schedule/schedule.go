// Package schedule decides, from a RedisBackupSchedule's settings and the time, when backups
// are due and which of the backups taken the retention lets go. It is pure: no client, no
// context, no clock of its own, so that every decision can be tested at any time.
package schedule

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed cron expression read in a time zone.
type Schedule struct {
	cron cron.Schedule
	loc  *time.Location
}

// Parse reads a standard five-field cron expression (or a descriptor such as "@daily") and
// the IANA time zone it is read in, UTC when timeZone is empty.
func Parse(expr, timeZone string) (Schedule, error) {
	expr = strings.TrimSpace(expr)
	// The zone has its own field; a second one in the expression would make two answers.
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return Schedule{}, errors.New("the schedule names a time zone: use timeZone instead")
	}
	loc, err := Location(timeZone)
	if err != nil {
		return Schedule{}, err
	}
	c, err := cron.ParseStandard(expr)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %w", expr, err)
	}
	return Schedule{cron: c, loc: loc}, nil
}

// Location is the zone of an IANA name, UTC for "". "Local" is refused: the operator's own
// zone is no business of the schedule's.
func Location(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" {
		return nil, errors.New(`time zone "Local" is not an IANA name`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", name, err)
	}
	return loc, nil
}

// Next is the first scheduled time strictly after t, in UTC; zero when there is none in the
// next five years (a schedule such as February 30th).
func (s Schedule) Next(t time.Time) time.Time {
	next := s.cron.Next(t.In(s.loc))
	if next.IsZero() {
		return next
	}
	return next.UTC()
}

// Due is the newest scheduled time in (last, now], and whether there is one. Missed slots
// (the operator was down) give one run, the newest, not one per slot; last is the scheduled
// time of the last run, or the schedule's creation time before the first.
func (s Schedule) Due(last, now time.Time) (time.Time, bool) {
	first := s.Next(last)
	if first.IsZero() || first.After(now) {
		return time.Time{}, false
	}
	// Look back from now over windows that double, so that a long outage of a dense schedule
	// costs a few steps rather than one per missed slot.
	from := last
	for w := time.Minute; ; w *= 2 {
		if w >= now.Sub(last) || w > math.MaxInt64/4 {
			break
		}
		if t := s.Next(now.Add(-w)); !t.IsZero() && !t.After(now) {
			from = now.Add(-w)
			break
		}
	}
	var latest time.Time
	for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
		latest = t
	}
	return latest, true
}

// Interval is the time between the two scheduled times that follow t, how long a backup is
// expected to stay the newest; zero when the schedule has not two more times in the next five
// years. A schedule of uneven gaps ("0 3,9 * * *") gives the gap that comes next.
func (s Schedule) Interval(t time.Time) time.Duration {
	first := s.Next(t)
	if first.IsZero() {
		return 0
	}
	second := s.Next(first)
	if second.IsZero() {
		return 0
	}
	return second.Sub(first)
}
