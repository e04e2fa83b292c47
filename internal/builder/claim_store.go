package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/rediskube/redis-operator/api/v1alpha1"
)

// A RedisBackup stored on a PersistentVolumeClaim goes through a claim store: an S3 gateway
// (versitygw, posix backend) the operator runs over the claim, so that backups and restores
// take the one S3 path they take for any other store. The gateway's root is the claim's
// subPath folder, and its one bucket, ClaimStoreBucket, a folder in it.
const (
	// DefaultClaimStoreImage runs the gateway: the image config/samples/backup/s3-store.yaml uses.
	DefaultClaimStoreImage = "versity/versitygw:v1.8.0"
	// DefaultClaimStoreInitImage makes the bucket's folder before the gateway starts.
	DefaultClaimStoreInitImage = "busybox:1.37"
	// ClaimStoreBucket is the claim store's one bucket: the folder "backups" of the subPath.
	ClaimStoreBucket = "backups"
	// ClaimStorePort is the gateway's plain-HTTP port, inside the cluster only.
	ClaimStorePort = 8333
	// LabelBackupStore (the store's name) marks the objects of a claim store and selects its
	// pod; the operator takes an object of a claim store's name for its own only with it.
	LabelBackupStore = "redis.opstreelabs.in/backup-store"
	// ComponentBackupStore is the claim store's LabelComponent.
	ComponentBackupStore = "backup-store"
	// AnnotationBackupStoreClaim names the claim a store serves (a claim's name may be longer
	// than a label value).
	AnnotationBackupStoreClaim = "redis.opstreelabs.in/claim"

	claimStoreNameLabel  = "app.kubernetes.io/name"
	claimStoreNameValue  = "redis-backup-store"
	claimStoreSuffix     = "-backup-store"
	claimStoreDataVolume = "data"
	claimStoreDataDir    = "/data"
	// claimStoreUser runs both containers, not root; fsGroup makes the claim writable by it.
	claimStoreUser = 10001
)

// ClaimStoreInput is a claim store the controller resolved.
type ClaimStoreInput struct {
	Namespace string
	// Claim is the RedisBackups' spec.storage.persistentVolumeClaim.
	Claim v1alpha1.PVCStorage
	// Image runs the gateway, InitImage makes the bucket's folder (mkdir).
	Image, InitImage string
	// AccessKeyID and SecretAccessKey are the gateway's root credentials: generated once by
	// the controller and kept in the store's Secret.
	AccessKeyID, SecretAccessKey string
}

// ClaimStore is what runs a claim store: its credentials, its Service and its Deployment.
type ClaimStore struct {
	Secret     *corev1.Secret
	Service    *corev1.Service
	Deployment *appsv1.Deployment
}

// ClaimStoreName is the name of the Secret, Service and Deployment of the store over claim:
// "<claim>-backup-store", or, when that is no Service name (too long, or with dots), a name
// made of a digest of the claim's.
func ClaimStoreName(claim string) string {
	if name := claim + claimStoreSuffix; len(validation.IsDNS1035Label(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(claim))
	return "claim-" + hex.EncodeToString(sum[:6]) + claimStoreSuffix
}

// ClaimStoreS3 is the S3 store a backup on claim goes to: the claim store's Service (a bare
// name, resolved in the backup's namespace), its bucket and its credentials Secret.
func ClaimStoreS3(claim string) v1alpha1.S3Storage {
	name := ClaimStoreName(claim)
	return v1alpha1.S3Storage{
		Endpoint:          "http://" + net.JoinHostPort(name, strconv.Itoa(ClaimStorePort)),
		Bucket:            ClaimStoreBucket,
		ForcePathStyle:    true,
		CredentialsSecret: v1alpha1.SecretReference{Name: name},
	}
}

// ClaimSubPath is a subPath as the volume mount takes it: cleaned, "" for the whole claim.
// An absolute path or one that leaves the claim is an error.
func ClaimSubPath(subPath string) (string, error) {
	if subPath == "" {
		return "", nil
	}
	if strings.HasPrefix(subPath, "/") {
		return "", fmt.Errorf("subPath %q must be relative to the claim's root", subPath)
	}
	if slices.Contains(strings.Split(subPath, "/"), "..") {
		return "", fmt.Errorf("subPath %q must not hold \"..\"", subPath)
	}
	clean := path.Clean(subPath)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// ClaimStoreLabels are the labels of a claim store's objects and pod.
func ClaimStoreLabels(claim string) map[string]string {
	return map[string]string{
		claimStoreNameLabel: claimStoreNameValue,
		LabelComponent:      ComponentBackupStore,
		LabelManagedBy:      ManagedByValue,
		LabelBackupStore:    ClaimStoreName(claim),
	}
}

// BuildClaimStore builds the claim store's objects, without owners (the controller adds the
// RedisBackups that use it).
func BuildClaimStore(in ClaimStoreInput) (*ClaimStore, error) {
	if in.Claim.ClaimName == "" {
		return nil, errors.New("the claim store has no claim")
	}
	if in.Image == "" || in.InitImage == "" {
		return nil, errors.New("the claim store has no image")
	}
	if in.AccessKeyID == "" || in.SecretAccessKey == "" {
		return nil, errors.New("the claim store has no credentials")
	}
	subPath, err := ClaimSubPath(in.Claim.SubPath)
	if err != nil {
		return nil, err
	}
	name := ClaimStoreName(in.Claim.ClaimName)
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: in.Namespace, Labels: ClaimStoreLabels(in.Claim.ClaimName),
			Annotations: map[string]string{AnnotationBackupStoreClaim: in.Claim.ClaimName}}
	}
	secret := &corev1.Secret{
		ObjectMeta: meta(),
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			RestoreAccessKeyIDKey:     []byte(in.AccessKeyID),
			RestoreSecretAccessKeyKey: []byte(in.SecretAccessKey),
		},
	}
	selector := map[string]string{claimStoreNameLabel: claimStoreNameValue, LabelBackupStore: name}
	service := &corev1.Service{
		ObjectMeta: meta(),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector,
			Ports: []corev1.ServicePort{{Name: "s3", Port: ClaimStorePort, TargetPort: intstr.FromString("s3"),
				Protocol: corev1.ProtocolTCP}},
		},
	}
	containerSecurity := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	credential := func(env, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}}
	}
	deployment := &appsv1.Deployment{
		ObjectMeta: meta(),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			// One gateway over the claim at a time: a ReadWriteOnce claim cannot be mounted by
			// a new pod while the old one runs.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: ClaimStoreLabels(in.Claim.ClaimName)},
				Spec: corev1.PodSpec{
					// The gateway needs no API access.
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true),
						RunAsUser:    ptr.To[int64](claimStoreUser),
						RunAsGroup:   ptr.To[int64](claimStoreUser),
						FSGroup:      ptr.To[int64](claimStoreUser),
						SeccompProfile: &corev1.SeccompProfile{
							Type: corev1.SeccompProfileTypeRuntimeDefault,
						},
					},
					InitContainers: []corev1.Container{{
						// The posix backend's bucket is a folder of its root: made in the
						// whole claim, so that the subPath the gateway mounts exists too,
						// owned by the store's user rather than made by the kubelet as root.
						Name:            "make-bucket",
						Image:           in.InitImage,
						Command:         []string{"mkdir", "-p", path.Join(claimStoreDataDir, subPath, ClaimStoreBucket)},
						SecurityContext: containerSecurity.DeepCopy(),
						VolumeMounts:    []corev1.VolumeMount{{Name: claimStoreDataVolume, MountPath: claimStoreDataDir}},
					}},
					Containers: []corev1.Container{{
						Name:  "versitygw",
						Image: in.Image,
						// Plain HTTP on the port, the posix backend over the subPath. The
						// credentials come from the environment, never the arguments, which
						// any process on the node can read.
						Args: []string{"--port", fmt.Sprintf(":%d", ClaimStorePort), "posix", claimStoreDataDir},
						Env: []corev1.EnvVar{
							credential("ROOT_ACCESS_KEY", RestoreAccessKeyIDKey),
							credential("ROOT_SECRET_KEY", RestoreSecretAccessKeyKey),
						},
						Ports: []corev1.ContainerPort{{Name: "s3", ContainerPort: ClaimStorePort, Protocol: corev1.ProtocolTCP}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("s3")}},
							// Kubernetes' defaults but the period, spelt out: the live Deployment
							// then holds what was applied, and an idle reconcile sends nothing.
							PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
						},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("50m"),
							corev1.ResourceMemory: resource.MustParse("64Mi"),
						}},
						SecurityContext: containerSecurity.DeepCopy(),
						VolumeMounts: []corev1.VolumeMount{{Name: claimStoreDataVolume, MountPath: claimStoreDataDir,
							SubPath: subPath}},
					}},
					Volumes: []corev1.Volume{{
						Name: claimStoreDataVolume,
						VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
							ClaimName: in.Claim.ClaimName,
						}},
					}},
				},
			},
		},
	}
	return &ClaimStore{Secret: secret, Service: service, Deployment: deployment}, nil
}
