//go:build servers

package operator

import "testing"

// TestServerTable is the whole table of make e2e-servers: on every server, every kind
// (bootstrap, keys, a failover; the cluster with the exporter scraping it) and one cluster
// through TLS with a password, a scale-out and a rolling update under writes, an in-place
// password rotation, a scale-in and a planned leader deletion, every key read back.
func TestServerTable(t *testing.T) {
	for _, s := range servers {
		t.Run(s.name+"/kinds", func(t *testing.T) {
			t.Parallel()
			c := clusterWithImage(t, s.image, opstreeExporter)
			for _, p := range c.pods(c.ctx) {
				requireRelease(t, c.redis(&p).Info(c.ctx, "server").Val(), p.Name, s)
			}
			exporterUp(t, c.ns, c.pod(c.name+"-follower-0"))
			runKindOnServer(t, kindReplication, s)
			runKindOnServer(t, kindStandalone, s)
		})
		t.Run(s.name+"/cluster-lifecycle", func(t *testing.T) {
			t.Parallel()
			clusterLifecycle(t, s.image)
		})
	}
}
