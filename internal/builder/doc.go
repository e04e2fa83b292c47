// Package builder turns a resolved custom resource into the Kubernetes objects the operator
// wants to exist: StatefulSets, Services, PodDisruptionBudgets, the ConfigMap holding the
// rendered redis.conf or sentinel.conf, and the Secret holding the password directives.
//
// Builders are pure: a resolved input (the CR plus the values a controller had to read from
// elsewhere, such as the password) goes in, desired objects come out. No client, no context,
// no I/O, and the same input always yields byte-identical output, so a controller can compare
// and apply it without churn. Every object carries a controller reference to the CR.
//
// # Secrets
//
// The Redis password never appears in a container's command, args or plain env value, nor in a
// ConfigMap. The rendered redis.conf ends with
//
//	include /etc/redis/secret/redis-password.conf
//
// and that file comes from a Secret the builder renders (AuthSecretName, key RedisAuthKey,
// content "requirepass ..." and "masterauth ..."), projected into the pod beside redis.conf.
// Sentinels get the same treatment with SentinelAuthKey ("requirepass ..." and
// "sentinel auth-pass ..."). Only the exporter sidecar sees the password as an environment
// variable, and only through a secretKeyRef to the user's own Secret.
//
// # Defaults
//
// Every default (ports, pull policy, probes, replica counts, service options, sentinel
// settings) is decided in defaults.go, nowhere else.
package builder
