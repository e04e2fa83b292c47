package builder

import (
	"strings"
	"testing"
)

func TestPasswordOfAuthFileReadsBackWhatWasRendered(t *testing.T) {
	for _, pw := range []string{"s3cret", `with "quotes" and \ backslash`, "tab\there\nnewline\x7f", " spaces ", "ünïcode"} {
		got, ok := PasswordOfAuthFile(redisAuthFile(pw, false))
		if !ok || got != pw {
			t.Errorf("PasswordOfAuthFile(redisAuthFile(%q)) = %q, %v", pw, got, ok)
		}
	}
	// With the operator's own ACL user, replicas log in as it and the password reads back the same.
	withUser := redisAuthFile("s3cret", true)
	if got, ok := PasswordOfAuthFile(withUser); !ok || got != "s3cret" || !strings.Contains(withUser, "\nmasteruser redis-operator\n") {
		t.Errorf("auth file with the operator's user: %q reads back %q, %v", withUser, got, ok)
	}
	for _, bad := range []string{"", "masterauth \"x\"\n", "requirepass x\n", "requirepass \"x\\\"\n", "requirepass \"\\q\"\n"} {
		if got, ok := PasswordOfAuthFile(bad); ok {
			t.Errorf("PasswordOfAuthFile(%q) = %q, want no password", bad, got)
		}
	}
}

func FuzzPasswordOfAuthFile(f *testing.F) {
	f.Add("s3cret")
	f.Add("\x00\"\\")
	f.Fuzz(func(t *testing.T, pw string) {
		if got, ok := PasswordOfAuthFile(redisAuthFile(pw, false)); !ok || got != pw {
			t.Fatalf("round trip of %q gave %q, %v", pw, got, ok)
		}
	})
}
