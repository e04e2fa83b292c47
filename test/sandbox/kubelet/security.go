package kubelet

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/test/sandbox/containerinit"
)

// identity resolves the user a container runs as from the pod's and the container's
// securityContext, as the kubelet does. Images run as root unless told otherwise; a
// runAsNonRoot container without a non-zero runAsUser is refused, as the kubelet refuses it
// for a root image. nil means root with no extra groups.
func identity(pod *corev1.Pod, c *corev1.Container) (*containerinit.User, error) {
	var uid, gid *int64
	var nonRoot *bool
	var groups []int64
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid, nonRoot = psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
		if psc.FSGroup != nil {
			groups = append(groups, *psc.FSGroup)
		}
		groups = append(groups, psc.SupplementalGroups...)
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsUser != nil {
			uid = csc.RunAsUser
		}
		if csc.RunAsGroup != nil {
			gid = csc.RunAsGroup
		}
		if csc.RunAsNonRoot != nil {
			nonRoot = csc.RunAsNonRoot
		}
	}
	if nonRoot != nil && *nonRoot && (uid == nil || *uid == 0) {
		return nil, configErrorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)",
			pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)
	}
	if uid == nil && gid == nil && len(groups) == 0 {
		return nil, nil
	}
	u := &containerinit.User{}
	if uid != nil {
		u.UID = int(*uid)
	}
	if gid != nil {
		u.GID = int(*gid)
	}
	seen := map[int64]bool{}
	for _, g := range groups {
		if !seen[g] {
			seen[g] = true
			u.Groups = append(u.Groups, int(g))
		}
	}
	return u, nil
}

// setpriv prefixes argv so that it runs as u (for exec and exec probes, which nsenter
// starts as root).
func setpriv(u *containerinit.User, argv []string) []string {
	if u == nil {
		return argv
	}
	groups := []string{"--clear-groups"}
	if len(u.Groups) > 0 {
		var gs []string
		for _, g := range u.Groups {
			gs = append(gs, strconv.Itoa(g))
		}
		groups = []string{"--groups", strings.Join(gs, ",")}
	}
	out := append([]string{"setpriv", "--reuid", strconv.Itoa(u.UID), "--regid", strconv.Itoa(u.GID)}, groups...)
	return append(append(out, "--"), argv...)
}

// applyFSGroup gives a volume to the pod's fsGroup as the kubelet does: group ownership,
// group read (and write unless read-only) permission, and set-gid directories.
func applyFSGroup(root string, gid int64, readOnly bool) error {
	mask := os.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if err := os.Lchown(p, -1, int(gid)); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if d.IsDir() {
			m |= os.ModeSetgid | 0o110
		}
		return os.Chmod(p, info.Mode()|m)
	})
}
