package webhook

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

var testHosts = []string{"hook.ns.svc", "hook.ns.svc.cluster.local", "hook.ns", "hook"}

func mustRenew(t *testing.T, s certSet, caRenew bool, now time.Time, validity time.Duration) certSet {
	t.Helper()
	next, err := s.renew(testHosts, caRenew, now, validity)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func servingCert(t *testing.T, s certSet) *x509.Certificate {
	t.Helper()
	cert, _, err := parsePair(s.serving)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestAnEmptySecretGetsACAAndAServingCertificateForTheServiceNames(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if reason, caRenew := (certSet{}).problem(testHosts, now); reason == "" || !caRenew {
		t.Fatalf("an empty set: problem %q, caRenew %v; want a problem that renews the CA", reason, caRenew)
	}
	set := mustRenew(t, certSet{}, true, now, 24*time.Hour)
	if reason, _ := set.problem(testHosts, now); reason != "" {
		t.Fatalf("a fresh set has a problem: %s", reason)
	}
	cert := servingCert(t, set)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(set.caBundle) {
		t.Fatal("CA bundle unreadable")
	}
	for _, h := range testHosts {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: now}); err != nil {
			t.Errorf("the serving certificate does not verify for %s: %v", h, err)
		}
	}
	if reason, _ := set.problem(append(testHosts, "other.ns.svc"), now); !strings.Contains(reason, "other.ns.svc") {
		t.Errorf("a missing name is not reported: %q", reason)
	}
}

func TestTheServingCertificateRenewsWithAThirdLeftUnderTheSameCA(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	validity := 30 * time.Hour
	set := mustRenew(t, certSet{}, true, issued, validity)
	if reason, _ := set.problem(testHosts, issued.Add(18*time.Hour)); reason != "" {
		t.Fatalf("renewed too early (18h of 30h): %s", reason)
	}
	later := issued.Add(21 * time.Hour)
	reason, caRenew := set.problem(testHosts, later)
	if reason == "" || caRenew {
		t.Fatalf("at 21h of 30h: problem %q, caRenew %v; want the serving certificate renewed, not the CA", reason, caRenew)
	}
	next := mustRenew(t, set, caRenew, later, validity)
	if string(next.caBundle) != string(set.caBundle) {
		t.Error("renewing the serving certificate changed the CA bundle (the CRDs would need it re-injected)")
	}
	if servingCert(t, next).SerialNumber.Cmp(servingCert(t, set).SerialNumber) == 0 {
		t.Error("the serving certificate was not replaced")
	}
	if reason, _ := next.problem(testHosts, later); reason != "" {
		t.Errorf("the renewed set has a problem: %s", reason)
	}
}

func TestANewCAKeepsTheOldOneInTheBundleUntilItExpires(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	validity := time.Hour // the CA: ten hours
	set := mustRenew(t, certSet{}, true, issued, validity)
	// The serving certificate has been renewed (under the first CA) shortly before.
	set = mustRenew(t, set, false, issued.Add(6*time.Hour+30*time.Minute), validity)
	later := issued.Add(7 * time.Hour)
	reason, caRenew := set.problem(testHosts, later)
	if !caRenew {
		t.Fatalf("at 7h of the CA's 10h: problem %q without renewing the CA", reason)
	}
	next := mustRenew(t, set, true, later, validity)
	cas, err := parseCerts(next.caBundle)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := parseCerts(set.caBundle)
	if len(cas) != 2 || !cas[1].Equal(old[0]) {
		t.Fatalf("bundle after a CA renewal holds %d certificates; want the new CA and the old one", len(cas))
	}
	// A replica still serving the old certificate stays trusted by the new bundle.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(next.caBundle)
	if _, err := servingCert(t, set).Verify(x509.VerifyOptions{DNSName: testHosts[0], Roots: pool, CurrentTime: later}); err != nil {
		t.Errorf("the old serving certificate is not trusted by the new bundle: %v", err)
	}
	// Once the old CA has expired, the next renewal drops it.
	muchLater := issued.Add(11 * time.Hour)
	again := mustRenew(t, next, false, muchLater, validity)
	if cas, _ := parseCerts(again.caBundle); len(cas) != 1 || !cas[0].Equal(mustParse(t, next.caBundle)[0]) {
		t.Errorf("after the old CA expired the bundle holds %d certificates; want only the current CA", len(cas))
	}
}

func mustParse(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	certs, err := parseCerts(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return certs
}
