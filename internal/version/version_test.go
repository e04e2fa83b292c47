package version

import "testing"

func TestString(t *testing.T) {
	old, oldCommit := Version, Commit
	t.Cleanup(func() { Version, Commit = old, oldCommit })
	Version, Commit = "1.2.3", "abc"
	if got, want := String("redis-operator"), "redis-operator 1.2.3 (commit abc)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
