package schedule

import (
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		expr, zone string
		ok         bool
	}{
		{"* * * * *", "", true},
		{"0 3 * * *", "Europe/Paris", true},
		{"@daily", "", true},
		{"*/15 2-4 * * mon-fri", "America/New_York", true},
		{"* * * *", "", false},     // four fields
		{"0 * * * * *", "", false}, // six: seconds are not standard
		{"61 * * * *", "", false},  // minute out of range
		{"", "", false},            // empty
		{"* * * * *", "Mars/Olympus", false},
		{"* * * * *", "Local", false},
		{"CRON_TZ=UTC * * * * *", "", false},
		{"TZ=UTC * * * * *", "", false},
	} {
		_, err := Parse(tc.expr, tc.zone)
		if (err == nil) != tc.ok {
			t.Errorf("Parse(%q, %q) = %v, want ok %v", tc.expr, tc.zone, err, tc.ok)
		}
	}
}

func TestNextInTimeZone(t *testing.T) {
	s, err := Parse("0 3 * * *", "Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	// 03:00 in Paris in winter is 02:00 UTC.
	if got, want := s.Next(at("2026-01-10T12:00:00Z")), at("2026-01-11T02:00:00Z"); !got.Equal(want) {
		t.Errorf("next %s, want %s", got, want)
	}
	u, _ := Parse("0 3 * * *", "")
	if got, want := u.Next(at("2026-01-10T12:00:00Z")), at("2026-01-11T03:00:00Z"); !got.Equal(want) {
		t.Errorf("next in UTC %s, want %s", got, want)
	}
	never, _ := Parse("0 0 30 2 *", "")
	if got := never.Next(at("2026-01-10T12:00:00Z")); !got.IsZero() {
		t.Errorf("February 30th: next %s, want none", got)
	}
}

func TestDue(t *testing.T) {
	every, _ := Parse("* * * * *", "")
	hourly, _ := Parse("0 * * * *", "")
	for _, tc := range []struct {
		name      string
		s         Schedule
		last, now string
		due       string // "" for none
	}{
		{"not yet", every, "2026-01-01T00:00:00Z", "2026-01-01T00:00:59Z", ""},
		{"exactly on time", every, "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:01:00Z"},
		{"a little late", every, "2026-01-01T00:00:00Z", "2026-01-01T00:01:30Z", "2026-01-01T00:01:00Z"},
		{"created between slots", every, "2026-01-01T00:00:20Z", "2026-01-01T00:01:00Z", "2026-01-01T00:01:00Z"},
		{"missed many: the newest once", every, "2026-01-01T00:00:00Z", "2026-01-09T13:37:10Z", "2026-01-09T13:37:00Z"},
		{"missed a year hourly", hourly, "2025-01-01T00:00:00Z", "2026-01-01T05:30:00Z", "2026-01-01T05:00:00Z"},
		{"the last run's slot is not due again", hourly, "2026-01-01T05:00:00Z", "2026-01-01T05:30:00Z", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.s.Due(at(tc.last), at(tc.now))
			if tc.due == "" {
				if ok {
					t.Fatalf("due %s, want none", got)
				}
				return
			}
			if !ok || !got.Equal(at(tc.due)) {
				t.Fatalf("due %s (%v), want %s", got, ok, tc.due)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{"* * * * *", "0 3 * * *", "@hourly", "*/5 1-3 1,15 * sun", "61 * * * *", "@every 1h", "0 0 30 2 *"} {
		f.Add(seed, "", int64(1767225600))
		f.Add(seed, "Asia/Tokyo", int64(0))
	}
	f.Fuzz(func(t *testing.T, expr, zone string, unix int64) {
		s, err := Parse(expr, zone)
		if err != nil {
			return
		}
		from := time.Unix(unix%(1<<34), 0).UTC()
		next := s.Next(from)
		if !next.IsZero() && !next.After(from) {
			t.Fatalf("Parse(%q, %q).Next(%s) = %s, not after", expr, zone, from, next)
		}
		if next.IsZero() {
			return
		}
		// Due right at the next run is that run; just before it, nothing.
		if due, ok := s.Due(from, next); !ok || !due.Equal(next) {
			t.Fatalf("Due(%s, %s) = %s, %v; want the next run", from, next, due, ok)
		}
		if _, ok := s.Due(from, next.Add(-time.Nanosecond)); ok {
			t.Fatalf("due before the next run %s", next)
		}
	})
}

func TestInterval(t *testing.T) {
	for _, tc := range []struct {
		expr, zone string
		from       string
		want       time.Duration
	}{
		{"*/5 * * * *", "", "2026-01-01T00:02:00Z", 5 * time.Minute},
		{"0 3 * * *", "", "2026-01-01T12:00:00Z", 24 * time.Hour},
		{"@hourly", "", "2026-01-01T00:00:00Z", time.Hour},
		{"0 0 * * 0", "", "2026-01-01T00:00:00Z", 7 * 24 * time.Hour},
		// Uneven gaps: the one that comes next.
		{"0 3,9 * * *", "", "2026-01-01T01:00:00Z", 6 * time.Hour},
		{"0 3,9 * * *", "", "2026-01-01T05:00:00Z", 18 * time.Hour},
		// A day of 23 hours in the schedule's zone (Paris moves to summer time on 29 March 2026: 03:00 on the 28th to 03:00 on the 29th).
		{"0 3 * * *", "Europe/Paris", "2026-03-27T12:00:00Z", 23 * time.Hour},
		// No time in the next five years.
		{"0 0 30 2 *", "", "2026-01-01T00:00:00Z", 0},
	} {
		s, err := Parse(tc.expr, tc.zone)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Interval(at(tc.from)); got != tc.want {
			t.Errorf("Interval of %q in %q from %s = %s, want %s", tc.expr, tc.zone, tc.from, got, tc.want)
		}
	}
}
