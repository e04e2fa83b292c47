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

// push sends a release's image layout to the sandbox's registry, whose references the
// nodes then pull and run from the image's layers.
func push(args []string) error {
	var c common
	fs := newFlags("push", &c)
	repository := fs.String("repository", "redis-operator", "repository to push to on the sandbox's registry")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: sandbox push [--dir D] [--repository R] LAYOUT (an OCI image layout, such as dist/image)")
	}
	inst, err := instance.Load(c.dir)
	if err != nil {
		return err
	}
	refs, err := pushLayout(inst, fs.Arg(0), *repository)
	if err != nil {
		return err
	}
	for _, r := range refs {
		fmt.Println(r)
	}
	return nil
}

func pushLayout(inst instance.Instance, layout, repository string) ([]string, error) {
	if inst.Registry == "" {
		return nil, fmt.Errorf("the sandbox in %s runs no registry (start it with `sandbox up --registry`)", inst.Dir)
	}
	abs, err := filepath.Abs(layout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return registry.PushLayout(ctx, abs, inst.Registry, repository)
}
