package kubectlredis

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// forwarder opens port-forwards to pods through the API server.
type forwarder struct {
	config *rest.Config
	kube   kubernetes.Interface
}

// forward listens on a free loopback port that reaches port of the pod, until stop is called.
func (f forwarder) forward(ctx context.Context, namespace, pod string, port int) (local int, stop func(), err error) {
	transport, upgrader, err := spdy.RoundTripperFor(f.config)
	if err != nil {
		return 0, nil, fmt.Errorf("port-forward to %s: %w", pod, err)
	}
	url := f.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	var errOut bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stopCh, readyCh, io.Discard, &errOut)
	if err != nil {
		return 0, nil, fmt.Errorf("port-forward to %s: %w", pod, err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-readyCh:
	case err := <-done:
		return 0, nil, fmt.Errorf("port-forward to %s: %w %s", pod, err, errOut.String())
	case <-ctx.Done():
		close(stopCh)
		return 0, nil, fmt.Errorf("port-forward to %s: %w", pod, ctx.Err())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stopCh)
		return 0, nil, fmt.Errorf("port-forward to %s: no local port: %w", pod, err)
	}
	return int(ports[0].Local), func() { close(stopCh) }, nil
}
