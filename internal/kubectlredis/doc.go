// Package kubectlredis is the logic of the kubectl-redis plugin: it finds a Redis resource of
// any of the four kinds, reaches each of its pods through the API server's port-forward (never
// exec), asks Redis with the operator's typed client (internal/redis) and prints what each pod
// is, followed by the resource's conditions and last events. It also asks the operator for a
// failover by annotating the resource.
package kubectlredis
