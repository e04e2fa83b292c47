package controller

import "testing"

func TestBackupObjectKey(t *testing.T) {
	for _, c := range []struct{ prefix, want string }{
		{"", "ns/nightly/cache-0.rdb"},
		{"team-a", "team-a/ns/nightly/cache-0.rdb"},
		{"/team-a/", "team-a/ns/nightly/cache-0.rdb"},
		{"a/b/", "a/b/ns/nightly/cache-0.rdb"},
	} {
		if got := objectKey(c.prefix, "ns", "nightly", "cache-0"); got != c.want {
			t.Errorf("prefix %q: %q, want %q", c.prefix, got, c.want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536 << 10: "1.5 MiB", 3 << 30: "3.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
