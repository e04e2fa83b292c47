// Package storage is the sandbox's volume provisioner: a default StorageClass whose
// PersistentVolumes are folders under the sandbox's state directory. A folder outlives the
// pods that use it (and moves with a pod to another virtual node: they share the machine),
// a resized claim gets the new capacity, and deleting the claim deletes the folder.
package storage

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

const (
	// ClassName is the default StorageClass.
	ClassName = "sandbox-local"
	// Provisioner names the sandbox's provisioner in StorageClass and PV annotations.
	Provisioner = "sandbox.rediskube.io/local"

	provisionedBy = "pv.kubernetes.io/provisioned-by"
	// What the PV controller sets on claims for an external provisioner.
	storageProvisioner = "volume.kubernetes.io/storage-provisioner"
)

// Provisioner provisions, resizes and deletes the sandbox's volumes.
type provisioner struct {
	client kubernetes.Interface
	dir    string
	log    *slog.Logger
	poke   chan struct{}
}

// Run creates the default StorageClass and serves claims until ctx ends.
func Run(ctx context.Context, client kubernetes.Interface, volumesDir string, log *slog.Logger) error {
	if err := os.MkdirAll(volumesDir, 0o755); err != nil {
		return err
	}
	if err := ensureClass(ctx, client); err != nil {
		return err
	}
	p := &provisioner{client: client, dir: volumesDir, log: log.With("component", "provisioner"), poke: make(chan struct{}, 1)}
	factory := informers.NewSharedInformerFactory(client, time.Minute)
	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.wake() },
		UpdateFunc: func(any, any) { p.wake() },
		DeleteFunc: func(any) { p.wake() },
	}
	if _, err := claims.Informer().AddEventHandler(h); err != nil {
		return err
	}
	if _, err := volumes.Informer().AddEventHandler(h); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("sync informer for %v", typ)
		}
	}
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			pvcs, _ := claims.Lister().List(labels.Everything())
			pvs, _ := volumes.Lister().List(labels.Everything())
			p.reconcile(ctx, pvcs, pvs)
			select {
			case <-ctx.Done():
				return
			case <-p.poke:
			case <-t.C:
			}
		}
	}()
	return nil
}

func (p *provisioner) wake() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

func ensureClass(ctx context.Context, client kubernetes.Interface) error {
	expand := true
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:          Provisioner,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &binding,
		AllowVolumeExpansion: &expand,
	}
	_, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (p *provisioner) ours(pvc *corev1.PersistentVolumeClaim) bool {
	if pvc.Spec.StorageClassName != nil && *pvc.Spec.StorageClassName == ClassName {
		return true
	}
	return pvc.Annotations[storageProvisioner] == Provisioner
}

func (p *provisioner) reconcile(ctx context.Context, pvcs []*corev1.PersistentVolumeClaim, pvs []*corev1.PersistentVolume) {
	byName := map[string]*corev1.PersistentVolume{}
	for _, pv := range pvs {
		byName[pv.Name] = pv
	}
	for _, pvc := range pvcs {
		if !p.ours(pvc) || pvc.DeletionTimestamp != nil {
			continue
		}
		switch {
		case pvc.Spec.VolumeName == "" && pvc.Status.Phase == corev1.ClaimPending:
			if _, exists := byName[volumeName(pvc)]; !exists {
				if err := p.provision(ctx, pvc); err != nil {
					p.log.Warn("provision", "claim", pvc.Namespace+"/"+pvc.Name, "err", err)
				}
			}
		case pvc.Status.Phase == corev1.ClaimBound:
			if pv := byName[pvc.Spec.VolumeName]; pv != nil && pv.Annotations[provisionedBy] == Provisioner {
				if err := p.resize(ctx, pvc, pv); err != nil {
					p.log.Warn("resize", "claim", pvc.Namespace+"/"+pvc.Name, "err", err)
				}
			}
		}
	}
	for _, pv := range pvs {
		if pv.Annotations[provisionedBy] != Provisioner {
			continue
		}
		if pv.Status.Phase == corev1.VolumeReleased && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
			if err := p.delete(ctx, pv); err != nil {
				p.log.Warn("delete volume", "pv", pv.Name, "err", err)
			}
		}
	}
}

func volumeName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

func (p *provisioner) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	name := volumeName(pvc)
	dir := filepath.Join(p.dir, name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	dirType := corev1.HostPathDirectoryOrCreate
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{provisionedBy: Provisioner},
			Labels:      map[string]string{"sandbox.rediskube.io/claim-namespace": pvc.Namespace},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              ClassName,
			VolumeMode:                    pvc.Spec.VolumeMode,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType},
			},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
		},
	}
	_, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		p.log.Info("provisioned", "claim", pvc.Namespace+"/"+pvc.Name, "pv", name, "size", size.String())
	}
	return err
}

// resize grows the volume to the claim's request: a folder has no size to change, so the
// new capacity is recorded on the PV and in the claim's status at once.
func (p *provisioner) resize(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	have := pvc.Status.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return nil
	}
	if cur := pv.Spec.Capacity[corev1.ResourceStorage]; want.Cmp(cur) > 0 {
		pv = pv.DeepCopy()
		pv.Spec.Capacity[corev1.ResourceStorage] = want
		if _, err := p.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	pvc = pvc.DeepCopy()
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
	pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: want}
	pvc.Status.AllocatedResourceStatuses = nil
	var conds []corev1.PersistentVolumeClaimCondition
	for _, c := range pvc.Status.Conditions {
		if c.Type != corev1.PersistentVolumeClaimResizing && c.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
			conds = append(conds, c)
		}
	}
	pvc.Status.Conditions = conds
	if _, err := p.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	p.log.Info("resized", "claim", pvc.Namespace+"/"+pvc.Name, "size", want.String())
	return nil
}

func (p *provisioner) delete(ctx context.Context, pv *corev1.PersistentVolume) error {
	if hp := pv.Spec.HostPath; hp != nil && strings.HasPrefix(filepath.Clean(hp.Path), filepath.Clean(p.dir)+string(filepath.Separator)) {
		if err := os.RemoveAll(hp.Path); err != nil {
			return err
		}
	}
	err := p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		p.log.Info("deleted volume", "pv", pv.Name)
	}
	return err
}
