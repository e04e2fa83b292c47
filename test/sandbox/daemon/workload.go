package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rediskube/redis-operator/test/sandbox/fault"
)

// restartWorkload deletes every pod of a workload at the same moment, each with its own
// grace period, and returns their names.
func restartWorkload(ctx context.Context, client kubernetes.Interface, ref fault.WorkloadRef) ([]string, error) {
	var selector *metav1.LabelSelector
	switch strings.ToLower(ref.Kind) {
	case "statefulset", "sts":
		o, err := client.AppsV1().StatefulSets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		selector = o.Spec.Selector
	case "deployment", "deploy":
		o, err := client.AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		selector = o.Spec.Selector
	case "replicaset", "rs":
		o, err := client.AppsV1().ReplicaSets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		selector = o.Spec.Selector
	case "daemonset", "ds":
		o, err := client.AppsV1().DaemonSets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		selector = o.Spec.Selector
	default:
		return nil, fmt.Errorf("unsupported workload kind %q (statefulset, deployment, replicaset, daemonset)", ref.Kind)
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, err
	}
	pods, err := client.CoreV1().Pods(ref.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		names []string
		errs  []error
	)
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				Preconditions: metav1.NewUIDPreconditions(string(p.UID)),
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			names = append(names, p.Name)
		}()
	}
	wg.Wait()
	return names, errors.Join(errs...)
}
