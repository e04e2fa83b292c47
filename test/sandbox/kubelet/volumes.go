package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/test/sandbox/containerinit"
)

// volumeSet materialises a pod's volumes as host directories that container-init
// bind-mounts. ConfigMap, Secret, projected and downward-API volumes are re-rendered
// periodically, so a mounted volume follows changes of its sources as on a real node.
type volumeSet struct {
	sb  *podSandbox
	dir string

	mu     sync.Mutex
	paths  map[string]string
	tokens map[string]*cachedToken
}

type cachedToken struct {
	token   string
	issued  time.Time
	expires time.Time
}

func newVolumeSet(sb *podSandbox) *volumeSet {
	return &volumeSet{sb: sb, dir: filepath.Join(sb.dir, "volumes"), paths: map[string]string{}, tokens: map[string]*cachedToken{}}
}

// path returns the host path of volume name.
func (v *volumeSet) path(name string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.paths[name]
	return p, ok
}

// setup prepares every volume; it fails on the first one that cannot be prepared yet.
func (v *volumeSet) setup(ctx context.Context) error {
	pod := v.sb.currentPod()
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		p, err := v.prepare(ctx, pod, vol)
		if err != nil {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
		if err := v.ownership(pod, vol, p); err != nil {
			return fmt.Errorf("volume %q: set fsGroup ownership: %w", vol.Name, err)
		}
		v.mu.Lock()
		v.paths[vol.Name] = p
		v.mu.Unlock()
	}
	return nil
}

// refresh re-renders the volumes whose content comes from API objects.
func (v *volumeSet) refresh(ctx context.Context) {
	pod := v.sb.currentPod()
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.ConfigMap == nil && vol.Secret == nil && vol.Projected == nil && vol.DownwardAPI == nil {
			continue
		}
		p, err := v.prepare(ctx, pod, vol)
		if err == nil {
			err = v.ownership(pod, vol, p)
		}
		if err != nil {
			v.sb.log.Debug("refresh volume", "volume", vol.Name, "err", err)
		}
	}
}

func (v *volumeSet) prepare(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume) (string, error) {
	dir := filepath.Join(v.dir, vol.Name)
	rt := v.sb.p.c
	switch {
	case vol.EmptyDir != nil:
		// World-writable as the kubelet makes it (MkdirAll's mode is cut by the umask), so
		// any image's user may write it without an fsGroup.
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return dir, err
		}
		return dir, os.Chmod(dir, 0o777)
	case vol.HostPath != nil:
		return hostPath(vol.HostPath)
	case vol.PersistentVolumeClaim != nil:
		return rt.claimPath(pod.Namespace, vol.PersistentVolumeClaim.ClaimName)
	case vol.Ephemeral != nil:
		return rt.claimPath(pod.Namespace, pod.Name+"-"+vol.Name)
	case vol.ConfigMap != nil:
		payload, err := v.configMapPayload(pod.Namespace, vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.DefaultMode, optional(vol.ConfigMap.Optional))
		if err != nil {
			return "", err
		}
		_, err = writeAtomic(dir, payload)
		return dir, err
	case vol.Secret != nil:
		payload, err := v.secretPayload(pod.Namespace, vol.Secret.SecretName, vol.Secret.Items, vol.Secret.DefaultMode, optional(vol.Secret.Optional))
		if err != nil {
			return "", err
		}
		_, err = writeAtomic(dir, payload)
		return dir, err
	case vol.DownwardAPI != nil:
		payload, err := v.downwardPayload(pod, vol.DownwardAPI.Items, vol.DownwardAPI.DefaultMode)
		if err != nil {
			return "", err
		}
		_, err = writeAtomic(dir, payload)
		return dir, err
	case vol.Projected != nil:
		payload, err := v.projectedPayload(ctx, pod, vol)
		if err != nil {
			return "", err
		}
		_, err = writeAtomic(dir, payload)
		return dir, err
	}
	return "", fmt.Errorf("volume type not supported by the sandbox (supported: emptyDir, configMap, secret, projected, downwardAPI, persistentVolumeClaim, ephemeral, hostPath)")
}

// ownership applies the pod's fsGroup to the volumes the kubelet applies it to (not
// hostPath).
func (v *volumeSet) ownership(pod *corev1.Pod, vol *corev1.Volume, path string) error {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil || vol.HostPath != nil {
		return nil
	}
	readOnly := vol.ConfigMap != nil || vol.Secret != nil || vol.Projected != nil || vol.DownwardAPI != nil
	return applyFSGroup(path, *sc.FSGroup, readOnly)
}

func hostPath(hp *corev1.HostPathVolumeSource) (string, error) {
	t := corev1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	switch t {
	case corev1.HostPathDirectoryOrCreate:
		return hp.Path, os.MkdirAll(hp.Path, 0o755)
	case corev1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
			return "", err
		}
		f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return "", err
		}
		return hp.Path, f.Close()
	case corev1.HostPathUnset:
		return hp.Path, nil
	}
	if _, err := os.Stat(hp.Path); err != nil {
		return "", err
	}
	return hp.Path, nil
}

func mode(item, def *int32) os.FileMode {
	if item != nil {
		return os.FileMode(*item)
	}
	if def != nil {
		return os.FileMode(*def)
	}
	return 0o644
}

func (v *volumeSet) configMapPayload(ns, name string, items []corev1.KeyToPath, defMode *int32, opt bool) (map[string]fileProjection, error) {
	out := map[string]fileProjection{}
	cm, err := v.sb.p.c.configMap(ns, name)
	if err != nil {
		if opt && apierrors.IsNotFound(err) {
			return out, nil
		}
		return nil, fmt.Errorf("configmap %q not found", name)
	}
	data := map[string][]byte{}
	for k, val := range cm.Data {
		data[k] = []byte(val)
	}
	for k, val := range cm.BinaryData {
		data[k] = val
	}
	return project(data, items, defMode, opt, "configmap "+name)
}

func (v *volumeSet) secretPayload(ns, name string, items []corev1.KeyToPath, defMode *int32, opt bool) (map[string]fileProjection, error) {
	out := map[string]fileProjection{}
	s, err := v.sb.p.c.secret(ns, name)
	if err != nil {
		if opt && apierrors.IsNotFound(err) {
			return out, nil
		}
		return nil, fmt.Errorf("secret %q not found", name)
	}
	return project(s.Data, items, defMode, opt, "secret "+name)
}

func project(data map[string][]byte, items []corev1.KeyToPath, defMode *int32, opt bool, what string) (map[string]fileProjection, error) {
	out := map[string]fileProjection{}
	if len(items) == 0 {
		for k, val := range data {
			out[k] = fileProjection{Data: val, Mode: mode(nil, defMode)}
		}
		return out, nil
	}
	for _, it := range items {
		val, ok := data[it.Key]
		if !ok {
			if opt {
				continue
			}
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		out[it.Path] = fileProjection{Data: val, Mode: mode(it.Mode, defMode)}
	}
	return out, nil
}

func (v *volumeSet) downwardPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defMode *int32) (map[string]fileProjection, error) {
	out := map[string]fileProjection{}
	env := v.sb.envContext(pod)
	for _, it := range items {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = env.fieldValue(it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := findContainer(pod, it.ResourceFieldRef.ContainerName)
			if c == nil {
				return nil, fmt.Errorf("resourceFieldRef: no container %q", it.ResourceFieldRef.ContainerName)
			}
			val, err = env.resourceValue(c, it.ResourceFieldRef)
		}
		if err != nil {
			return nil, err
		}
		out[it.Path] = fileProjection{Data: []byte(val), Mode: mode(it.Mode, defMode)}
	}
	return out, nil
}

func (v *volumeSet) projectedPayload(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume) (map[string]fileProjection, error) {
	out := map[string]fileProjection{}
	defMode := vol.Projected.DefaultMode
	for i, src := range vol.Projected.Sources {
		var part map[string]fileProjection
		var err error
		switch {
		case src.ConfigMap != nil:
			part, err = v.configMapPayload(pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, defMode, optional(src.ConfigMap.Optional))
		case src.Secret != nil:
			part, err = v.secretPayload(pod.Namespace, src.Secret.Name, src.Secret.Items, defMode, optional(src.Secret.Optional))
		case src.DownwardAPI != nil:
			part, err = v.downwardPayload(pod, src.DownwardAPI.Items, defMode)
		case src.ServiceAccountToken != nil:
			var tok string
			tok, err = v.token(ctx, pod, fmt.Sprintf("%s/%d", vol.Name, i), src.ServiceAccountToken)
			part = map[string]fileProjection{src.ServiceAccountToken.Path: {Data: []byte(tok), Mode: mode(nil, defMode)}}
		default:
			err = fmt.Errorf("projected source #%d is not supported by the sandbox", i)
		}
		if err != nil {
			return nil, err
		}
		for k, f := range part {
			out[k] = f
		}
	}
	return out, nil
}

// token returns a service-account token bound to the pod, renewed after 80% of its life as
// the kubelet does.
func (v *volumeSet) token(ctx context.Context, pod *corev1.Pod, key string, src *corev1.ServiceAccountTokenProjection) (string, error) {
	v.mu.Lock()
	t := v.tokens[key]
	v.mu.Unlock()
	if t != nil && time.Since(t.issued) < t.expires.Sub(t.issued)*8/10 {
		return t.token, nil
	}
	exp := int64(3600)
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	var aud []string
	if src.Audience != "" {
		aud = []string{src.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         aud,
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := v.sb.p.c.cfg.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request token for service account %q: %w", sa, err)
	}
	t = &cachedToken{token: res.Status.Token, issued: time.Now(), expires: res.Status.ExpirationTimestamp.Time}
	v.mu.Lock()
	v.tokens[key] = t
	v.mu.Unlock()
	return t.token, nil
}

// mountsFor returns the bind mounts of a container's volumeMounts.
func (v *volumeSet) mountsFor(c *corev1.Container, vars map[string]string) ([]containerinit.Mount, error) {
	var out []containerinit.Mount
	for _, m := range c.VolumeMounts {
		src, ok := v.path(m.Name)
		if !ok {
			return nil, configErrorf("volume %q of mount %s is not defined or not ready", m.Name, m.MountPath)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = Expand(m.SubPathExpr, func(n string) (string, bool) { s, ok := vars[n]; return s, ok })
		}
		if sub != "" {
			if strings.Contains(sub, "..") || filepath.IsAbs(sub) {
				return nil, configErrorf("invalid subPath %q", sub)
			}
			p := filepath.Join(src, sub)
			// A subPath of a configMap/secret entry resolves through the ..data symlink once:
			// like on a real node, a subPath mount does not follow later updates.
			if resolved, err := filepath.EvalSymlinks(p); err == nil {
				p = resolved
			} else if err := os.MkdirAll(p, 0o755); err != nil {
				return nil, err
			}
			src = p
		}
		out = append(out, containerinit.Mount{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly})
	}
	return out, nil
}
