package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

func TestSentinelsNotYetWatching(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ready     int32
		reports   []string
		master    string
		wantEmpty bool
	}{
		{"all ready and agreeing", 3, []string{"10.0.0.1", "10.0.0.1", "10.0.0.1"}, "10.0.0.1", true},
		{"no master", 3, []string{"10.0.0.1", "10.0.0.1", "10.0.0.1"}, "", false},
		{"one not ready", 2, []string{"10.0.0.1", "10.0.0.1", "10.0.0.1"}, "10.0.0.1", false},
		{"one reports an old master", 3, []string{"10.0.0.1", "10.0.0.9", "10.0.0.1"}, "10.0.0.1", false},
		{"one not asked", 3, []string{"10.0.0.1", "10.0.0.1"}, "10.0.0.1", false},
		{"one monitors nothing", 3, []string{"10.0.0.1", "", "10.0.0.1"}, "10.0.0.1", false},
	} {
		why := sentinelsNotYetWatching(tc.ready, 3, tc.reports, tc.master)
		if (why == "") != tc.wantEmpty {
			t.Errorf("%s: %q", tc.name, why)
		}
	}
}

// connectionInfo names Services in the operator's cluster DNS domain (SERVICE_DNS_DOMAIN).
func TestConnectionInfoNamesServicesInTheClusterDomain(t *testing.T) {
	cr := &v1beta2.RedisReplication{ObjectMeta: metav1.ObjectMeta{Name: "rr", Namespace: "db"}}
	for _, tc := range []struct {
		domain   string
		sentinel bool
		want     v1beta2.ConnectionInfo
	}{
		{"", false, v1beta2.ConnectionInfo{Host: "rr-master.db.svc.cluster.local", Port: 6379}},
		{"corp.example", false, v1beta2.ConnectionInfo{Host: "rr-master.db.svc.corp.example", Port: 6379}},
		{"corp.example", true, v1beta2.ConnectionInfo{Host: "rr-s-hl.db.svc.corp.example", Port: 26379, MasterName: "mymaster"}},
	} {
		cr.Spec.Sentinel = nil
		if tc.sentinel {
			cr.Spec.Sentinel = &v1beta2.Sentinel{Size: 3}
		}
		if got := connectionInfo(cr, tc.domain); *got != tc.want {
			t.Errorf("domain %q, sentinels %v: %+v, want %+v", tc.domain, tc.sentinel, *got, tc.want)
		}
	}
}
