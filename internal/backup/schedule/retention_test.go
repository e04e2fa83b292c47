package schedule

import (
	"slices"
	"testing"
	"time"
)

func TestParseKeep(t *testing.T) {
	two := int32(2)
	zero := int32(0)
	if k, err := ParseKeep(&two, "168h"); err != nil || k.Last != 2 || k.Within != 168*time.Hour {
		t.Errorf("ParseKeep(2, 168h) = %+v, %v", k, err)
	}
	if k, err := ParseKeep(nil, ""); err != nil || k != (Keep{}) {
		t.Errorf("ParseKeep(nil, \"\") = %+v, %v", k, err)
	}
	for _, bad := range []struct {
		last   *int32
		within string
	}{{&zero, ""}, {nil, "a week"}, {nil, "-1h"}, {nil, "0s"}} {
		if _, err := ParseKeep(bad.last, bad.within); err == nil {
			t.Errorf("ParseKeep(%v, %q) accepted", bad.last, bad.within)
		}
	}
}

func TestPrune(t *testing.T) {
	now := at("2026-01-10T00:00:00Z")
	day := func(d int) time.Time { return now.Add(-time.Duration(d) * 24 * time.Hour) }
	done := func(name string, d int) Backup {
		return Backup{Name: name, State: Completed, Created: day(d), Finished: day(d).Add(time.Minute)}
	}
	failed := func(name string, d int) Backup {
		return Backup{Name: name, State: Failed, Created: day(d), Finished: day(d)}
	}
	active := func(name string, d int) Backup { return Backup{Name: name, State: Active, Created: day(d)} }
	for _, tc := range []struct {
		name    string
		backups []Backup
		keep    Keep
		want    []string
	}{
		{"no rule keeps everything completed", []Backup{done("a", 9), done("b", 5)}, Keep{}, nil},
		{"last 2", []Backup{done("a", 4), done("b", 3), done("c", 2), done("d", 1)}, Keep{Last: 2}, []string{"a", "b"}},
		{"within 2 days", []Backup{done("a", 4), done("b", 3), done("c", 1)}, Keep{Within: 48 * time.Hour}, []string{"a", "b"}},
		{"either rule keeps", []Backup{done("a", 5), done("b", 4), done("c", 3), done("d", 1)}, Keep{Last: 1, Within: 84 * time.Hour},
			[]string{"a", "b"}},
		{"active never goes", []Backup{active("a", 9), done("b", 3), done("c", 2), done("d", 1)}, Keep{Last: 1}, []string{"b", "c"}},
		{"failed before the newest success goes, after stays", []Backup{failed("a", 4), done("b", 3), failed("c", 2)}, Keep{Last: 5},
			[]string{"a"}},
		{"failed with no success stays", []Backup{failed("a", 4), failed("b", 3)}, Keep{Last: 1}, nil},
		{"failed goes even with no rule", []Backup{failed("a", 4), done("b", 3)}, Keep{}, []string{"a"}},
		{"order given does not matter", []Backup{done("d", 1), done("b", 3), done("a", 4), done("c", 2)}, Keep{Last: 2}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Prune(tc.backups, tc.keep, now); !slices.Equal(got, tc.want) {
				t.Errorf("Prune = %v, want %v", got, tc.want)
			}
		})
	}
}

func FuzzPrune(f *testing.F) {
	f.Add([]byte{0, 1, 2, 1, 1, 5, 2, 0, 9}, uint8(2), uint16(30))
	f.Add([]byte{1, 1, 1, 1, 1, 1}, uint8(0), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, last uint8, withinMinutes uint16) {
		now := at("2026-01-10T00:00:00Z")
		// Each pair of bytes is one backup: its state and its age in minutes.
		var backups []Backup
		for i := 0; i+1 < len(data); i += 2 {
			created := now.Add(-time.Duration(data[i+1]) * time.Minute)
			backups = append(backups, Backup{Name: string(rune('a' + i/2)), State: State(data[i] % 3), Created: created,
				Finished: created})
		}
		keep := Keep{Last: int(last % 8), Within: time.Duration(withinMinutes) * time.Minute}
		doomed := Prune(backups, keep, now)
		byName := map[string]Backup{}
		completed := 0
		for _, b := range backups {
			byName[b.Name] = b
			if b.State == Completed {
				completed++
			}
		}
		deletedCompleted := 0
		for _, name := range doomed {
			b, ok := byName[name]
			if !ok {
				t.Fatalf("deletes %q, not a backup", name)
			}
			switch b.State {
			case Active:
				t.Fatalf("deletes the active backup %q", name)
			case Completed:
				deletedCompleted++
				if keep.Within > 0 && now.Sub(b.at()) <= keep.Within {
					t.Fatalf("deletes %q, within %s", name, keep.Within)
				}
			}
		}
		if keep.Last > 0 && completed-deletedCompleted < min(keep.Last, completed) {
			t.Fatalf("keeps %d completed of %d, want at least %d", completed-deletedCompleted, completed, keep.Last)
		}
		if keep.Last == 0 && keep.Within == 0 && deletedCompleted > 0 {
			t.Fatal("deletes a completed backup with no rule")
		}
	})
}
