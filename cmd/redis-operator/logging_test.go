package main

import (
	stdlog "log"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestStandardLogLinesBecomeStructuredEntries(t *testing.T) {
	var entries []string
	logger := funcr.NewJSON(func(obj string) { entries = append(entries, obj) }, funcr.Options{}).WithName("net/http")
	std := stdlog.New(logrWriter{logger}, "", 0)
	std.Printf("http: TLS handshake error from %s: %s", "127.0.0.1:43228", "webhook: no serving certificate yet")
	std.Print("one\ntwo")
	want := []string{
		`{"logger":"net/http","level":0,"msg":"http: TLS handshake error from 127.0.0.1:43228: webhook: no serving certificate yet"}`,
		`{"logger":"net/http","level":0,"msg":"one"}`,
		`{"logger":"net/http","level":0,"msg":"two"}`,
	}
	if len(entries) != len(want) {
		t.Fatalf("entries %q, want %q", entries, want)
	}
	for i := range want {
		if entries[i] != want[i] {
			t.Errorf("entry %d = %s, want %s", i, entries[i], want[i])
		}
	}
}
