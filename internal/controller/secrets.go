package controller

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/rediskube/redis-operator/internal/builder"
)

// How the operator holds Secrets, to keep what a compromise of it (or a heap dump) would give
// away small:
//   - the manager's cache holds only the Secrets the operator owns (label
//     app.kubernetes.io/managed-by=redis-operator: the rendered auth and ACL Secrets);
//   - the Secrets a resource names (password, TLS, ACL) are read by name from the API server
//     when a reconcile needs them, and not kept;
//   - their changes (a rotation, a renewal) still reach the resources, through an informer of
//     Secret metadata only (names, labels, resource versions: no data).

// CacheOptions are the manager's cache options: the watched namespaces (none: every
// namespace) and, for Secrets, only those the operator owns. Pods, the most numerous objects
// cached, are kept without their managed fields, which the operator never reads for them (it
// patches their labels with a merge patch) and which weigh as much as the rest of a pod.
// Deployments are cached only when they are claim stores (label
// redis.opstreelabs.in/backup-store).
func CacheOptions(namespaces []string) cache.Options {
	opts := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: ownedSecrets()},
			&corev1.Pod{}:    {Transform: cache.TransformStripManagedFields()},
			// Deployments: only the claim stores of backups on a PersistentVolumeClaim.
			&appsv1.Deployment{}: {Label: claimStores()},
		},
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

func claimStores() labels.Selector {
	req, err := labels.NewRequirement(builder.LabelBackupStore, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("the claim stores' selector: %v", err)) // a constant key
	}
	return labels.NewSelector().Add(*req)
}

func ownedSecrets() labels.Selector {
	return labels.SelectorFromSet(labels.Set{builder.LabelManagedBy: builder.ManagedByValue})
}

// ReadNamedSecrets returns c, except that a Secret the cache does not hold (one the operator
// does not own) is read from the API server: an uncached, by-name read. A Get with
// OwnedSecret stays in the cache.
func ReadNamedSecrets(c client.Client, api client.Reader) client.Client {
	return &secretReadingClient{Client: c, api: api}
}

// OwnedSecret marks a Get of a Secret the operator owns (an auth or ACL Secret it renders):
// the cache holds every one that exists, so a miss means there is none, and asking the API
// server would only cost a request per reconcile of every resource without one.
var OwnedSecret client.GetOption = ownedSecretOption{}

type ownedSecretOption struct{}

func (ownedSecretOption) ApplyToGet(*client.GetOptions) {}

type secretReadingClient struct {
	client.Client
	api client.Reader
}

func (c *secretReadingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	if _, isSecret := obj.(*corev1.Secret); isSecret && apierrors.IsNotFound(err) && !slices.Contains(opts, OwnedSecret) {
		return c.api.Get(ctx, key, obj, opts...)
	}
	return err
}

// SecretWatch tells the controllers that a Secret changed, from a cache of Secret metadata
// only, so that a resource naming the Secret is reconciled.
type SecretWatch struct {
	cache cache.Cache
}

// NewSecretWatch makes the metadata-only Secret cache over the given namespaces (none: every
// namespace) and adds it to the manager, which starts it.
func NewSecretWatch(mgr ctrl.Manager, namespaces []string) (*SecretWatch, error) {
	opts := CacheOptions(namespaces)
	opts.ByObject = nil
	opts.HTTPClient = mgr.GetHTTPClient()
	opts.Scheme = mgr.GetScheme()
	opts.Mapper = mgr.GetRESTMapper()
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("make the Secret metadata cache: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("add the Secret metadata cache: %w", err)
	}
	return &SecretWatch{cache: c}, nil
}

// source is the metadata-only watch of Secrets, mapped by fn.
func (w *SecretWatch) source(fn handler.MapFunc) source.Source {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return source.Kind[client.Object](w.cache, secret, handler.EnqueueRequestsFromMapFunc(fn))
}
