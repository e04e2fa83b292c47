package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/rediskube/redis-operator/internal/apply"
	"github.com/rediskube/redis-operator/internal/liveness"
	"github.com/rediskube/redis-operator/internal/redis"
)

// Dependencies are what main builds once and hands every kind's reconciler: the clients, the
// event recorder and the memory they share. Each of the four reconcilers embeds them, so the
// phases the kinds share take them as one value, their receiver, rather than as a list of
// parameters.
type Dependencies struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
	// Redis is the pool of clients of every Redis and sentinel node, and of their evictions.
	Redis *redis.Pool
	// RedisNodes, when set, hands out the nodes the phases that take a RedisNode talk to,
	// in place of Redis's clients: unit tests give a fake here (redis_nodes.go).
	RedisNodes RedisDialer
	// SecretWatch reports changes of the Secrets the resources name; nil watches them
	// through the manager's cache (which must then hold them).
	SecretWatch *SecretWatch
	// Liveness PINGs the resources' pods between reconciles and brings back a resource one of
	// whose pods stops answering or answers again; nil: only the periodic health check does.
	Liveness *liveness.Watcher
	// Memory is what the operator remembers between reconciles, shared by its reconcilers
	// (NewMemory); SetupWithManager refuses a reconciler without one.
	Memory *Memory
	// Applier writes the objects the resources own with server-side apply, shared by the
	// reconcilers (apply.NewApplier); SetupWithManager refuses a reconciler without one.
	Applier *apply.Applier
	// OperatorImage is the image the operator runs (--operator-image): a restore's init
	// container runs its binary. Empty: restores are refused.
	OperatorImage string
}
