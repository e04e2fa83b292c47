package kubelet

import (
	"testing"
	"time"
)

// Unless told otherwise, volumes refresh at a kubelet's default sync period, not faster:
// a sandbox that refreshed at once would hide an operator relying on an instant update.
func TestVolumeRefreshDefaultsToAKubeletsSyncPeriod(t *testing.T) {
	if got := (Config{}).EffectiveVolumeRefresh(); got != time.Minute {
		t.Errorf("default volume refresh = %s, want 1m0s", got)
	}
	if got := (Config{VolumeRefresh: 3 * time.Second}).EffectiveVolumeRefresh(); got != 3*time.Second {
		t.Errorf("volume refresh set to 3s = %s", got)
	}
}
