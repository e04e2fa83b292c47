//go:build tools

// Package tools pins the control-plane binaries that the tests and the sandbox run.
// They are built from source (there is no download of prebuilt binaries here),
// once, into the git-ignored bin/ folder of the repository.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
