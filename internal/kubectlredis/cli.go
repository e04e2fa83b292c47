package kubectlredis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rediskube/redis-operator/api/v1beta2"
	"github.com/rediskube/redis-operator/internal/version"
)

// Usage is the plugin's help.
const Usage = `kubectl redis: look at and act on Redis, RedisCluster, RedisReplication and RedisSentinel resources.

Usage:
  kubectl redis status NAME [--kind KIND] [-n NAMESPACE]
      Per pod: role, the master it follows, slot ranges, keys, memory, replication offset and
      lag, link state and node; then the conditions and the last events. Redis is reached
      through the API server (port-forward), with the resource's password.
  kubectl redis failover NAME [POD] [--kind KIND] [-n NAMESPACE]
      Ask the operator for a safe failover by annotating the resource with
      ` + FailoverAnnotation + `: to POD, or for a RedisReplication without POD to the replica
      holding the most; for a RedisCluster POD is a replica, or a master whose best replica
      takes its shard over. The operator fails over only to a replica in sync, then removes
      the annotation; the Failover condition says why it refuses.
  kubectl redis version
      The plugin's version and the commit it was built from.

Flags:
  -n, --namespace NAMESPACE   namespace of the resource (default: the kubeconfig context's)
  --kind KIND                 Redis, RedisCluster, RedisReplication or RedisSentinel, when a name is ambiguous
  --kubeconfig FILE           kubeconfig file (default: KUBECONFIG, then ~/.kube/config)
  --context NAME              kubeconfig context
`

type invocation struct {
	command, kind, namespace, kubeconfig, context string
	args                                          []string
}

// parseArgs accepts flags before, between and after the arguments, as kubectl does.
func parseArgs(args []string) (invocation, error) {
	var inv invocation
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		var target *string
		switch name {
		case "-n", "--namespace":
			target = &inv.namespace
		case "--kind":
			target = &inv.kind
		case "--kubeconfig":
			target = &inv.kubeconfig
		case "--context":
			target = &inv.context
		case "-h", "--help", "help":
			return invocation{command: "help"}, nil
		default:
			if strings.HasPrefix(a, "-") {
				return inv, fmt.Errorf("unknown flag %s", a)
			}
			positional = append(positional, a)
			continue
		}
		if !hasValue {
			rest := args[i+1:]
			if len(rest) == 0 {
				return inv, fmt.Errorf("flag %s needs a value", name)
			}
			value = rest[0]
			i++
		}
		*target = value
	}
	if len(positional) == 0 {
		return invocation{command: "help"}, nil
	}
	inv.command, inv.args = positional[0], positional[1:]
	return inv, nil
}

// Run runs the plugin with the arguments after "kubectl redis".
func Run(ctx context.Context, args []string, out io.Writer) error {
	inv, err := parseArgs(args)
	if err != nil {
		return err
	}
	switch inv.command {
	case "help":
		_, err := io.WriteString(out, Usage)
		return err
	case "version":
		// Answered without a kubeconfig: it says which build this is, nothing about a cluster.
		_, err := fmt.Fprintln(out, version.String("kubectl-redis"))
		return err
	}
	plugin, err := connect(inv, out)
	if err != nil {
		return err
	}
	switch inv.command {
	case "status":
		if len(inv.args) != 1 {
			return errors.New("usage: kubectl redis status NAME")
		}
		return plugin.Status(ctx, inv.args[0], inv.kind)
	case "failover":
		if len(inv.args) < 1 || len(inv.args) > 2 {
			return errors.New("usage: kubectl redis failover NAME [POD]")
		}
		pod := ""
		if len(inv.args) == 2 {
			pod = inv.args[1]
		}
		return plugin.Failover(ctx, inv.args[0], inv.kind, pod)
	}
	return fmt.Errorf("unknown command %q (status, failover, version)", inv.command)
}

func connect(inv invocation, out io.Writer) (Plugin, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = inv.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: inv.context})
	config, err := loader.ClientConfig()
	if err != nil {
		return Plugin{}, fmt.Errorf("kubeconfig: %w", err)
	}
	namespace := inv.namespace
	if namespace == "" {
		if namespace, _, err = loader.Namespace(); err != nil {
			return Plugin{}, fmt.Errorf("kubeconfig namespace: %w", err)
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return Plugin{}, err
	}
	if err := v1beta2.AddToScheme(scheme); err != nil {
		return Plugin{}, err
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return Plugin{}, err
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return Plugin{}, err
	}
	return Plugin{Config: config, Kube: kube, Client: c, Namespace: namespace, Out: out}, nil
}
