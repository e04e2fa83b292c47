package proxy

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rediskube/redis-operator/test/sandbox/instance"
)

// Each node's kube-proxy serves its own node: its name (traffic policies, topology), its
// address (NodePorts, health), and leaves the machine's conntrack settings alone.
func TestConfigIsPerNode(t *testing.T) {
	inst, err := instance.New(2, "/tmp/x", 3)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(Config(inst, 1, "/tmp/x/kube-proxy.kubeconfig")), &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"hostnameOverride":   "sandbox-b",
		"mode":               "nftables",
		"clusterCIDR":        "10.244.32.0/20",
		"nodePortAddresses":  []any{"10.244.32.3/32"},
		"healthzBindAddress": "10.244.32.3:10256",
		"conntrack": map[string]any{"maxPerCore": float64(0), "min": float64(0),
			"tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
	}
	for k, v := range want {
		if !reflect.DeepEqual(cfg[k], v) {
			t.Errorf("%s = %#v, want %#v", k, cfg[k], v)
		}
	}
	if nft := cfg["nftables"].(map[string]any); nft["masqueradeAll"] != true {
		t.Errorf("nftables.masqueradeAll = %v: replies from endpoints on the bridge would bypass the node", nft["masqueradeAll"])
	}
}
