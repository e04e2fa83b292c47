package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rediskube/redis-operator/test/sandbox/instance"
	"github.com/rediskube/redis-operator/test/sandbox/registry"
)

// push sends a release's image layout and charts to the sandbox's registry: the nodes then
// pull the image and run it from its layers, and helm installs the charts from
// oci://<registry>/charts.
func push(args []string) error {
	var c common
	fs := newFlags("push", &c)
	repository := fs.String("repository", "redis-operator", "repository to push the image layout to on the sandbox's registry")
	charts := fs.String("charts", "", "folder of packaged charts (make release's dist/charts) to push as OCI artifacts under charts/")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 || (fs.NArg() == 0 && *charts == "") {
		return errors.New("usage: sandbox push [--dir D] [--repository R] [--charts DIR] [LAYOUT] (an OCI image layout, such as dist/image)")
	}
	inst, err := instance.Load(c.dir)
	if err != nil {
		return err
	}
	if err := hasRegistry(inst); err != nil {
		return err
	}
	var refs []string
	if fs.NArg() == 1 {
		if refs, err = pushLayout(inst, fs.Arg(0), *repository); err != nil {
			return err
		}
	}
	if *charts != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		pushed, err := registry.PushCharts(ctx, *charts, inst.Registry, "charts")
		refs = append(refs, pushed...)
		if err != nil {
			return err
		}
	}
	for _, r := range refs {
		fmt.Println(r)
	}
	return nil
}

func pushLayout(inst instance.Instance, layout, repository string) ([]string, error) {
	if err := hasRegistry(inst); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(layout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return registry.PushLayout(ctx, abs, inst.Registry, repository)
}

func hasRegistry(inst instance.Instance) error {
	if inst.Registry == "" {
		return fmt.Errorf("the sandbox in %s runs no registry (start it with `sandbox up --registry`)", inst.Dir)
	}
	return nil
}
