package builder

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// ownerRef is the controller reference every built object carries. The kind is passed in
// because objects read through a typed client usually have an empty TypeMeta.
func ownerRef(obj metav1.Object, kind string) metav1.OwnerReference {
	return *metav1.NewControllerRef(obj, v1beta2.GroupVersion.WithKind(kind))
}

// restartedAt is the value of the resource's AnnotationRestartedAt, "" without one.
func restartedAt(cr metav1.Object) string { return cr.GetAnnotations()[AnnotationRestartedAt] }

func checkCR(obj metav1.Object, isNil bool) error {
	if isNil {
		return errors.New("no custom resource given")
	}
	if obj.GetName() == "" || obj.GetNamespace() == "" {
		return errors.New("the custom resource has no name or namespace")
	}
	return nil
}

// SecretPassword is the password a password Secret's value holds: without the whitespace
// around it, as the replaced operator reads it, since a Secret made with `echo pw | base64`
// ends in a newline that no client types.
func SecretPassword(value []byte) string { return strings.TrimSpace(string(value)) }

// passwordRef checks that the resolved password agrees with the spec: a password exactly when
// the spec names a Secret key. It returns the reference, or nil when there is no password.
func passwordRef(ref *v1beta2.ExistingPasswordSecret, password, field string) (*v1beta2.ExistingPasswordSecret, error) {
	if ref == nil || (ref.Name == nil && ref.Key == nil) {
		if password != "" {
			return nil, fmt.Errorf("a password was given but %s names no Secret", field)
		}
		return nil, nil
	}
	if ref.Name == nil || *ref.Name == "" || ref.Key == nil || *ref.Key == "" {
		return nil, fmt.Errorf("%s needs both name and key", field)
	}
	if password == "" {
		return nil, fmt.Errorf("%s names Secret %q key %q, but no password was resolved from it", field, *ref.Name, *ref.Key)
	}
	return ref.DeepCopy(), nil
}

// applyKubernetesConfig copies what KubernetesConfig says about the workload.
func (w *workload) applyKubernetesConfig(kc *v1beta2.KubernetesConfig) error {
	if kc.Image == "" {
		return errors.New("kubernetesConfig.image is required")
	}
	w.image = kc.Image
	w.pullPolicy = pullPolicy(kc.ImagePullPolicy, kc.Image)
	if kc.ImagePullSecrets != nil {
		w.imagePullSecrets = *kc.ImagePullSecrets
	}
	w.resources = kc.Resources
	w.updateStrategy = updateStrategy(kc.UpdateStrategy)
	w.pvcRetention = kc.PersistentVolumeClaimRetentionPolicy
	if kc.MinReadySeconds != nil {
		w.minReadySeconds = *kc.MinReadySeconds
	}
	w.services = resolveServices(kc.Service)
	w.ignoreAnnotations = kc.IgnoreAnnotations
	return checkVolumeSources(w.tls, w.acl)
}

func (w *workload) applyExporter(e *v1beta2.RedisExporter) error {
	if e == nil || !e.Enabled {
		return nil
	}
	if e.Image == "" {
		return errors.New("redisExporter.image is required when the exporter is enabled")
	}
	w.exporter = e
	return nil
}

func (w *workload) applyInitContainer(ic *v1beta2.InitContainer) error {
	if ic == nil || ic.Enabled == nil || !*ic.Enabled {
		return nil
	}
	if ic.Image == "" {
		return errors.New("initContainer.image is required when the init container is enabled")
	}
	w.initContainer = ic
	return nil
}

// applySidecars comes after applyExporter and applyInitContainer: it checks that no two
// containers of the pod share a name.
func (w *workload) applySidecars(s *[]v1beta2.Sidecar) error {
	if s != nil {
		for _, c := range *s {
			if c.Name == "" || c.Image == "" {
				return errors.New("every sidecar needs a name and an image")
			}
		}
		w.sidecars = *s
	}
	return w.checkContainerNames()
}

// checkContainerNames refuses a pod whose containers would share a name, which the API server
// rejects: the Redis container takes its StatefulSet's name, so a resource named like one of
// the other containers ("redis-exporter", "init") cannot have that container as well.
func (w *workload) checkContainerNames() error {
	type named struct{ name, what string }
	all := []named{{w.serverContainerName(), "the server container (named after the StatefulSet)"}}
	if w.server == sentinelServer {
		all = append(all, named{sentinelInitName, "the sentinel init container"})
	}
	if w.exporter != nil {
		all = append(all, named{exporterContainerName, "the exporter container"})
	}
	if w.initContainer != nil {
		all = append(all, named{userInitContainerName, "the init container"})
	}
	if w.addressGated() {
		all = append(all, named{addressGateName, "the address gate init container"})
	}
	for _, s := range w.sidecars {
		all = append(all, named{s.Name, "sidecar " + s.Name})
	}
	seen := map[string]string{}
	for _, c := range all {
		if first, ok := seen[c.name]; ok {
			return fmt.Errorf("container name %q would be used by both %s and %s; rename the sidecar or the resource", c.name, first, c.what)
		}
		seen[c.name] = c.what
	}
	return nil
}

// checkVolumeSources refuses TLS and ACL settings that name no Secret or claim: the pods
// would never start.
func checkVolumeSources(tls *v1beta2.TLSConfig, acl *v1beta2.ACLConfig) error {
	if tls != nil && tls.Secret.SecretName == "" {
		return errors.New("TLS.secret.secretName is required")
	}
	if acl != nil {
		if acl.Secret != nil && acl.Secret.SecretName == "" {
			return errors.New("acl.secret.secretName is required")
		}
		if acl.Secret == nil && acl.PersistentVolumeClaim != nil && *acl.PersistentVolumeClaim == "" {
			return errors.New("acl.persistentVolumeClaim must name a claim")
		}
	}
	return nil
}

func (w *workload) applyStorage(s *v1beta2.Storage) {
	if s == nil {
		return
	}
	w.dataClaim = dataClaim(s)
	w.extraVolumes = s.VolumeMount
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// renderRedisConf renders redis.conf into the workload's ConfigMap and records its hash.
func (w *workload) renderRedisConf(c redisConf) *corev1.ConfigMap {
	w.configMapName = ConfigMapName(w.name)
	w.configHash = hashOf(c.render(false))
	return w.configMap(RedisConfKey, c.render(true))
}

// redisConfFor assembles the redis.conf settings that every redis-server workload shares.
func (w *workload) redisConfFor(rc *v1beta2.RedisConfig, persistence bool) (redisConf, error) {
	w.persistence = persistence
	c := redisConf{
		port:        w.port,
		persistence: persistence,
		tls:         w.tls,
		auth:        w.authSecretName != "",
	}
	if rc != nil {
		if err := checkDynamicConfig(rc.DynamicConfig); err != nil {
			return c, err
		}
		c.dynamic = rc.DynamicConfig
		mm, err := maxMemory(rc.MaxMemoryPercentOfLimit, w.resources)
		if err != nil {
			return c, err
		}
		c.maxMemoryBytes = mm
		w.maxMemoryBytes = mm
		if rc.AdditionalRedisConfig != nil && *rc.AdditionalRedisConfig != "" {
			w.additionalConfigMap = *rc.AdditionalRedisConfig
			c.additional = true
		}
	}
	if w.acl != nil {
		switch {
		case w.acl.Secret != nil:
			c.aclFile = aclSecretPath
		case w.acl.PersistentVolumeClaim != nil:
			c.aclFile = aclPVCDir + "/" + ACLFileKey
		}
	}
	return c, nil
}
