package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/builder"
	"github.com/rediskube/redis-operator/internal/redis"
)

// ReasonPasswordRotation: the pods' password is being changed to the Secret's.
const ReasonPasswordRotation = "PasswordRotation"

// passwordRotation changes, in place, the password the running pods of a resource require
// to the one its Secret holds now: CONFIG SET masterauth, then requirepass, pod by pod, so
// that no pod restarts and clients keep the connections they authenticated. The password in
// effect is read back from the auth Secret the operator owns (the pods were started with it);
// the objects phase writes the new one there only once every pod has it, so a rotation
// stopped anywhere is finished by the next reconcile, which finds each pod on one password
// or the other.
type passwordRotation struct {
	client   client.Client
	pool     *redis.Pool
	recorder recorder.EventRecorder
}

// rotate returns stop when a pod is not running (it must not start, or go on, with the old
// password unseen) and an error when a pod refuses both passwords.
// listPods is called only when the password changes.
func (p passwordRotation) rotate(ctx context.Context, owner client.Object, listPods func() ([]corev1.Pod, error), port int, want string, conditions conditionSet, requeue func(string)) (bool, error) {
	current, known, err := p.inEffect(ctx, owner)
	if err != nil || !known || current == want {
		return false, err
	}
	pods, err := listPods()
	if err != nil || len(pods) == 0 {
		return false, err
	}
	for i := range pods {
		if pods[i].Status.PodIP == "" || pods[i].Status.Phase != corev1.PodRunning {
			message := fmt.Sprintf("the password changes once pod %s runs", pods[i].Name)
			conditions.progressing(ReasonPasswordRotation, message)
			requeue(message)
			return true, nil
		}
	}
	changed := 0
	for i := range pods {
		c, err := p.connect(ctx, podEndpoint(&pods[i], port, redis.Auth{}), want, current)
		if err != nil {
			return false, fmt.Errorf("pod %s: %w", pods[i].Name, err)
		}
		// What the pod requires, asked rather than inferred from a successful AUTH: a server
		// without a password accepts any.
		set, err := c.ConfigGet(ctx, "*auth")
		if err != nil {
			return false, err
		}
		requirepass, err := c.ConfigGet(ctx, "requirepass")
		if err != nil {
			return false, err
		}
		if set["masterauth"] == want && requirepass["requirepass"] == want {
			continue
		}
		for _, parameter := range []string{"masterauth", "requirepass"} {
			if err := c.ConfigSet(ctx, parameter, want); err != nil {
				p.recorder.Eventf(owner, &pods[i], corev1.EventTypeWarning, "PasswordRotationFailed", "ConfigSet", "pod %s: %v", pods[i].Name, err)
				return false, fmt.Errorf("pod %s: CONFIG SET %s: %w", pods[i].Name, parameter, err)
			}
		}
		log.FromContext(ctx).Info("changed the password in place", "pod", pods[i].Name)
		changed++
	}
	p.recorder.Eventf(owner, nil, corev1.EventTypeNormal, "PasswordRotated", "ConfigSet", "%d pod(s) changed to the password of the Secret in place, %d already had it", changed, len(pods)-changed)
	return false, nil
}

// inEffect is the password the pods were started with, from the auth Secret the operator
// owns; known is false when it cannot tell (never written: nothing runs with one yet, or a
// password is being added to pods that run without).
func (p passwordRotation) inEffect(ctx context.Context, owner client.Object) (password string, known bool, err error) {
	var secret corev1.Secret
	err = p.client.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: builder.AuthSecretName(owner.GetName())}, &secret)
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
func (p passwordRotation) connect(ctx context.Context, ep redis.Endpoint, passwords ...string) (*redis.Client, error) {
	var last error
	for _, password := range passwords {
		ep.Auth.Password = password
		c, err := p.pool.Client(ep)
		if err != nil {
			return nil, err
		}
		if err := c.Ping(ctx); err == nil {
			return c, nil
		} else if !redis.IsAuthError(err) {
			return nil, err
		} else {
			last = err
		}
	}
	return nil, fmt.Errorf("neither the new nor the old password is accepted: %w", last)
}
