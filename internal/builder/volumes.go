package builder

import (
	corev1 "k8s.io/api/core/v1"
)

// volumes lists first the volumes the replaced operator's pods have too, in its order (the
// user's, then tls-certs), then ours; its data volume is a claim template, never listed here.
func (w *workload) volumes() []corev1.Volume {
	out := deepCopySlice(w.extraVolumes.Volume, (*corev1.Volume).DeepCopy)
	if w.tls != nil {
		src := w.tls.Secret.DeepCopy()
		if src.DefaultMode == nil {
			src.DefaultMode = w.secretFileMode()
		}
		out = append(out, corev1.Volume{Name: tlsVolume, VolumeSource: corev1.VolumeSource{Secret: src}})
	}
	// Ours alone from here.
	if w.dataClaim == nil {
		out = append(out, corev1.Volume{Name: w.name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if w.server == sentinelServer {
		out = append(out, corev1.Volume{Name: sentinelTmplVolume, VolumeSource: corev1.VolumeSource{Projected: w.sentinelProjection()}})
		if w.additionalConfigMap != "" {
			out = append(out, corev1.Volume{Name: sentinelAddlVolume, VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: w.additionalConfigMap}},
			}})
		}
		return out
	}
	out = append(out, corev1.Volume{Name: configVolume, VolumeSource: corev1.VolumeSource{Projected: w.redisProjection()}})
	if w.acl != nil && w.acl.Secret == nil && w.acl.PersistentVolumeClaim != nil {
		out = append(out, corev1.Volume{Name: aclPVCVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: *w.acl.PersistentVolumeClaim},
		}})
	}
	out = append(out, w.restoreVolumes()...)
	if w.nodePorts {
		// Every key, not listed items: a pod added by a scale-out brings a new key, which
		// must not change the pod template.
		out = append(out, corev1.Volume{Name: nodePortsVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: NodePortsConfigMapName(w.name)}},
		}})
	}
	if w.addressGated() {
		out = append(out, w.addressHoldersVolume())
	}
	return out
}

// redisProjection assembles /etc/redis: redis.conf, the auth file, the user's ACL file and the
// user's additional config, each from its own ConfigMap or Secret.
func (w *workload) redisProjection() *corev1.ProjectedVolumeSource {
	p := &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{configMapSource(w.configMapName, RedisConfKey, RedisConfKey)}}
	if w.authSecretName != "" {
		p.Sources = append(p.Sources, secretSource(w.authSecretName,
			corev1.KeyToPath{Key: RedisAuthKey, Path: authFileRelPath, Mode: w.secretFileMode()},
			corev1.KeyToPath{Key: RedisPasswordKey, Path: passwordRelPath, Mode: w.secretFileMode()},
			corev1.KeyToPath{Key: RedisUserKey, Path: userRelPath, Mode: w.secretFileMode()},
		))
	}
	if w.acl != nil && w.acl.Secret != nil {
		// The operator's copy, not the user's Secret: an edit reaches the pods only once
		// checked, so a pod that restarts meanwhile still starts with the last good users.
		p.Sources = append(p.Sources, secretSource(ACLSecretName(w.instance),
			corev1.KeyToPath{Key: ACLFileKey, Path: ACLFileKey, Mode: w.secretFileMode()}))
	}
	if w.additionalConfigMap != "" {
		p.Sources = append(p.Sources, configMapSource(w.additionalConfigMap, AdditionalRedisConfKey, additionalRelPath))
	}
	return p
}

func (w *workload) sentinelProjection() *corev1.ProjectedVolumeSource {
	p := &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{configMapSource(w.configMapName, SentinelConfKey, SentinelConfKey)}}
	if w.authSecretName != "" {
		p.Sources = append(p.Sources, secretSource(w.authSecretName,
			corev1.KeyToPath{Key: SentinelAuthKey, Path: sentinelAuthRel, Mode: w.secretFileMode()}))
	}
	return p
}

// configMapSource projects one key of a ConfigMap.
func configMapSource(name, key, path string) corev1.VolumeProjection {
	return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: name},
		Items:                []corev1.KeyToPath{{Key: key, Path: path}},
	}}
}

// secretSource projects the listed keys of a Secret.
func secretSource(name string, items ...corev1.KeyToPath) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: name},
		Items:                items,
	}}
}
