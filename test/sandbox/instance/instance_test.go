package instance

import (
	"strings"
	"testing"
)

// Two slots must never share an address range, a port or a kernel object name.
func TestSlotsDoNotCollide(t *testing.T) {
	ports := map[int]int{}
	names := map[string]int{}
	for s := 0; s < MaxSlots; s++ {
		inst, err := New(s, "/tmp/x", MaxNodes)
		if err != nil {
			t.Fatal(err)
		}
		inst.Registry = inst.RegistryAddr()
		for o := 0; o < s; o++ {
			other, _ := New(o, "/tmp/y", MaxNodes)
			if inst.PodCIDR().Overlaps(other.PodCIDR()) || inst.ServiceCIDR().Overlaps(other.ServiceCIDR()) ||
				inst.PodCIDR().Overlaps(other.ServiceCIDR()) {
				t.Errorf("slots %d and %d overlap", s, o)
			}
		}
		for _, p := range inst.Ports() {
			if prev, ok := ports[p]; ok {
				t.Errorf("port %d used by slots %d and %d", p, prev, s)
			}
			ports[p] = s
			if p >= 32768 {
				t.Errorf("port %d of slot %d is in the ephemeral range", p, s)
			}
		}
		for _, n := range []string{inst.Bridge(), inst.CgroupName(), inst.NamePrefix()} {
			if prev, ok := names[n]; ok {
				t.Errorf("name %q used by slots %d and %d", n, prev, s)
			}
			names[n] = s
		}
		// Interface names are at most 15 characters: the veth is prefix + 6 hex digits.
		if l := len(inst.NamePrefix()) + 6; l > 15 || len(inst.Bridge()) > 15 {
			t.Errorf("slot %d: interface names too long (%d, %q)", s, l, inst.Bridge())
		}
		for _, other := range []string{"rksb1-", "rksb10-"} {
			if other != inst.NamePrefix() && strings.HasPrefix(other, inst.NamePrefix()) {
				t.Errorf("prefix %q of slot %d matches another slot's names %q", inst.NamePrefix(), s, other)
			}
		}
		if !inst.PodCIDR().Contains(inst.Gateway()) || !inst.ServiceCIDR().Contains(inst.KubernetesServiceIP()) ||
			!inst.ServiceCIDR().Contains(inst.KubeDNSServiceIP()) {
			t.Errorf("slot %d: gateway or service IP outside its range", s)
		}
		for n := 0; n < MaxNodes; n++ {
			ip := inst.NodeIP(n)
			if !inst.PodCIDR().Contains(ip) || ip == inst.Gateway() || !inst.IsReserved(ip) {
				t.Errorf("slot %d: node %d address %s not a reserved address of the pod range", s, n, ip)
			}
		}
		if inst.IsReserved(inst.NodeIP(MaxNodes - 1).Next()) {
			t.Errorf("slot %d: the first pod address is reserved", s)
		}
		if l := len(inst.NodeNetNS(MaxNodes - 1)); l > 15 || !strings.HasPrefix(inst.NodeNetNS(0), inst.NamePrefix()) {
			t.Errorf("slot %d: node link name %q too long or not of the slot", s, inst.NodeNetNS(MaxNodes-1))
		}
	}
}

func TestNew(t *testing.T) {
	if _, err := New(MaxSlots, "/tmp/x", 3); err == nil {
		t.Error("slot out of range accepted")
	}
	if _, err := New(0, "/tmp/x", 0); err == nil {
		t.Error("zero nodes accepted")
	}
	inst, err := New(2, "relative", 3)
	if err != nil || !strings.HasPrefix(inst.Dir, "/") {
		t.Errorf("dir should be made absolute: %q %v", inst.Dir, err)
	}
	if inst.NodeName(2) != "sandbox-c" || inst.NodeZone(2) != "c" || inst.NodeIndex("sandbox-b") != 1 || inst.NodeIndex("x") != -1 {
		t.Error("node names and zones")
	}
}

func TestLock(t *testing.T) {
	LockDir = t.TempDir()
	inst, err := New(3, t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, held := inst.LockHolder(); held {
		t.Fatal("fresh slot reported held")
	}
	lock, err := inst.AcquireLock()
	if err != nil {
		t.Fatal(err)
	}
	if dir, held := inst.LockHolder(); !held || dir != inst.Dir {
		t.Errorf("LockHolder = %q, %v; want %q, true", dir, held, inst.Dir)
	}
	other, _ := New(3, t.TempDir(), 1)
	if !other.OwnedBySomeoneElse() || inst.OwnedBySomeoneElse() {
		t.Error("OwnedBySomeoneElse")
	}
	if _, err := other.AcquireLock(); err == nil {
		t.Error("a held slot was acquired twice")
	}
	if dirs := RunningDirs(); len(dirs) != 1 || dirs[0] != inst.Dir {
		t.Errorf("RunningDirs = %v", dirs)
	}
	lock.Release()
	if _, held := inst.LockHolder(); held {
		t.Error("released slot reported held")
	}
}

// The registry's address is part of the record tools read from the state directory.
func TestSaveLoadKeepsRegistry(t *testing.T) {
	inst, err := New(3, t.TempDir(), 2)
	if err != nil {
		t.Fatal(err)
	}
	inst.Registry = inst.RegistryAddr()
	if err := inst.Save(); err != nil {
		t.Fatal(err)
	}
	got, err := Load(inst.Dir)
	if err != nil || got != inst {
		t.Fatalf("Load = %+v %v, want %+v", got, err, inst)
	}
}
