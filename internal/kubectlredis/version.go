package kubectlredis

import (
	"context"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rediskube/redis-operator/internal/version"
)

// operatorSelector finds the operator's Deployment, as both the kustomize manifests and the
// chart label it.
const operatorSelector = "app.kubernetes.io/name=redis-operator"

// operatorVersionLabel is set by the chart (the chart's appVersion).
const operatorVersionLabel = "app.kubernetes.io/version"

func runVersion(ctx context.Context, inv invocation, connect func() (Plugin, error), out io.Writer) error {
	// The plugin's line comes first and needs no kubeconfig: it says which build this is.
	if _, err := fmt.Fprintln(out, version.String("kubectl-redis")); err != nil {
		return err
	}
	if inv.set("client") {
		return nil
	}
	p, err := connect()
	if err != nil {
		return fmt.Errorf("operator version: %w (--client for the plugin's alone)", err)
	}
	return p.OperatorVersions(ctx, version.Version)
}

// OperatorVersions prints the version of each operator Deployment and warns of a skew with
// the plugin's version.
func (p Plugin) OperatorVersions(ctx context.Context, pluginVersion string) error {
	list, err := p.Kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
	if err != nil {
		return fmt.Errorf("list operator Deployments: %w", err)
	}
	if len(list.Items) == 0 {
		_, err := fmt.Fprintf(p.Out, "operator: no Deployment labelled %s in any namespace\n", operatorSelector)
		return err
	}
	var b strings.Builder
	for i := range list.Items {
		d := &list.Items[i]
		v := operatorVersion(d)
		fmt.Fprintf(&b, "operator %s/%s: %s\n", d.Namespace, d.Name, dash(v))
		if w := skewWarning(pluginVersion, v); w != "" {
			fmt.Fprintf(&b, "WARNING: %s\n", w)
		}
	}
	_, err = io.WriteString(p.Out, b.String())
	return err
}

// operatorVersion is the chart's version label, else the tag of the manager's image ("" when
// the image is pinned by digest alone).
func operatorVersion(d *appsv1.Deployment) string {
	if v := d.Labels[operatorVersionLabel]; v != "" {
		return strings.TrimPrefix(v, "v")
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != "manager" && len(d.Spec.Template.Spec.Containers) > 1 {
			continue
		}
		image, _, _ := strings.Cut(c.Image, "@")
		if i := strings.LastIndex(image, ":"); i >= 0 && !strings.Contains(image[i:], "/") {
			return strings.TrimPrefix(image[i+1:], "v")
		}
	}
	return ""
}

// skewWarning says why a plugin and an operator of these versions may not understand each
// other: another major or minor version (the annotations and conditions the plugin reads and
// writes change between minors), or a build that is not a release.
func skewWarning(plugin, operator string) string {
	switch {
	case operator == "":
		return "the operator's version is unknown: the plugin cannot tell whether it honours what it asks"
	case plugin == "dev" || operator == "dev":
		return fmt.Sprintf("plugin %s and operator %s: a development build, versions not comparable", plugin, operator)
	}
	if minorOf(plugin) != minorOf(operator) {
		return fmt.Sprintf("plugin %s and operator %s differ in minor version: use the plugin of the operator's release", plugin, operator)
	}
	return ""
}

// minorOf is "MAJOR.MINOR" of a version "MAJOR.MINOR.PATCH[-pre]".
func minorOf(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}
