package dns

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ServiceName is the cluster DNS Service in kube-system, named as on kubeadm clusters.
const ServiceName = "kube-dns"

// managedBy marks the EndpointSlice the sandbox writes for it.
const managedBy = "rediskube-sandbox"

// PublishService creates the kube-system/kube-dns Service with ClusterIP serviceIP and an
// EndpointSlice pointing at server, where Serve listens: pods' resolv.conf names the
// ClusterIP, and kube-proxy carries their queries to the server.
func PublishService(ctx context.Context, client kubernetes.Interface, serviceIP, server netip.Addr) error {
	lbls := map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "KubeDNS"}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceSystem, Labels: lbls},
		Spec: corev1.ServiceSpec{
			ClusterIP: serviceIP.String(),
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: udp},
				{Name: "dns-tcp", Port: 53, Protocol: tcp},
			},
		},
	}
	if _, err := client.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the %s Service: %w", ServiceName, err)
	}
	ready := true
	port := int32(53)
	dnsName, tcpName := "dns", "dns-tcp"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ServiceName,
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: managedBy},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{server.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: &dnsName, Port: &port, Protocol: &udp},
			{Name: &tcpName, Port: &port, Protocol: &tcp},
		},
	}
	slices := client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem)
	_, err := slices.Create(ctx, slice, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *discoveryv1.EndpointSlice
		if cur, err = slices.Get(ctx, slice.Name, metav1.GetOptions{}); err == nil {
			slice.ResourceVersion = cur.ResourceVersion
			_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("publish the endpoints of %s: %w", ServiceName, err)
	}
	return nil
}
