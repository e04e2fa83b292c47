package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rediskube/redis-operator/api/v1alpha1"
	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/status"
)

// A RedisBackup on a PersistentVolumeClaim is stored through the claim's store: an S3 gateway
// the operator runs over the claim (builder.BuildClaimStore), shared by every RedisBackup on
// that claim, each an owner of it (not its controller), so that it goes away with the last of
// them. The backup then takes the S3 path unchanged, and so does its restore.

// ReasonBackupStoreNotOwned: an object of the claim store's name exists that the operator did
// not make as a claim store: it is never taken over, and the backup fails.
const ReasonBackupStoreNotOwned = status.ReasonNotOwned

// backupS3 is the S3 store a backup's snapshots are in: its spec.storage.s3, or the store of
// its claim.
func backupS3(b *v1alpha1.RedisBackup) *v1alpha1.S3Storage {
	if pvc := b.Spec.Storage.PersistentVolumeClaim; pvc != nil {
		s3 := builder.ClaimStoreS3(pvc.ClaimName)
		return &s3
	}
	return b.Spec.Storage.S3
}

// locationPrefix is what the locations of a backup's objects start with: "s3://<bucket>/",
// or for a claim "pvc://<claim>/<subPath>/backups/", the folder of the claim the files are in.
func locationPrefix(b *v1alpha1.RedisBackup) string {
	pvc := b.Spec.Storage.PersistentVolumeClaim
	if pvc == nil {
		return "s3://" + b.Spec.Storage.S3.Bucket + "/"
	}
	dir := pvc.ClaimName + "/"
	if sub, err := builder.ClaimSubPath(pvc.SubPath); err == nil && sub != "" {
		dir += sub + "/"
	}
	return "pvc://" + dir + builder.ClaimStoreBucket + "/"
}

// claimLocated names the objects of a claim store by where they are on the claim.
type claimLocated struct {
	BackupStore
	prefix string
}

func (s claimLocated) Location(key string) string { return s.prefix + key }

// located is st, naming its objects as the backup's locations do.
func located(st BackupStore, b *v1alpha1.RedisBackup) BackupStore {
	if b.Spec.Storage.PersistentVolumeClaim == nil {
		return st
	}
	return claimLocated{BackupStore: st, prefix: locationPrefix(b)}
}

// ensureClaimStore is the phase of a backup on a claim: it makes (or keeps) the claim's store,
// with this backup among its owners, and waits until the store's Deployment is available.
func (r *RedisBackupReconciler) ensureClaimStore(ctx context.Context, s *backupScope) (bool, error) {
	b := s.backup
	pvc := b.Spec.Storage.PersistentVolumeClaim
	if pvc == nil {
		return false, nil
	}
	var claim corev1.PersistentVolumeClaim
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: pvc.ClaimName}, &claim); err != nil {
		if apierrors.IsNotFound(err) {
			return true, r.wait(ctx, s, fmt.Sprintf("PersistentVolumeClaim %s does not exist", pvc.ClaimName))
		}
		return false, fmt.Errorf("read PersistentVolumeClaim %s: %w", pvc.ClaimName, err)
	}
	name := builder.ClaimStoreName(pvc.ClaimName)
	keyID, secret, err := r.claimStoreCredentials(ctx, b.Namespace, name)
	if err != nil {
		return false, err
	}
	st, err := builder.BuildClaimStore(builder.ClaimStoreInput{Namespace: b.Namespace, Claim: *pvc,
		Image: r.claimStoreImage(), InitImage: r.claimStoreInitImage(), AccessKeyID: keyID, SecretAccessKey: secret})
	if err != nil {
		// A subPath that leaves the claim: the spec cannot change, so the backup cannot succeed.
		return true, r.fail(ctx, s, ReasonBackupFailed, fmt.Sprintf("the store of PersistentVolumeClaim %s: %v", pvc.ClaimName, err))
	}
	for _, obj := range []client.Object{st.Secret, st.Service, st.Deployment} {
		wrote, err := r.Applier.Shared(ctx, r.Client, b, obj, builder.LabelBackupStore)
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache: made an instant ago by this operator, or not made by it.
			err = r.notMarked(ctx, obj)
		}
		var notOwned *apply.NotOwnedError
		if errors.As(err, &notOwned) {
			return true, r.fail(ctx, s, ReasonBackupStoreNotOwned, fmt.Sprintf(
				"the store of PersistentVolumeClaim %s cannot be made: %s, and is not a store the operator made (label %s)",
				pvc.ClaimName, strings.TrimSuffix(notOwned.Error(), "; rename or delete it"), builder.LabelBackupStore)+"; rename or delete it")
		}
		if err != nil {
			return false, fmt.Errorf("the store of PersistentVolumeClaim %s: %w", pvc.ClaimName, err)
		}
		if wrote {
			log.FromContext(ctx).Info("wrote object", "kind", kindOf(r.Client.Scheme(), obj), "name", obj.GetName(), "claim", pvc.ClaimName)
		}
	}
	var d appsv1.Deployment
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(st.Deployment), &d); err != nil {
		if apierrors.IsNotFound(err) {
			return true, r.wait(ctx, s, fmt.Sprintf("waiting for the store of PersistentVolumeClaim %s (Deployment %s) to be made", pvc.ClaimName, name))
		}
		return false, fmt.Errorf("read Deployment %s: %w", name, err)
	}
	if why := deploymentUnavailable(&d); why != "" {
		// The Deployment's status changes bring the backup back (SetupWithManager watches it).
		return true, r.wait(ctx, s, fmt.Sprintf("waiting for the store of PersistentVolumeClaim %s (Deployment %s) to be available: %s",
			pvc.ClaimName, name, why))
	}
	return false, nil
}

// deploymentUnavailable says why a Deployment serves no ready pod of its current template
// yet; "" when it does.
func deploymentUnavailable(d *appsv1.Deployment) string {
	switch {
	case d.Status.ObservedGeneration < d.Generation:
		return "its controller has not seen its latest spec"
	case d.Status.UpdatedReplicas < 1:
		return "no pod of its latest template yet"
	case d.Status.AvailableReplicas < 1:
		return "no pod available"
	}
	return ""
}

// notMarked reads obj from the API server after a create found its name taken: a
// *apply.NotOwnedError when that object is not a claim store's, else nil (the next reconcile
// finds it in the cache).
func (r *RedisBackupReconciler) notMarked(ctx context.Context, obj client.Object) error {
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	live := obj.DeepCopyObject().(client.Object)
	if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return fmt.Errorf("read %s %s: %w", kindOf(r.Client.Scheme(), obj), obj.GetName(), err)
	}
	if live.GetLabels()[builder.LabelBackupStore] != obj.GetLabels()[builder.LabelBackupStore] {
		return &apply.NotOwnedError{Kind: kindOf(r.Client.Scheme(), obj), Name: obj.GetName()}
	}
	return nil
}

// claimStoreCredentials are the store's root credentials: those its Secret holds, or new
// random ones the first time. They never change while the Secret is there: the gateway reads
// them when it starts.
func (r *RedisBackupReconciler) claimStoreCredentials(ctx context.Context, namespace, name string) (keyID, secret string, err error) {
	var live corev1.Secret
	// Not OwnedSecret: a Secret just made and not yet in the cache is read from the API
	// server, rather than replaced by new keys.
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &live)
	switch {
	case err == nil:
		keyID, secret = string(live.Data[builder.RestoreAccessKeyIDKey]), string(live.Data[builder.RestoreSecretAccessKeyKey])
		if keyID != "" && secret != "" {
			return keyID, secret, nil
		}
	case !apierrors.IsNotFound(err):
		return "", "", fmt.Errorf("read Secret %s: %w", name, err)
	}
	// rand.Text: 26 base32 letters, 130 random bits each.
	return rand.Text(), rand.Text() + rand.Text(), nil
}

func (r *RedisBackupReconciler) claimStoreImage() string {
	if r.ClaimStoreImage != "" {
		return r.ClaimStoreImage
	}
	return builder.DefaultClaimStoreImage
}

func (r *RedisBackupReconciler) claimStoreInitImage() string {
	if r.ClaimStoreInitImage != "" {
		return r.ClaimStoreInitImage
	}
	return builder.DefaultClaimStoreInitImage
}
