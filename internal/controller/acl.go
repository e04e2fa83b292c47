package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

// Reasons about the ACL users of spec.acl.secret.
const (
	// ReasonInvalidACL: the user's ACL file is refused (the message names the line); the
	// pods keep the last good users.
	ReasonInvalidACL = "InvalidACL"
	// ReasonACLLoaded (event): running pods took an edit of the ACL Secret with ACL LOAD.
	ReasonACLLoaded = "ACLLoaded"
	// ReasonACLLoadFailed (event): a pod refused the aclfile the operator rendered.
	ReasonACLLoadFailed = "ACLLoadFailed"
)

// aclReloadRetry is how soon the operator looks again at pods whose aclfile kubelet has not
// refreshed yet (a Secret volume follows its Secret after up to a minute or two).
const aclReloadRetry = 10 * time.Second

// aclState is what the acl phase found in the user's ACL Secret.
type aclState struct {
	// content is the user's checked file, for the builder.
	content string
	// refused is why the user's file is refused, "" when it is not; kept is then the aclfile
	// the pods have now (the operator's Secret), which the build keeps.
	refused string
	kept    []byte
	// operatorUser: the file in effect turns the default user off, so the operator, replicas
	// and hooks log in as redis.OperatorUser, which the rendered file adds.
	operatorUser bool
}

// auth is how the operator logs in to the pods with password: as its own ACL user when the
// default one is off, else as the default user; either way, the other one is tried when a pod
// refuses the first (it has not loaded the current aclfile yet).
func (a aclState) auth(password string) redis.Auth {
	switch {
	case password == "" || (a.content == "" && a.kept == nil):
		return redis.Auth{Password: password}
	case a.operatorUser:
		return redis.Auth{Username: redis.OperatorUser, Password: password, OrUsername: redis.DefaultUser}
	}
	return redis.Auth{Password: password, OrUsername: redis.OperatorUser}
}

// resolveACLOf reads spec.acl.secret and checks its file. A refused file leaves the
// operator's Secret, and so the pods, as they are; the reconcile goes on (failover and
// scaling do not wait for the user's fix) and ends Degraded/InvalidACL, with one Warning
// event per refused content. It stops only when there is no good file to keep yet.
// A file that turns the default user off needs a password (the operator's own user logs in
// with it) and no sentinels (they log in as the default user).
func resolveACLOf(ctx context.Context, c client.Client, rec recorder.EventRecorder, owner client.Object,
	acl *v1beta2.ACLConfig, password string, sentinels bool, conditions status.Conditions) (state aclState, stop bool, err error) {
	if acl == nil || acl.Secret == nil {
		return aclState{}, false, nil
	}
	key := builder.ACLFileKey
	for _, item := range acl.Secret.Items {
		if item.Path == builder.ACLFileKey {
			key = item.Key
		}
	}
	name := acl.Secret.SecretName
	optional := acl.Secret.Optional != nil && *acl.Secret.Optional
	var secret corev1.Secret
	err = c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, &secret)
	var problem error
	switch {
	case apierrors.IsNotFound(err) && optional:
		return aclState{}, false, nil // an optional Secret that is missing: no users but default
	case apierrors.IsNotFound(err):
		problem = fmt.Errorf("ACL Secret %s does not exist", name)
	case err != nil:
		return aclState{}, false, fmt.Errorf("read the ACL Secret %s: %w", name, err)
	default:
		file, ok := secret.Data[key]
		if !ok && !optional {
			problem = fmt.Errorf("ACL Secret %s has no key %q", name, key)
			break
		}
		users, perr := redis.ParseACLFile(string(file))
		if perr == nil {
			perr = redis.CheckOperatorUser(users)
		}
		off := perr == nil && redis.DefaultUserOff(users)
		switch {
		case off && password == "":
			perr = errors.New("the default user is off: the operator and the replicas then log in as its own user " + redis.OperatorUser +
				" with the password of kubernetesConfig.redisSecret, which is not set")
		case off && sentinels:
			perr = errors.New("the default user is off: sentinels log in to Redis as the default user; keep it on with sentinels")
		}
		if perr != nil {
			problem = fmt.Errorf("ACL Secret %s key %s: %w", name, key, perr)
			break
		}
		return aclState{content: string(file), operatorUser: off}, false, nil
	}
	message := problem.Error() + "; the pods keep their last good users"
	if previous := meta.FindStatusCondition(conditions.List(), v1beta2.ConditionDegraded); previous == nil ||
		previous.Status != metav1.ConditionTrue || previous.Reason != ReasonInvalidACL || previous.Message != message {
		rec.Eventf(owner, nil, corev1.EventTypeWarning, ReasonInvalidACL, "CheckACL", "%s", message)
	}
	state = aclState{refused: message}
	var live corev1.Secret
	err = c.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: builder.ACLSecretName(owner.GetName())}, &live, OwnedSecret)
	switch {
	case err == nil && metav1.IsControlledBy(&live, owner) && len(live.Data[builder.ACLFileKey]) > 0:
		state.kept = live.Data[builder.ACLFileKey]
		state.operatorUser = hasOperatorUser(state.kept)
		return state, false, nil
	case err != nil && !apierrors.IsNotFound(err):
		return state, false, fmt.Errorf("read the ACL Secret the pods use: %w", err)
	}
	// Nothing good to keep: the pods are not made until the file is fixed.
	conditions.Degraded(ReasonInvalidACL, message)
	return state, true, nil
}

// hasOperatorUser tells whether a rendered aclfile has the operator's own user.
func hasOperatorUser(aclfile []byte) bool {
	users, err := redis.ParseACLFile(string(aclfile))
	return err == nil && slices.ContainsFunc(users, func(u redis.ACLUser) bool { return u.Name == redis.OperatorUser })
}

// keepIn puts the kept aclfile into the built objects in place of the refused one.
func (a aclState) keepIn(objects *builder.Objects, crName string) {
	if a.refused == "" || a.kept == nil || objects == nil {
		return
	}
	for _, s := range objects.Secrets {
		if s.Name == builder.ACLSecretName(crName) {
			s.Data = map[string][]byte{builder.ACLFileKey: slices.Clone(a.kept)}
		}
	}
}

// report ends a reconcile that kept the last good users Degraded/InvalidACL, unless something
// else already made it Degraded.
func (a aclState) report(conditions status.Conditions) {
	if a.refused != "" && !meta.IsStatusConditionTrue(conditions.List(), v1beta2.ConditionDegraded) {
		conditions.Degraded(ReasonInvalidACL, a.refused)
	}
}

// operatorLoginKeeper is a pod given back the operator's login after an ACL LOAD.
type operatorLoginKeeper interface {
	EnsureOperatorUser(ctx context.Context, sha256Hex string) error
	ACLAddPasswordHash(ctx context.Context, user, sha256Hex string) error
	ConfigSet(ctx context.Context, parameter, value string) error
}

// aclFileLoader is a pod asked which aclfile it loaded, told to load it again, and given back
// the operator's login afterwards.
type aclFileLoader interface {
	operatorLoginKeeper
	ACLUsers(ctx context.Context) ([]string, error)
	ACLLoad(ctx context.Context) error
}

// keepOperatorLogin runs after an ACL LOAD. The file on disk may still be the one before a
// password rotation, or before the default user was turned off or on: the user the operator
// and the replicas log in as keeps the password they use now, and replicas log in as it.
func keepOperatorLogin(ctx context.Context, c operatorLoginKeeper, password string, operatorUser bool) error {
	if password == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(password))
	hash := hex.EncodeToString(sum[:])
	if operatorUser {
		if err := c.EnsureOperatorUser(ctx, hash); err != nil {
			return err
		}
		return c.ConfigSet(ctx, "masteruser", redis.OperatorUser)
	}
	if err := c.ACLAddPasswordHash(ctx, redis.DefaultUser, hash); err != nil {
		return err
	}
	return c.ConfigSet(ctx, "masteruser", "")
}

// aclReload brings the aclfile the operator rendered into running pods with ACL LOAD, without
// restarts. Which file a pod has loaded is told by the marker user that ends each rendered
// file (builder.ACLFileMarker): kubelet refreshes a Secret volume after a delay, and ACL LOAD
// before that reads the previous file again, so the operator asks ACL USERS and tries again
// shortly while the marker is not the current one.
type aclReload struct {
	// node is the pod at an endpoint, evict drops its connections (Dependencies.redisNode,
	// evictRedisNode).
	node     func(redis.Endpoint) (RedisNode, error)
	evict    func(redis.Endpoint)
	recorder recorder.EventRecorder
}

// afterLoad keeps the operator's login on a pod that just ran ACL LOAD and returns a client
// with fresh connections. Connections logged in before the load can restore the password of a
// stale file (the new one may not log in until then), unless the file took their user's rights
// (the default user turned off) or removed it: new connections then log in as the file says.
// Either way no connection stays on a user the file changed.
func (a aclReload) afterLoad(ctx context.Context, c aclFileLoader, ep redis.Endpoint, password string, operatorUser bool) (aclFileLoader, error) {
	loginErr := keepOperatorLogin(ctx, c, password, operatorUser)
	a.evict(ep)
	fresh, err := a.node(ep)
	if err != nil {
		return nil, err
	}
	if loginErr == nil {
		return fresh, nil
	}
	return fresh, keepOperatorLogin(ctx, fresh, password, operatorUser)
}

func (a aclReload) reload(ctx context.Context, w *workloadScope, pods []corev1.Pod) error {
	owner, objects, password, acl, requeue := w.spec.owner, w.objects, w.password, w.acl, w.Requeuer(ctx)
	marker := ""
	if objects != nil {
		for _, s := range objects.Secrets {
			if s.Name == builder.ACLSecretName(owner.GetName()) {
				marker = builder.ACLFileMarker(string(s.Data[builder.ACLFileKey]))
			}
		}
	}
	if marker == "" {
		return nil
	}
	var loaded, waiting []string
	var errs []error
	for i := range pods {
		pod := &pods[i]
		if pod.Status.PodIP == "" || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		ep := w.endpointOf(pod.Status.PodIP)
		node, err := a.node(ep)
		if err != nil {
			return err
		}
		var c aclFileLoader = node
		users, err := c.ACLUsers(ctx)
		if err != nil {
			// Starting, or stopping: the pod's watch brings the reconcile back.
			log.FromContext(ctx).V(1).Info("cannot list a pod's ACL users", "pod", pod.Name, "error", err.Error())
			waiting = append(waiting, pod.Name)
			continue
		}
		if slices.Contains(users, marker) {
			continue
		}
		if err := c.ACLLoad(ctx); err != nil {
			a.recorder.Eventf(owner, pod, corev1.EventTypeWarning, ReasonACLLoadFailed, "ACLLoad", "pod %s: %v", pod.Name, err)
			errs = append(errs, fmt.Errorf("pod %s: %w", pod.Name, err))
			continue
		}
		if c, err = a.afterLoad(ctx, c, ep, password, acl.operatorUser); err != nil {
			return fmt.Errorf("pod %s: %w", pod.Name, err)
		}
		if users, err = c.ACLUsers(ctx); err != nil || !slices.Contains(users, marker) {
			waiting = append(waiting, pod.Name)
			continue
		}
		log.FromContext(ctx).Info("loaded the ACL file in place", "pod", pod.Name)
		loaded = append(loaded, pod.Name)
	}
	if len(loaded) > 0 {
		slices.Sort(loaded)
		a.recorder.Eventf(owner, nil, corev1.EventTypeNormal, ReasonACLLoaded, "ACLLoad", "pods %v loaded the ACL Secret's users in place", loaded)
	}
	if len(waiting) > 0 {
		requeue(aclReloadRetry, fmt.Sprintf("pods %v have not loaded the current ACL file yet", waiting))
	}
	return errors.Join(errs...)
}
