// Package kubectlredis is the logic of the kubectl-redis plugin: it lists the Redis resources
// of the four kinds with their health, finds one by name, reaches each of its pods through the
// API server's port-forward (never exec), asks Redis with the operator's typed client
// (internal/redis) and prints what each pod is, followed by the resource's conditions and last
// events. It asks the operator for a failover, or to hold off a resource, by annotating it.
// Every command's arguments and flags are checked before any API call.
package kubectlredis
