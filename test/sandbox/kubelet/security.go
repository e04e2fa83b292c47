package kubelet

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rediskube/redis-operator/test/sandbox/containerinit"
	"github.com/rediskube/redis-operator/test/sandbox/images"
)

// identity resolves the user a container runs as, as the kubelet and the container runtime
// do: the container's securityContext over the pod's over the image's USER; a runAsUser
// without runAsGroup takes that user's primary group in the image (0 for a user the image
// does not know). A runAsNonRoot container that would run as root is refused, as the kubelet
// refuses it. nil means root with no extra groups.
func identity(pod *corev1.Pod, c *corev1.Container, img images.Image) (*containerinit.User, error) {
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
	switch {
	case uid == nil && img.User != nil:
		u := int64(img.User.UID)
		uid = &u
		if gid == nil {
			g := int64(img.User.GID)
			gid = &g
		}
	case uid != nil && gid == nil:
		g := int64(img.Groups[int(*uid)])
		gid = &g
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

// runAs ends nsenter's arguments so that argv runs as u (for exec and exec probes, which
// nsenter starts as root). nsenter sets a uid and gid itself (and clears the supplementary
// groups), so an image without setpriv (a pulled image of one binary) can be exec'd into as
// its user; supplementary groups need the image's setpriv.
func runAs(u *containerinit.User, argv []string) []string {
	if u == nil {
		return append([]string{"--"}, argv...)
	}
	if len(u.Groups) == 0 {
		return append([]string{"--setuid", strconv.Itoa(u.UID), "--setgid", strconv.Itoa(u.GID), "--"}, argv...)
	}
	var gs []string
	for _, g := range u.Groups {
		gs = append(gs, strconv.Itoa(g))
	}
	out := []string{"--", "setpriv", "--reuid", strconv.Itoa(u.UID), "--regid", strconv.Itoa(u.GID), "--groups", strings.Join(gs, ",")}
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
