package kubelet

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/test/sandbox/containerinit"
	"github.com/rediskube/redis-operator/test/sandbox/images"
)

func TestIdentity(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	yes := true
	opstree := images.Image{User: &images.User{UID: 1000, GID: 0}, Groups: map[int]int{1000: 0}}
	stock := images.Image{Groups: map[int]int{999: 999}}
	cases := []struct {
		name string
		pod  *corev1.PodSecurityContext
		ctr  *corev1.SecurityContext
		img  images.Image
		want *containerinit.User
		err  bool
	}{
		{name: "root by default"},
		{name: "pod user, fsGroup and supplemental groups",
			pod:  &corev1.PodSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(1000), FSGroup: i64(2000), SupplementalGroups: []int64{3000, 2000}},
			want: &containerinit.User{UID: 1000, GID: 1000, Groups: []int{2000, 3000}}},
		{name: "container overrides pod",
			pod:  &corev1.PodSecurityContext{RunAsUser: i64(1000)},
			ctr:  &corev1.SecurityContext{RunAsUser: i64(65532)},
			want: &containerinit.User{UID: 65532}},
		{name: "non-root with a user", pod: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: i64(7)}, want: &containerinit.User{UID: 7}},
		{name: "non-root without a user is refused", ctr: &corev1.SecurityContext{RunAsNonRoot: &yes}, err: true},
		{name: "non-root as uid 0 is refused", pod: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: i64(0)}, err: true},
		{name: "the image's user when the pod sets none", img: opstree, want: &containerinit.User{UID: 1000, GID: 0}},
		{name: "non-root with the image's non-root user", ctr: &corev1.SecurityContext{RunAsNonRoot: &yes}, img: opstree,
			want: &containerinit.User{UID: 1000, GID: 0}},
		{name: "the pod's user over the image's", pod: &corev1.PodSecurityContext{RunAsUser: i64(999), FSGroup: i64(999)}, img: stock,
			want: &containerinit.User{UID: 999, GID: 999, Groups: []int{999}}},
		{name: "a user the image does not know gets group 0", pod: &corev1.PodSecurityContext{RunAsUser: i64(4321)}, img: stock,
			want: &containerinit.User{UID: 4321, GID: 0}},
		{name: "the image's group goes with the pod's runAsGroup", pod: &corev1.PodSecurityContext{RunAsGroup: i64(5)}, img: opstree,
			want: &containerinit.User{UID: 1000, GID: 5}},
	}
	for _, tc := range cases {
		pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.pod}}
		got, err := identity(pod, &corev1.Container{Name: "c", SecurityContext: tc.ctr}, tc.img)
		var ce *configError
		if tc.err != errors.As(err, &ce) || (!tc.err && err != nil) {
			t.Errorf("%s: error %v, want error %v", tc.name, err, tc.err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: identity = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestRunAs(t *testing.T) {
	if got := runAs(nil, []string{"id"}); !reflect.DeepEqual(got, []string{"--", "id"}) {
		t.Errorf("root: %q", got)
	}
	got := runAs(&containerinit.User{UID: 1000, GID: 1, Groups: []int{2000, 3000}}, []string{"id", "-u"})
	want := []string{"--", "setpriv", "--reuid", "1000", "--regid", "1", "--groups", "2000,3000", "--", "id", "-u"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("runAs = %q, want %q", got, want)
	}
	// No supplementary groups: nsenter sets the identity, nothing of the image's is needed.
	got = runAs(&containerinit.User{UID: 5}, []string{"sh"})
	want = []string{"--setuid", "5", "--setgid", "0", "--", "sh"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("runAs = %q, want %q", got, want)
	}
}

func TestApplyFSGroup(t *testing.T) {
	dir := t.TempDir()
	if _, err := writeAtomic(dir, map[string]fileProjection{"key": {Data: []byte("x"), Mode: 0o400}}); err != nil {
		t.Fatal(err)
	}
	if err := applyFSGroup(dir, 4242, true); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "key"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Gid != 4242 || fi.Mode().Perm() != 0o440 {
		t.Errorf("secret file: gid %d mode %v, want 4242 and 0440", st.Gid, fi.Mode().Perm())
	}
	rw := t.TempDir()
	if err := os.Mkdir(filepath.Join(rw, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := applyFSGroup(rw, 4242, false); err != nil {
		t.Fatal(err)
	}
	fi, err = os.Stat(filepath.Join(rw, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSetgid == 0 || fi.Mode().Perm() != 0o770 {
		t.Errorf("directory mode %v, want setgid and 0770", fi.Mode())
	}
}
