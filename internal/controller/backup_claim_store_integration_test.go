//go:build integration

package controller

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/backup/store"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/s3test"
	"github.com/rediskube/redis-operator/internal/status"
)

// TestRedisBackupOnAClaim takes backups on a PersistentVolumeClaim. The envtest control plane
// runs no pods: the test checks the claim store the operator makes (its Secret of generated
// credentials, kept; its Service; its Deployment over the claim's subPath, owned by each
// backup on the claim, controlled by none) and that the backups wait, Pending and saying
// why, while the Deployment is not available. It then plays the store's pod: a versitygw over
// a folder, started with the Secret's credentials and reached in place of the Service's name,
// and the Deployment's status made available. The backups complete through it, at
// pvc://<claim>/<subPath>/backups/..., the object a server loads serves every key, and a
// deleted backup's object is deleted through the store. A restore of a backup on the claim
// creates nothing while the store serves no pod, then restores from the store's Service. A
// Service of the store's name that the operator did not make fails a backup on that claim,
// untouched.
func TestRedisBackupOnAClaim(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	ctx := context.Background()
	backups := newClaimStore(t, ns, "backups")
	startOperator(t, ns, backups.stores())
	c := newClient(t)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	_, kubelet := runReadyStandalone(ctx, t, c, ns, "cache")
	rdb := goredis.NewClient(&goredis.Options{Addr: kubelet.pod("cache-0").addr(builder.DefaultRedisPort)})
	defer func() { _ = rdb.Close() }()
	writeBackupKeys(ctx, t, rdb)
	for _, name := range []string{"backups", "other"} {
		createClaim(t, c, ns, name)
	}
	onClaim := func(name, claim string) *v1alpha1.RedisBackup {
		b := &v1alpha1.RedisBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.RedisBackupSpec{Target: v1alpha1.BackupTarget{Kind: v1alpha1.TargetRedis, Name: "cache"},
				Storage: v1alpha1.BackupStorage{PersistentVolumeClaim: &v1alpha1.PVCStorage{ClaimName: claim, SubPath: "redis"}}}}
		if err := c.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	nightly, weekly := onClaim("nightly", "backups"), onClaim("weekly", "backups")

	// Both wait for the store, which each owns.
	const name = "backups-backup-store"
	for _, b := range []*v1alpha1.RedisBackup{nightly, weekly} {
		waitUntil(t, 30*time.Second, "RedisBackup "+b.Name+" waits for the claim store", func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(b.Status.Conditions, v1beta2.ConditionReady)
			if b.Status.Phase != v1alpha1.BackupPending || cond == nil || cond.Reason != ReasonBackupWaiting ||
				!strings.Contains(cond.Message, "waiting for the store of PersistentVolumeClaim backups (Deployment "+name+") to be available") {
				return fmt.Errorf("phase %q, %s", b.Status.Phase, describeConditions(b.Status.Conditions))
			}
			return nil
		})
	}
	var deployment appsv1.Deployment
	waitUntil(t, 30*time.Second, "the claim store owned by both backups", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &deployment); err != nil {
			return err
		}
		if refs := deployment.OwnerReferences; len(refs) != 2 || metav1.GetControllerOf(&deployment) != nil {
			return fmt.Errorf("owner references %+v, want both backups, neither the controller", refs)
		}
		return nil
	})
	for _, ref := range deployment.OwnerReferences {
		if ref.Kind != "RedisBackup" || (ref.UID != nightly.UID && ref.UID != weekly.UID) {
			t.Errorf("owner reference %+v is not one of the backups", ref)
		}
	}
	pod := deployment.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.Containers[0].Image != builder.DefaultClaimStoreImage ||
		pod.Containers[0].VolumeMounts[0].SubPath != "redis" || pod.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Volumes[0].PersistentVolumeClaim.ClaimName != "backups" || deployment.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the store's Deployment: %+v", deployment.Spec)
	}
	var service corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &service); err != nil {
		t.Fatal(err)
	}
	if len(service.Spec.Ports) != 1 || service.Spec.Ports[0].Port != builder.ClaimStorePort || service.Labels[builder.LabelBackupStore] != name {
		t.Errorf("the store's Service: %+v %v", service.Spec, service.Labels)
	}
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &secret); err != nil {
		t.Fatal(err)
	}
	keyID, secretKey := string(secret.Data[S3AccessKeyIDKey]), string(secret.Data[S3SecretAccessKeyKey])
	if len(keyID) < 20 || len(secretKey) < 40 || len(secret.OwnerReferences) != 2 {
		t.Fatalf("the store's Secret holds keys of %d and %d characters, owners %+v", len(keyID), len(secretKey), secret.OwnerReferences)
	}

	// Reconciles of the waiting backups (a label each brings one) write nothing more.
	versions := func() string {
		var all []string
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.Secret{}} {
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
				t.Fatal(err)
			}
			all = append(all, obj.GetResourceVersion())
		}
		return strings.Join(all, ",")
	}
	before := versions()
	for _, b := range []*v1alpha1.RedisBackup{nightly, weekly} {
		patch := client.MergeFrom(b.DeepCopy())
		b.Labels = map[string]string{"touched": "yes"}
		if err := c.Patch(ctx, b, patch); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	if after := versions(); after != before {
		t.Errorf("the store's objects were written again by idle reconciles: versions %s, then %s", before, after)
	}

	// The store's pod runs, with the generated credentials: the backups go on.
	gw := backups.serve()
	f := &backupFixture{t: t, c: c, ns: ns, s3: gw}
	for _, b := range []*v1alpha1.RedisBackup{nightly, weekly} {
		f.waitPhase(b, v1alpha1.BackupCompleted)
		want := "pvc://backups/redis/backups/" + ns + "/" + b.Name + "/"
		if b.Status.Location != want || len(b.Status.Shards) != 1 || b.Status.Shards[0].Location != want+"cache-0.rdb" {
			t.Fatalf("RedisBackup %s at %s, shards %+v; want %scache-0.rdb", b.Name, b.Status.Location, b.Status.Shards, want)
		}
	}
	// The file is in the bucket's folder as the claim would hold it under the subPath.
	file := filepath.Join(gw.Dir, builder.ClaimStoreBucket, ns, "nightly", "cache-0.rdb")
	if info, err := os.Stat(file); err != nil || info.Size() != nightly.Status.Shards[0].Bytes {
		t.Fatalf("the store's file %s: %v, want %d bytes", file, err, nightly.Status.Shards[0].Bytes)
	}
	restored := nightly.DeepCopy()
	restored.Status.Shards[0].Location = "s3://" + gw.Bucket + "/" + strings.TrimPrefix(restored.Status.Shards[0].Location, locationPrefix(nightly))
	checkBackupKeys(ctx, t, f.restore(restored))
	if err := c.Get(ctx, client.ObjectKeyFromObject(&secret), &secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data[S3AccessKeyIDKey]) != keyID || string(secret.Data[S3SecretAccessKeyKey]) != secretKey {
		t.Error("the store's credentials changed: the running gateway would refuse them")
	}

	// Deleted, nightly's object goes through the store; weekly's stays.
	if err := c.Delete(ctx, nightly); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "RedisBackup nightly gone", func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(nightly), nightly)
		if err == nil {
			return fmt.Errorf("still there: %s", describeConditions(nightly.Status.Conditions))
		}
		return client.IgnoreNotFound(err)
	})
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("nightly's file after its deletion: %v", err)
	}
	if got := f.objects(); len(got) != 1 || got[0] != ns+"/weekly/cache-0.rdb" {
		t.Errorf("objects left %v, want weekly's", got)
	}

	// A restore of weekly waits, creating nothing, while the store serves no pod, then reads
	// from it.
	backups.available(false)
	restoredRedis := &v1beta2.Redis{ObjectMeta: metav1.ObjectMeta{Name: "restored", Namespace: ns},
		Spec: v1beta2.RedisSpec{KubernetesConfig: v1beta2.KubernetesConfig{Image: "redis:7.0.15"},
			Restore: &v1beta2.RestoreSpec{BackupName: "weekly"}}}
	if err := c.Create(ctx, restoredRedis); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the restore waiting for the claim store", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(restoredRedis), restoredRedis); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(restoredRedis.Status.Conditions, ConditionRestored)
		if cond == nil || cond.Reason != status.ReasonRestoreBackupNotReady ||
			!strings.Contains(cond.Message, "waiting for the store of PersistentVolumeClaim backups that RedisBackup weekly is read from") {
			return fmt.Errorf("conditions %s", describeConditions(restoredRedis.Status.Conditions))
		}
		return nil
	})
	var sts appsv1.StatefulSet
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "restored"}, &sts); !apierrors.IsNotFound(err) {
		t.Fatalf("a StatefulSet while the store is down: %v", err)
	}
	backups.available(true)
	waitUntil(t, 30*time.Second, "the restored StatefulSet", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "restored"}, &sts)
	})
	var args string
	for _, ic := range sts.Spec.Template.Spec.InitContainers {
		if ic.Name == "restore" {
			args = strings.Join(ic.Command, " ")
		}
	}
	for _, want := range []string{"--endpoint http://" + name + ":8333", "--bucket backups", "--key " + ns + "/weekly/cache-0.rdb", "--force-path-style"} {
		if !strings.Contains(args, want) {
			t.Errorf("the restore init container runs %q, want %q in it", args, want)
		}
	}

	// A Service of the other claim's store name that the operator did not make.
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "other-backup-store", Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 80}}}}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	refused := onClaim("refused", "other")
	f.waitPhase(refused, v1alpha1.BackupFailed)
	cond := meta.FindStatusCondition(refused.Status.Conditions, v1beta2.ConditionReady)
	if cond == nil || cond.Reason != ReasonBackupStoreNotOwned || !strings.Contains(cond.Message, "Service other-backup-store") {
		t.Errorf("a backup whose store's name is taken: %s, want NotOwned naming the Service", describeConditions(refused.Status.Conditions))
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
		t.Fatal(err)
	}
	if len(foreign.OwnerReferences) != 0 || len(foreign.Labels) != 0 || foreign.Spec.Ports[0].Port != 80 {
		t.Errorf("the Service the operator did not make was changed: %+v", foreign)
	}
}

// claimStore plays the pod of a claim's store, which the envtest control plane does not run:
// a versitygw over a folder, started with the credentials of the Secret the operator made,
// reached in place of the store's Service (whose name resolves nowhere here), and the part of
// the Deployment controller that writes the store's Deployment status.
type claimStore struct {
	t         *testing.T
	c         client.Client
	ns, claim string
	// gateway is the store's pod once serve started it; the operator's goroutines read it.
	gateway atomic.Pointer[s3test.Server]
	// up: the pod is available, as the Deployment's status says once synced.
	up atomic.Bool
}

func newClaimStore(t *testing.T, ns, claim string) *claimStore {
	t.Helper()
	return &claimStore{t: t, c: newClient(t), ns: ns, claim: claim}
}

// createClaim makes a PersistentVolumeClaim of that name: a claim store only needs it to exist.
func createClaim(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}); err != nil {
		t.Fatal(err)
	}
}

// stores is the operator's option that reaches the store's Service, in the namespace, at the
// gateway once it runs. The Service's address is written out, not taken from the operator's
// code, so that the operator is seen to name it.
func (s *claimStore) stores() operatorOption {
	service := "http://" + builder.ClaimStoreName(s.claim) + "." + s.ns + ":8333"
	return withStores(func(cfg store.S3Config) (BackupStore, error) {
		if gw := s.gateway.Load(); gw != nil && cfg.Endpoint == service {
			cfg.Endpoint = gw.URL()
		}
		return S3Stores(cfg)
	})
}

// serve starts the store's pod once the operator has made the store: its gateway with the
// Secret's credentials, its bucket made, and its Deployment available. Until the test ends, the
// Deployment's status then observes each new generation, as the Deployment controller's does:
// each backup that joins the store's owners changes its applied-hash annotation, and a
// Deployment's annotations are part of its generation.
func (s *claimStore) serve() *s3test.Server {
	s.t.Helper()
	var secret corev1.Secret
	waitUntil(s.t, 30*time.Second, "the claim store's Secret", func() error {
		return s.c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: builder.ClaimStoreName(s.claim)}, &secret)
	})
	gw := s3test.Start(s.t, s3test.Options{AccessKey: string(secret.Data[S3AccessKeyIDKey]), SecretKey: string(secret.Data[S3SecretAccessKeyKey])})
	s.gateway.Store(gw)
	s.available(true)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				_ = s.syncStatus() // a conflict with the operator's write: again at the next tick
			}
		}
	}()
	s.t.Cleanup(func() { close(stop); <-done })
	return gw
}

// reachedBy lets the restore init containers of k's pods reach the store's Service, as they
// name it, at the gateway serve started.
func (s *claimStore) reachedBy(k *fakeKubelet) {
	if k.s3Endpoints == nil {
		k.s3Endpoints = map[string]string{}
	}
	k.s3Endpoints["http://"+builder.ClaimStoreName(s.claim)+":8333"] = s.gateway.Load().URL()
}

// available says whether the store's pod is available, and waits until the Deployment's
// status says so.
func (s *claimStore) available(up bool) {
	s.t.Helper()
	s.up.Store(up)
	waitUntil(s.t, 30*time.Second, "the claim store's Deployment status", s.syncStatus)
}

// syncStatus writes the status of the store's Deployment as its controller would: its
// generation observed, and its pod available or not.
func (s *claimStore) syncStatus() error {
	ctx := context.Background()
	var d appsv1.Deployment
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: builder.ClaimStoreName(s.claim)}, &d); err != nil {
		return err
	}
	var n int32
	if s.up.Load() {
		n = 1
	}
	want := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: n, AvailableReplicas: n}
	if equality.Semantic.DeepEqual(d.Status, want) {
		return nil
	}
	d.Status = want
	return s.c.Status().Update(ctx, &d)
}

// files lists the files in the bucket's folder of the store's pod, as the claim holds them
// under its subPath: <namespace>/<backup>/<pod>.rdb.
func (s *claimStore) files() []string {
	s.t.Helper()
	root := filepath.Join(s.gateway.Load().Dir, builder.ClaimStoreBucket)
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, path)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		s.t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
