package builder

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rediskube/redis-operator/api/v1beta2"
)

// The address gate of a cluster behind NodePorts (clusterplan.AddressHolders says why): an
// init container that, in a pod starting without its nodes.conf, waits while the ConfigMap
// <cluster>-address-holders names a node for the pod, which the operator writes for each pod
// whose address a master serving slots holds, and clears once that master's shard is taken
// over (or nothing is left to protect). A pod with its nodes.conf is the node the cluster
// knows at that address and passes at once; so does every pod of a new cluster, whose
// ConfigMap does not exist yet (the volume is optional). The ConfigMap is mounted as a
// volume, which the kubelet refreshes while the container waits.

const (
	addressGateName      = "address-gate"
	addressHoldersVolume = "address-holders"
	addressHoldersDir    = "/etc/redis-address-holders"
)

// ClusterAddressHoldersName is the ConfigMap naming, by pod, the node that holds its address.
func ClusterAddressHoldersName(cluster string) string { return cluster + "-address-holders" }

// ClusterAddressHolders is that ConfigMap, holders being pod → node ID.
func ClusterAddressHolders(cr *v1beta2.RedisCluster, holders map[string]string) *corev1.ConfigMap {
	labels := map[string]string{LabelInstance: cr.Name, LabelSetupType: SetupCluster, LabelManagedBy: ManagedByValue, LabelCluster: cr.Name}
	data := maps.Clone(holders)
	if data == nil {
		data = map[string]string{}
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: objectMeta(ownerRef(cr, "RedisCluster"), cr.Namespace, ClusterAddressHoldersName(cr.Name), labels, nil),
		Data:       data,
	}
}

// addressGated: the workload's pods wait at the address gate.
func (w *workload) addressGated() bool { return w.nodePorts && w.busPort != 0 }

// addressGateContainer waits, in a pod without nodes.conf, until the pod's address is free.
// The script holds paths only; the file it waits on holds a node ID.
func (w *workload) addressGateContainer() corev1.Container {
	nodesConf := w.nodesConfDir + "/" + nodesConfFile
	holder := addressHoldersDir + `/"$` + podNameEnv + `"`
	script := `if [ -s ` + nodesConf + ` ] || [ ! -s ` + holder + ` ]; then exit 0; fi
echo "this pod starts without its node identity (` + nodesConf + `) and its address still belongs to node $(cat ` + holder + `), which serves slots: Redis starts here once the cluster has given that node's shard to its replica, which would otherwise sync from an empty node"
while [ -s ` + holder + ` ]; do sleep 1; done
echo "the address is free: starting"`
	mounts := []corev1.VolumeMount{{Name: w.name, MountPath: dataDir}}
	if w.nodeConfClaim != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: nodeConfVolume, MountPath: nodeConfDir})
	}
	mounts = append(mounts, corev1.VolumeMount{Name: addressHoldersVolume, MountPath: addressHoldersDir, ReadOnly: true})
	return corev1.Container{
		Name:            addressGateName,
		Image:           w.image,
		ImagePullPolicy: w.pullPolicy,
		Command:         []string{"/bin/sh", "-c", script},
		Env: []corev1.EnvVar{{Name: podNameEnv, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
		Resources:       derefResources(w.resources),
		SecurityContext: w.ownSecurityContext(w.securityContext),
		VolumeMounts:    mounts,
	}
}

// addressHoldersVolume mounts the holders ConfigMap, every key (a scale-out adds pods), and
// optional: it does not exist before the cluster serves slots.
func (w *workload) addressHoldersVolume() corev1.Volume {
	return corev1.Volume{Name: addressHoldersVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: ClusterAddressHoldersName(w.instance)}, Optional: ptr.To(true)}}}
}
