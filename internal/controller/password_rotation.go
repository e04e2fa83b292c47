package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
	"github.com/rediskube/redis-operator/internal/status"
)

// ReasonPasswordRotation: the pods' password is being changed to the Secret's.
const ReasonPasswordRotation = "PasswordRotation"

// passwordRotation changes, in place, the password the running pods of a resource require
// to the one its Secret holds now: CONFIG SET masterauth, then requirepass, pod by pod, so
// that no pod restarts and clients keep the connections they authenticated. The password in
// effect is read back from the auth Secret the operator owns (the pods were started with it);
// the objects phase writes the new one there only once every pod has it, so a rotation
// stopped anywhere is finished by the next reconcile, which finds each pod on one password
// or the other (or, under sentinels, on both: see rotateWatched).
type passwordRotation struct {
	client client.Client
	// node is the pod or sentinel at an endpoint (Dependencies.redisNode).
	node     func(redis.Endpoint) (RedisNode, error)
	recorder recorder.EventRecorder
	// tls dials the pods of a resource with TLS; nil without.
	tls *tls.Config
	// acl tells the user the operator logs in as (its own ACL user when the default is off).
	acl aclState
}

// watchingSentinels is one set of sentinels that authenticates to the pods being rotated
// (their auth-pass for masterGroup): their pods, and their own password and TLS to ask them.
type watchingSentinels struct {
	name, masterGroup string
	pods              []corev1.Pod
	password          string
	tls               *tls.Config
}

// rotateWatched returns stop when a pod is not running (it must not start, or go on, with the
// old password unseen) and an error when a pod refuses both passwords. listPods, and
// listSentinels (nil when no sentinel watches the pods), are called only when the password
// changes. Sentinels authenticate to the master and replicas
// anew whenever a link drops, so they must never hold a password the pods refuse. With
// sentinels the order is:
//
//  1. every pod accepts the new password besides the old (ACL SETUSER default >new);
//  2. every pod replicates with the new one (CONFIG SET masterauth), which all accept;
//  3. every sentinel of every set authenticates with it (SENTINEL SET <group> auth-pass);
//  4. every pod requires it alone (CONFIG SET requirepass).
//
// Each step is idempotent and the auth Secret keeps the old password until the objects phase
// after the last one, so a rotation stopped anywhere is done again, whole, by the next
// reconcile; a pod restarted meanwhile comes back with the old password and takes step 1 again.
// A pod found requiring the new password alone has been through every step already.
func (p passwordRotation) rotateWatched(ctx context.Context, owner client.Object, listPods func() ([]corev1.Pod, error),
	listSentinels func() ([]watchingSentinels, error), port int, want string, conditions status.Conditions, requeue func(string)) (bool, error) {
	current, known, err := p.inEffect(ctx, owner)
	if err != nil || !known || current == want {
		return false, err
	}
	pods, err := listPods()
	if err != nil || len(pods) == 0 {
		return false, err
	}
	var sentinels []watchingSentinels
	if listSentinels != nil {
		if sentinels, err = listSentinels(); err != nil {
			return false, err
		}
	}
	if waitFor := notRunning(pods, sentinels); waitFor != "" {
		message := fmt.Sprintf("the password changes once pod %s runs", waitFor)
		conditions.Progressing(ReasonPasswordRotation, message)
		requeue(message)
		return true, nil
	}
	if len(sentinels) > 0 {
		if err := builder.CheckSentinelMasterPassword(want); err != nil {
			message := "the password is not changed: " + err.Error()
			conditions.Degraded(ReasonPasswordRotation, message)
			p.recorder.Eventf(owner, nil, corev1.EventTypeWarning, "PasswordRotationFailed", "Validate", "%s", message)
			return true, nil
		}
	}
	targets, err := p.examine(ctx, pods, port, want, current)
	if err != nil {
		return false, err
	}
	if len(sentinels) > 0 && want != "" {
		err = p.switchTogether(ctx, owner, targets, sentinels, want)
	} else {
		// Without sentinels, or when the password is removed (the pods then accept any, the
		// sentinels' old one included, until the sentinels drop it), pod by pod.
		err = p.switchEach(ctx, owner, targets, want)
		if err == nil {
			err = p.tellSentinels(ctx, owner, sentinels, want)
		}
	}
	if err != nil {
		return false, err
	}
	p.rotated(ctx, owner, targets, sentinels)
	return false, nil
}

// notRunning names a pod, of the resource or of its sentinels, that does not run, "" when all do.
func notRunning(pods []corev1.Pod, sentinels []watchingSentinels) string {
	all := slices.Clone(pods)
	for _, g := range sentinels {
		all = append(all, g.pods...)
	}
	for i := range all {
		if all[i].Status.PodIP == "" || all[i].Status.Phase != corev1.PodRunning {
			return all[i].Name
		}
	}
	return ""
}

// passwordHolder is a pod whose password is rotated: logged in to, asked which password it
// requires and replicates with, and given the new one.
type passwordHolder interface {
	pinger
	configEditor
	AddUserPassword(ctx context.Context, user, password string) error
}

// authPassHolder is a sentinel given the password of the pods it watches.
type authPassHolder interface {
	SentinelSetAuthPass(ctx context.Context, group, password string) error
}

// rotationTarget is a pod being rotated, with a client it accepts; done when it requires the
// new password alone and replicates with it.
type rotationTarget struct {
	pod    *corev1.Pod
	client passwordHolder
	done   bool
}

func (p passwordRotation) examine(ctx context.Context, pods []corev1.Pod, port int, want, current string) ([]rotationTarget, error) {
	targets := make([]rotationTarget, len(pods))
	for i := range pods {
		c, err := p.connect(ctx, podEndpoint(&pods[i], port, redis.Auth{}).WithTLS(p.tls), want, current)
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", pods[i].Name, err)
		}
		// What the pod requires, asked rather than inferred from a successful AUTH: a server
		// without a password accepts any (and one with two reports the first).
		set, err := c.ConfigGet(ctx, "*auth")
		if err != nil {
			return nil, err
		}
		requirepass, err := c.ConfigGet(ctx, "requirepass")
		if err != nil {
			return nil, err
		}
		targets[i] = rotationTarget{&pods[i], c, set["masterauth"] == want && requirepass["requirepass"] == want}
	}
	return targets, nil
}

// switchEach changes masterauth, then requirepass, pod by pod.
func (p passwordRotation) switchEach(ctx context.Context, owner client.Object, targets []rotationTarget, want string) error {
	for _, t := range targets {
		if t.done {
			continue
		}
		if err := p.markExporter(ctx, t.pod); err != nil {
			return err
		}
		if p.acl.operatorUser && want != "" {
			// The operator's own user takes the new password besides the old; the aclfile
			// rendered with the new one drops the old once the pods load it.
			if err := t.client.AddUserPassword(ctx, redis.OperatorUser, want); err != nil {
				return p.failed(owner, t.pod, "AclSetUser", err)
			}
		}
		for _, parameter := range []string{"masterauth", "requirepass"} {
			if err := t.client.ConfigSet(ctx, parameter, want); err != nil {
				return p.failed(owner, t.pod, "ConfigSet", err)
			}
		}
	}
	return nil
}

// switchTogether runs the four steps of a rotation under sentinels (see rotateWatched).
func (p passwordRotation) switchTogether(ctx context.Context, owner client.Object, targets []rotationTarget, sentinels []watchingSentinels, want string) error {
	each := func(action string, do func(passwordHolder) error) error {
		for _, t := range targets {
			if t.done {
				continue
			}
			if err := do(t.client); err != nil {
				return p.failed(owner, t.pod, action, err)
			}
		}
		return nil
	}
	if err := each("AclSetUser", func(c passwordHolder) error { return c.AddUserPassword(ctx, redis.DefaultUser, want) }); err != nil {
		return err
	}
	if err := each("ConfigSet", func(c passwordHolder) error { return c.ConfigSet(ctx, "masterauth", want) }); err != nil {
		return err
	}
	if err := p.tellSentinels(ctx, owner, sentinels, want); err != nil {
		return err
	}
	for _, t := range targets {
		if !t.done {
			if err := p.markExporter(ctx, t.pod); err != nil {
				return err
			}
		}
	}
	return each("ConfigSet", func(c passwordHolder) error { return c.ConfigSet(ctx, "requirepass", want) })
}

// markExporter marks a pod's exporter sidecar, just before the pod requires the new password,
// for a restart once the auth Secret it reads holds that password (exporterRestart.restartStale).
// Marked after, an interruption in between would leave it on the old one with nothing left
// to tell.
func (p passwordRotation) markExporter(ctx context.Context, pod *corev1.Pod) error {
	return exporterRestart{client: p.client, recorder: p.recorder}.markStale(ctx, pod)
}

func (p passwordRotation) failed(owner client.Object, pod *corev1.Pod, action string, err error) error {
	p.recorder.Eventf(owner, pod, corev1.EventTypeWarning, "PasswordRotationFailed", action, "pod %s: %v", pod.Name, err)
	return fmt.Errorf("pod %s: %w", pod.Name, err)
}

// rotated logs each pod changed and says in an event how many pods and sentinels took the password.
func (p passwordRotation) rotated(ctx context.Context, owner client.Object, targets []rotationTarget, sentinels []watchingSentinels) {
	changed := 0
	for _, t := range targets {
		if !t.done {
			log.FromContext(ctx).Info("changed the password in place", "pod", t.pod.Name)
			changed++
		}
	}
	note := "%d pod(s) changed to the password of the Secret in place, %d already had it"
	args := []any{changed, len(targets) - changed}
	if len(sentinels) > 0 {
		n := 0
		for _, g := range sentinels {
			n += len(g.pods)
		}
		note += "; %d sentinel(s) authenticate with it"
		args = append(args, n)
	}
	p.recorder.Eventf(owner, nil, corev1.EventTypeNormal, "PasswordRotated", "ConfigSet", note, args...)
}

// tellSentinels gives every sentinel of every set the password of the pods they watch.
func (p passwordRotation) tellSentinels(ctx context.Context, owner client.Object, sentinels []watchingSentinels, want string) error {
	for _, g := range sentinels {
		for i := range g.pods {
			pod := &g.pods[i]
			c, err := p.node(podEndpoint(pod, builder.DefaultSentinelPort, redis.Auth{Password: g.password}).WithTLS(g.tls))
			if err != nil {
				return fmt.Errorf("sentinel %s: %w", pod.Name, err)
			}
			if err := c.SentinelSetAuthPass(ctx, g.masterGroup, want); err != nil {
				p.recorder.Eventf(owner, pod, corev1.EventTypeWarning, "PasswordRotationFailed", "SentinelSet", "sentinel %s (%s): %v", pod.Name, g.name, err)
				return fmt.Errorf("sentinel %s (%s): %w", pod.Name, g.name, err)
			}
			log.FromContext(ctx).Info("gave a sentinel the new password", "pod", pod.Name, "group", g.masterGroup)
		}
	}
	return nil
}

// inEffect is the password the pods were started with, from the auth Secret the operator
// owns; known is false when it cannot tell (never written: nothing runs with one yet, or a
// password is being added to pods that run without).
func (p passwordRotation) inEffect(ctx context.Context, owner client.Object) (password string, known bool, err error) {
	var secret corev1.Secret
	err = p.client.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: builder.AuthSecretName(owner.GetName())}, &secret, OwnedSecret)
	switch {
	case apierrors.IsNotFound(err):
		return "", true, nil
	case err != nil:
		return "", false, fmt.Errorf("read the auth Secret: %w", err)
	case !metav1.IsControlledBy(&secret, owner):
		return "", false, nil
	}
	password, known = builder.PasswordOfAuthFile(string(secret.Data[builder.RedisAuthKey]))
	return password, known, nil
}

// connect returns a client the pod accepts, with the first of the passwords that works: an
// auth refusal moves on to the next, any other failure is an error.
func (p passwordRotation) connect(ctx context.Context, ep redis.Endpoint, passwords ...string) (passwordHolder, error) {
	var last error
	for _, password := range passwords {
		ep.Auth = p.acl.auth(password)
		c, err := p.node(ep)
		if err != nil {
			return nil, err
		}
		// The client itself tries the second user, if any, when the first is refused.
		err = c.Ping(ctx)
		if err == nil {
			return c, nil
		}
		if !redis.IsAuthError(err) {
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("neither the new nor the old password is accepted: %w", last)
}
